"""The run without pytest: KprRun driven by a PlainHost on the fake cluster, from provisioning to cleanup.

The plugin is one host of the run (plugin.session.PytestHost); these tests are another, so the run's lifecycle is shown to
need nothing from pytest: its progress, its exit and its provider all come through the host."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_kpr.run.run import EXIT_PROVISIONING, EXIT_UNAVAILABLE, KprRun, PlainHost, RunEnded
from pytest_kpr.run.settings import ProviderName, resolve
from pytest_kpr.testing import FakeCluster, FakeConfig
from pytest_kpr.testing.provider import FakeProvider

REPO = Path(__file__).resolve().parents[2]


def _settings(tmp_path: Path, **cli: object):
    s = resolve({"kpr_provider": "fake", "kpr_artifacts": str(tmp_path / "artifacts"), **{f"kpr_{k}": v for k, v in cli.items()}},
                lambda key: "", REPO)
    assert s.provider is ProviderName.FAKE
    return s


def _run(tmp_path: Path, provider: FakeProvider | None = None, **cli: object) -> tuple[KprRun, PlainHost]:
    s = _settings(tmp_path, **cli)
    host = PlainHost(REPO, provider or FakeProvider(FakeCluster(FakeConfig(cilium_version=s.cilium_version))), ["-m", "kpr"])
    return KprRun(s, host), host


def test_a_run_provisions_reads_the_facts_and_cleans_up_without_pytest(tmp_path: Path) -> None:
    run, host = _run(tmp_path)
    run.start()
    try:
        assert run.facts is not None and run.handle is not None
        ns = run.ownership.create_namespace("practice")
        assert run.handle.kube.get("Namespace", ns) is not None and ns in run.ownership.namespaces
        record = json.loads((run.evidence_dir / "cluster.json").read_text())
        assert record["run"]["arguments"] == ["-m", "kpr"] and record["cilium_version"] == run.facts.cilium_version
        assert any("waiting for the Cilium datapath" in line for line in host.lines), host.lines
    finally:
        run.stop()
    assert run.handle.kube.get("Namespace", ns) is None, "the run's namespace outlived the run"
    phases = [p["phase"] for p in json.loads((run.evidence_dir / "cluster.json").read_text())["phases"]]
    assert phases[-1] == "cleanup" and "suites" in phases


def test_a_run_that_cannot_start_ends_through_its_host_with_one_line(tmp_path: Path) -> None:
    provider = FakeProvider(FakeCluster(FakeConfig()), unavailable="docker: not found")
    run, host = _run(tmp_path, provider)
    with pytest.raises(RunEnded) as ended:
        run.start()
    assert ended.value.returncode == EXIT_UNAVAILABLE
    assert host.lines[-1] == str(ended.value) and run.exit_shown == str(ended.value)
    assert "docker: not found" in "\n".join(host.lines)


def test_a_profile_that_did_not_take_stops_the_run_and_it_cleans_up(tmp_path: Path) -> None:
    """The host's exit comes after the run's own cleanup: the provider was torn down before the run ended."""
    s = _settings(tmp_path, profile="maglev")
    provider = FakeProvider(FakeCluster(FakeConfig(cilium_version=s.cilium_version)))  # the default profile's cluster
    run = KprRun(s, host := PlainHost(REPO, provider))
    with pytest.raises(RunEnded) as ended:
        run.start()
    assert ended.value.returncode == EXIT_PROVISIONING and "maglev" in str(ended.value), host.lines
    assert provider.events[-1] == "teardown", f"the cluster was left behind after the run ended: {provider.events}"


def test_the_run_package_never_loads_pytest() -> None:
    code = "import sys, pytest_kpr.run.run; sys.exit(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest')) != [])"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0, "importing pytest_kpr.run.run loads pytest"


def test_a_node_below_the_profiles_kernel_floor_stops_the_run_naming_it(tmp_path: Path) -> None:
    """The netkit profile needs kernel 6.8 (clusters/kernels.yaml profile_floors): a 6.6 cluster that otherwise shows the
    profile's promises is refused before the suites, one line per node."""
    s = _settings(tmp_path, profile="netkit")
    cluster = FakeCluster(FakeConfig(cilium_version=s.cilium_version, kernel="6.6.30", datapath_mode="netkit", routing_mode="Native"))
    run = KprRun(s, host := PlainHost(REPO, FakeProvider(cluster)))
    with pytest.raises(RunEnded) as ended:
        run.start()
    assert ended.value.returncode == EXIT_PROVISIONING, host.lines
    assert "node fake-control-plane runs kernel 6.6.30, below the netkit profile's floor 6.8" in str(ended.value)
    ok = KprRun(_settings(tmp_path / "ok", profile="netkit"), PlainHost(REPO, FakeProvider(FakeCluster(FakeConfig(
        cilium_version=s.cilium_version, kernel="6.8.0-49-generic", datapath_mode="netkit", routing_mode="Native")))))
    ok.start()
    try:
        assert ok.facts is not None and ok.facts.datapath_mode == "netkit"
    finally:
        ok.stop()


@pytest.mark.parametrize(("profile", "words"), [
    ("netkit", "the profile 'netkit' promises datapath_mode 'netkit', but the agents report 'veth'"),
    ("xdp", "the profile 'xdp' promises xdp_acceleration 'Native', but the agents report 'Disabled'"),
])
def test_a_netkit_or_xdp_profile_that_did_not_take_stops_the_run(tmp_path: Path, profile: str, words: str) -> None:
    """The cluster came up with the chart's defaults (veth, no acceleration) although the profile was asked for."""
    s = _settings(tmp_path, profile=profile)
    provider = FakeProvider(FakeCluster(FakeConfig(cilium_version=s.cilium_version, routing_mode="Native")))
    with pytest.raises(RunEnded) as ended:
        KprRun(s, PlainHost(REPO, provider)).start()
    assert ended.value.returncode == EXIT_PROVISIONING and words in str(ended.value), str(ended.value)
    assert f"clusters/profiles/{profile}.yaml did not take effect" in str(ended.value)


def test_the_header_names_a_netkit_device_mode_and_xdp_acceleration(tmp_path: Path) -> None:
    """The collection header says what the netkit and xdp profiles change, and nothing for veth and no acceleration."""
    for cfg, words, absent in ((dict(datapath_mode="netkit", acceleration="Native", routing_mode="Native"),
                                ("NodePort SNAT (XDP Native), routing Native", "devices netkit, "), ()),
                               (dict(), ("NodePort SNAT, routing Tunnel, attach tcx, IPv4",), ("devices", "XDP"))):
        s = _settings(tmp_path / str(len(words)))
        run = KprRun(s, PlainHost(REPO, FakeProvider(FakeCluster(FakeConfig(cilium_version=s.cilium_version, **cfg)))))
        run.start()
        try:
            assert run.facts is not None
            line = run.facts.header_lines()[1]
            assert all(w in line for w in words) and not any(a in line for a in absent), line
        finally:
            run.stop()
