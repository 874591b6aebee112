"""The upgrade procedure Cilium's guide prescribes, as helm and the API see it (stub helm, fake API)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from stubs import calls, install_stubs

from pytest_kpr.cluster import cilium
from pytest_kpr.cluster.tools import Tool
from pytest_kpr.core.errors import ProvisioningError
from pytest_kpr.run.settings import resolve
from pytest_kpr.testing import FakeCluster, FakeConfig
from pytest_kpr.testing.fake import STATIC
from pytest_kpr.core import clock
from pytest_kpr.core.wait import Timeouts

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def helm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Tool, Path]:
    install_stubs(tmp_path / "bin", ("helm",))
    monkeypatch.setenv("KPR_STUB_DIR", str(tmp_path))
    (tmp_path / "helm-values").write_text("kubeProxyReplacement: true\nk8sServiceHost: kpr-control-plane\nk8sServicePort: 6443\n")
    return Tool("helm", str(tmp_path / "bin" / "helm")), tmp_path


def ready_preflight(fake: FakeCluster, ready: int) -> None:
    """What the pre-flight release makes: a DaemonSet (``ready`` of its pods Ready) and a 1-replica Deployment."""
    template = {"metadata": {"labels": {"app": "preflight"}}, "spec": {"containers": [{"name": "check"}]}}
    fake.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": cilium.PREFLIGHT_CHECK, "namespace": "kube-system"},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "preflight"}}, "template": template}})
    # its readiness is the test's to set: the fake's DaemonSet controller leaves an object marked static alone
    fake.create({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": cilium.PREFLIGHT_CHECK, "namespace": "kube-system",
                                                                             "annotations": {STATIC: "true"}},
                 "spec": {"template": template}})
    (ds,) = fake.find("DaemonSet", cilium.PREFLIGHT_CHECK, "kube-system")  # the stored object (get returns a copy)
    ds["status"] = {"numberReady": ready}


def test_preflight_then_helm_upgrade_with_the_saved_values_never_reuse_values(helm: tuple[Tool, Path], tmp_path: Path) -> None:
    tool, stub = helm
    fake = FakeCluster(FakeConfig(cilium_version="1.19.8"))
    ready_preflight(fake, 3)
    settings = resolve({}, lambda k: None, REPO)
    saved = tmp_path / "values-1.19.8.yaml"
    saved.write_text(yaml.safe_dump(cilium.helm_get_values(tool, None)))
    with clock.use(fake.clock):  # the waits on the fake run on its virtual clock: full bounds, no real sleep
        cilium.helm_upgrade(tool, fake, settings.provider_config(), None, "1.19.8", "1.20.2", saved, Timeouts(), lambda line: None)
    got = calls(stub, "helm")
    assert got[0] == ["get", "values", "cilium", "--namespace", "kube-system", "--output", "yaml"]
    pre, uninstall, upgrade = got[1:]
    assert pre == ["install", "cilium-preflight", "cilium/cilium", "--version", "1.20.2", "--namespace", "kube-system",
                   "--set", "preflight.enabled=true", "--set", "agent=false", "--set", "operator.enabled=false",
                   "--set", "k8sServiceHost=kpr-control-plane", "--set", "k8sServicePort=6443"]
    assert uninstall == ["uninstall", "cilium-preflight", "--namespace", "kube-system"]
    assert upgrade[:7] == ["upgrade", "cilium", "cilium/cilium", "--version", "1.20.2", "--namespace", "kube-system"]
    values = [upgrade[i + 1] for i, a in enumerate(upgrade) if a == "--values"]
    assert values == [str(saved), str(REPO / "clusters/cilium/values-1.20.yaml")], "the saved values, then the target minor's"
    assert upgrade[upgrade.index("--set") + 1] == "upgradeCompatibility=1.19"
    assert "--reuse-values" not in upgrade


def test_a_preflight_that_never_gets_ready_stops_before_the_upgrade_and_is_removed(helm: tuple[Tool, Path], tmp_path: Path) -> None:
    tool, stub = helm
    fake = FakeCluster(FakeConfig(cilium_version="1.19.8"))
    ready_preflight(fake, 1)  # 1 of 3 nodes
    saved = tmp_path / "v.yaml"
    saved.write_text("{}\n")
    # the preflight wait runs its full 420 s bound on the fake's virtual clock; the stub helm's own runs keep their real,
    # unscaled bounds (a scaled 0.42 s bound on a subprocess timed out on a loaded machine: scripts/stress_selftests.sh)
    with pytest.raises(Exception, match=r"timed out after 420s waiting for the pre-flight DaemonSet Ready on all 3 agent nodes.*DaemonSet 1/3 Ready"), \
            clock.use(fake.clock):
        cilium.helm_upgrade(tool, fake, resolve({}, lambda k: None, REPO).provider_config(), None, "1.19.8", "1.20.2", saved, Timeouts(),
                            lambda line: None)
    assert [c[0] for c in calls(stub, "helm")] == ["install", "uninstall"], "no helm upgrade; the pre-flight release removed"


def test_a_failed_helm_upgrade_is_one_line(helm: tuple[Tool, Path], tmp_path: Path) -> None:
    tool, stub = helm
    broken = tmp_path / "bin" / "helm-broken"
    broken.write_text("#!/bin/sh\n[ \"$1\" = upgrade ] && { echo 'Error: UPGRADE FAILED: chart requires kubeVersion' >&2; exit 1; }\n"
                      f"exec {tool.path} \"$@\"\n")
    os.chmod(broken, 0o755)
    fake = FakeCluster(FakeConfig(cilium_version="1.19.8"))
    ready_preflight(fake, 3)
    saved = tmp_path / "v.yaml"
    saved.write_text("{}\n")
    with pytest.raises(ProvisioningError, match="helm upgrade of Cilium to 1.20.2 failed: Error: UPGRADE FAILED: chart requires kubeVersion"):
        cilium.helm_upgrade(Tool("helm", str(broken)), fake, resolve({}, lambda k: None, REPO).provider_config(), None, "1.19.8", "1.20.2", saved,
                            Timeouts().scaled(0.01), lambda line: None)
