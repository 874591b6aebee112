"""The kind provider with stub kind/helm/kubectl/docker executables: what is passed, what is cleaned up,
what happens when something is missing. The runs happen without network (an empty network namespace
when root, and a socket guard always), which proves nothing is downloaded."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from stubs import calls, install_stubs

REPO = Path(__file__).resolve().parents[2]

INNER_CONFTEST = """
import socket
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig

ATTEMPTS = []
_orig_connect = socket.socket.connect

def _guard(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        ATTEMPTS.append(address)
        raise OSError("network use in an offline test: %r" % (address,))
    return _orig_connect(self, address)

socket.socket.connect = _guard

def pytest_kpr_kube_client(config, kubeconfig, context):
    # the stub kind wrote a kubeconfig; the API behind it is an in-memory cluster with Cilium
    assert kubeconfig is not None and kubeconfig.read_text().startswith("apiVersion: v1")
    return FakeCluster(FakeConfig(name=config.getoption("kpr_cluster_name") or "kpr"))

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    import pathlib
    pathlib.Path("network-attempts.txt").write_text(repr(ATTEMPTS))
"""

SUITE = """
import pytest
pytestmark = pytest.mark.kpr

def test_cluster(kpr_facts):
    assert kpr_facts.cluster == "kpr-stub"
    assert [n.name for n in kpr_facts.nodes] == ["kpr-stub-control-plane", "kpr-stub-worker", "kpr-stub-worker2"]
"""


@pytest.fixture
def stubbed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    stub_dir = tmp_path / "stub"
    stub_dir.mkdir()
    install_stubs(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("KPR_STUB_DIR", str(stub_dir))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    return stub_dir


def run_offline(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``python -m pytest -m kpr ARGS`` in a subprocess, in a new empty network namespace when possible."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-m", "kpr", *args]
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    if os.geteuid() == 0 and unshare:
        cmd = [unshare, "--net", *cmd]
    result = pytester.run(*cmd, timeout=120)
    attempts = (pytester.path / "network-attempts.txt")
    if attempts.exists():
        assert attempts.read_text() == "[]", f"the run tried to use the network: {attempts.read_text()}"
    return result


def test_kind_cluster_is_created_from_the_repo_config_then_deleted(pytester: pytest.Pytester, stubbed: Path) -> None:
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", "-s")
    result.assert_outcomes(passed=1)
    kind = calls(stubbed, "kind")
    create = next(c for c in kind if c[:2] == ["create", "cluster"])
    assert "--name=kpr-stub" in create
    own = (pytester.path / "kpr-artifacts" / "latest").resolve()  # the run's own directory (runs are kept apart)
    assert any(a == f"--kubeconfig={own / '.kind' / 'kpr-stub' / 'kubeconfig'}" for a in create), create
    image = next(a for a in create if a.startswith("--image="))
    assert "@sha256:" in image, "the node image is pinned by digest"
    assert create[create.index("--config") + 1] == str(REPO / "clusters/kind/kpr.yaml")
    config = yaml.safe_load((stubbed / "kind-config-used.yaml").read_text())
    assert [n["role"] for n in config["nodes"]] == ["control-plane", "worker", "worker"]
    assert config["networking"]["disableDefaultCNI"] is True
    assert config["networking"]["kubeProxyMode"] == "none"
    assert "--wait" not in " ".join(create) or "--wait=0s" in create, "no waiting for Ready before the CNI exists"
    assert kind[-1][:2] == ["delete", "cluster"] and "--name=kpr-stub" in kind[-1]
    result.stdout.fnmatch_lines(["[[]kpr[]] creating kind cluster kpr-stub *", "[[]kpr[]] installing Cilium 1.20.5 (cilium/cilium) with helm"])


def test_helm_installs_cilium_with_kpr_values_for_the_requested_version(pytester: pytest.Pytester, stubbed: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("loadBalancer:\n  algorithm: maglev\n")
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", "--kpr-cilium-version=1.19.8", f"--kpr-helm-values={extra}")
    result.assert_outcomes(passed=1)
    show, helm = calls(stubbed, "helm")
    assert show == ["show", "chart", "cilium/cilium", "--version", "1.19.8"], "the version is asked about in the preflight"
    assert helm[:8] == ["upgrade", "--install", "cilium", "cilium/cilium", "--version", "1.19.8", "--namespace", "kube-system"]
    values = [helm[i + 1] for i, a in enumerate(helm) if a == "--values"]
    assert values == [str(REPO / "clusters/cilium/values-kpr.yaml"), str(REPO / "clusters/cilium/values-1.19.yaml"),
                      str(REPO / "clusters/profiles/default.yaml"), str(extra)]
    assert helm[helm.index("--set") + 1] == "k8sServiceHost=kpr-stub-control-plane"
    assert helm[helm.index("--kubeconfig") + 1] == str((pytester.path / "kpr-artifacts" / "latest").resolve() / ".kind" / "kpr-stub" / "kubeconfig")
    merged: dict = {}
    for f in values:
        merged.update(yaml.safe_load(Path(f).read_text()) or {})
    assert merged["kubeProxyReplacement"] == "true"
    assert merged["k8sServicePort"] == 6443
    assert merged["ipam"] == {"mode": "kubernetes"}
    assert merged["loadBalancer"] == {"algorithm": "maglev"}, "the user's file is applied last"


def test_kept_cluster_is_not_deleted(pytester: pytest.Pytester, stubbed: Path) -> None:
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", "--kpr-keep-cluster", "-s")
    result.assert_outcomes(passed=1)
    assert not [c for c in calls(stubbed, "kind") if c[:2] == ["delete", "cluster"]]
    result.stdout.fnmatch_lines(["[[]kpr[]] keeping kind cluster kpr-stub (--kpr-keep-cluster); delete it with: kind delete cluster --name kpr-stub"])


def test_a_cluster_it_did_not_create_is_refused_unless_reuse_is_asked(pytester: pytest.Pytester, stubbed: Path) -> None:
    (stubbed / "clusters").write_text("kpr-stub\n")
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*a kind cluster named kpr-stub already exists and was not created by this run; pass --kpr-reuse-cluster*"])
    assert not [c for c in calls(stubbed, "kind") if c[0] in ("create", "delete")]

    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", "--kpr-reuse-cluster")
    result.assert_outcomes(passed=1)
    kind = calls(stubbed, "kind")
    assert any(c[:2] == ["export", "kubeconfig"] for c in kind)
    assert not [c for c in kind if c[0] in ("create", "delete")], "a reused cluster is never deleted"


@pytest.mark.parametrize("missing", ["kind", "helm", "kubectl", "docker"])
def test_a_missing_tool_is_one_clear_line(pytester: pytest.Pytester, stubbed: Path, tmp_path: Path, missing: str) -> None:
    (tmp_path / "bin" / missing).unlink()
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub")
    assert result.ret == 4
    out = result.stdout.str()
    assert f"[kpr]   - {missing} not found on PATH" in out
    assert "pytest-kpr: cannot run the kpr suites here (1 problem above)" in out
    assert "Traceback" not in out + result.stderr.str()
    assert not calls(stubbed, "kind") or missing != "kind"


def test_no_docker_daemon_is_one_clear_line(pytester: pytest.Pytester, stubbed: Path) -> None:
    (stubbed / "docker-down").touch()
    result = run_offline(pytester)
    assert result.ret == 4
    result.stdout.fnmatch_lines(
        ["[[]kpr[]] * kpr test* selected, but this machine cannot run them (exit status 4;*",
         "[[]kpr[]]   - no Docker daemon answers (`docker info`: Cannot connect to the Docker daemon*",
         "*pytest-kpr: cannot run the kpr suites here (1 problem above)*"]
    )
    assert not calls(stubbed, "kind")


def test_binary_options_point_at_tools_outside_path(pytester: pytest.Pytester, stubbed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.move(str(tmp_path / "bin" / "kind"), other / "kind")
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", f"--kpr-kind-bin={other / 'kind'}")
    result.assert_outcomes(passed=1)
    assert calls(stubbed, "kind")


def test_pytest_kind_is_wrapped_so_it_cannot_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_kpr.cluster.kind import _kind_cluster_class
    from pytest_kpr.cluster.tools import Tool
    from pytest_kpr.core.errors import Unavailable

    monkeypatch.chdir(tmp_path)
    cls = _kind_cluster_class()
    c = cls("x", tmp_path / "state", Tool("kind", str(tmp_path / "no-kind")), Tool("kubectl", str(tmp_path / "no-kubectl")), None)
    with pytest.raises(Unavailable, match="never downloads"):
        c.ensure_kind()
    with pytest.raises(Unavailable, match="never downloads"):
        c.ensure_kubectl()
    assert not (tmp_path / ".pytest-kind").exists(), "no state in the current directory"
    assert c.kubeconfig_path == tmp_path / "state" / "kubeconfig"


def test_probe_image_is_loaded_into_the_nodes(pytester: pytest.Pytester, stubbed: Path) -> None:
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", "--kpr-probe-image=probe:dev")
    result.assert_outcomes(passed=1)
    assert ["image", "inspect", "--format", "{{.Id}}", "probe:dev"] in calls(stubbed, "docker")
    assert ["load", "docker-image", "--name", "kpr-stub", "probe:dev"] in calls(stubbed, "kind")


def test_a_published_probe_image_reaches_kind_as_this_platform_alone(pytester: pytest.Pytester, stubbed: Path) -> None:
    """A digest-pinned image (a multi-platform index) is pulled for this platform, saved as this platform alone and loaded
    as an archive: `kind load docker-image` of it fails under Docker's containerd image store (kind#3795)."""
    from pytest_kpr.cluster.kind import node_platform

    (stubbed / "no-probe-image").touch()  # not built here: the preflight pulls it
    image = "ghcr.io/pytest-kpr/pytest-kpr/probe:0.1.0@sha256:" + "ab" * 32
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", f"--kpr-probe-image={image}")
    result.assert_outcomes(passed=1)
    docker, kind = calls(stubbed, "docker"), calls(stubbed, "kind")
    assert ["pull", "--platform", node_platform(), image] in docker
    save = next(c for c in docker if c[:2] == ["image", "save"])
    assert save[2:4] == ["--platform", node_platform()] and save[-1] == image
    load = next(c for c in kind if c[:1] == ["load"])
    assert load[:4] == ["load", "image-archive", "--name", "kpr-stub"] and load[4] == save[save.index("-o") + 1]
    assert not any(c[:2] == ["load", "docker-image"] for c in kind)


def test_a_missing_probe_image_is_one_clear_line_before_any_cluster_is_made(pytester: pytest.Pytester, stubbed: Path) -> None:
    (stubbed / "no-probe-image").touch()
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*probe image pytest-kpr-probe:* is not in the local Docker: build it with `kpr probe-image build`*"])
    assert not calls(stubbed, "kind")


def test_an_unknown_cilium_version_is_refused_before_any_cluster_exists(pytester: pytest.Pytester, stubbed: Path) -> None:
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", "--kpr-cilium-version=1.99.0")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*the chart cilium/cilium has no version 1.99.0 (`helm show chart cilium/cilium --version 1.99.0`: Error: chart "
                                 "\"cilium\" matching 1.99.0 not found in cilium index*"])
    assert not calls(stubbed, "kind"), "nothing was created"


def test_every_missing_piece_is_reported_in_one_round(pytester: pytest.Pytester, stubbed: Path) -> None:
    """The probe image, the chart repository and the version are all asked about, not one per run."""
    (stubbed / "no-probe-image").touch()
    (stubbed / "helm-no-repo").touch()
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*probe image pytest-kpr-probe:* is not in the local Docker*",
                                 "*helm knows no repository 'cilium' for the chart cilium/cilium: `helm repo add cilium https://helm.cilium.io`*",
                                 "*pytest-kpr: cannot run the kpr suites here (2 problems above)*"])


def test_a_failed_run_exports_the_kind_logs_before_the_cluster_is_deleted(pytester: pytest.Pytester, stubbed: Path) -> None:
    pytester.makepyfile(test_suite=SUITE.replace('== "kpr-stub"', '== "another cluster"'))
    result = run_offline(pytester, "--kpr-cluster-name=kpr-stub", "-s")
    result.assert_outcomes(failed=1)
    kind = [c[:2] for c in calls(stubbed, "kind")]
    assert kind.index(["export", "logs"]) < kind.index(["delete", "cluster"]), kind
    export = next(c for c in calls(stubbed, "kind") if c[:2] == ["export", "logs"])
    latest = (pytester.path / "kpr-artifacts" / "latest").resolve()  # the run's own directory (runs are kept apart)
    assert export[2] == str(latest / "kpr-stub" / "cluster-logs") and export[3:] == ["--name", "kpr-stub"]
    result.stdout.fnmatch_lines(["[[]kpr[]] the run failed: exporting the kind cluster's logs to *cluster-logs (kind export logs)"])


def test_a_passing_run_exports_no_logs(pytester: pytest.Pytester, stubbed: Path) -> None:
    run_offline(pytester, "--kpr-cluster-name=kpr-stub").assert_outcomes(passed=1)
    assert not [c for c in calls(stubbed, "kind") if c[:2] == ["export", "logs"]]


def test_sigterm_while_kind_creates_the_cluster_ends_kind_and_deletes_the_half_made_cluster(pytester: pytest.Pytester, stubbed: Path) -> None:
    """A CI job cancelled while ``kind create cluster`` runs: kind is ended (nothing of it left running), the half-made
    cluster is deleted, and the run records that SIGTERM ended it."""
    import json
    import signal
    import subprocess
    import time

    (stubbed / "slow-create").touch()
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-m", "kpr", "--kpr-cluster-name=kpr-stub",
           "--kpr-artifacts=art"]
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    if os.geteuid() == 0 and unshare:
        cmd = [unshare, "--net", *cmd]  # unshare execs: the signal reaches pytest itself
    proc = subprocess.Popen(cmd, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (stubbed / "create-started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "kind create never started"
            time.sleep(0.05)
        kind_pid = int((stubbed / "create-started").read_text())
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, out
    try:
        os.kill(kind_pid, 0)
        alive = not open(f"/proc/{kind_pid}/stat").read().split(") ", 1)[1].startswith("Z")
    except (ProcessLookupError, FileNotFoundError):
        alive = False
    if alive:
        os.kill(kind_pid, signal.SIGKILL)
    assert not alive, "kind create outlived the run"
    kind = [c[:2] for c in calls(stubbed, "kind")]
    assert kind.index(["create", "cluster"]) < kind.index(["delete", "cluster"]), kind
    assert not (stubbed / "clusters").read_text().split(), "the half-made cluster is still listed"
    (record,) = (pytester.path / "art").rglob("cluster.json")
    phases = json.loads(record.read_text())["phases"]
    assert any("interrupted" in (p.get("error") or "") for p in phases), phases


@pytest.mark.parametrize(("pull_error", "words"), [
    (None, "is not in the local Docker: build it with `kpr probe-image build`"),
    ('Error response from daemon: Head "https://ghcr.io/v2/o/p/manifests/sha256:ab": unauthorized', "cannot be pulled anonymously"),
    ("Error response from daemon: denied: requested access to the resource is denied", "its registry package is private"),
    ("Error response from daemon: Get \"https://ghcr.io/v2/\": dial tcp: lookup ghcr.io: no such host", "could not be pulled"),
])
def test_a_probe_image_that_cannot_be_had_says_which_step_to_take(pull_error: str | None, words: str) -> None:
    """A caller without a checkout cannot run `make probe-image`: a published image that could not be pulled says whether
    it is the package's visibility (or a login) or the network; a local one names `kpr probe-image build`."""
    from pytest_kpr.cluster.kind import probe_image_problem

    said = probe_image_problem("ghcr.io/o/pytest-kpr-probe@sha256:ab" if pull_error else "pytest-kpr-probe:0.1.0", pull_error)
    assert words in said and "\n" not in said and "make probe-image`" not in said.replace("(or `make probe-image` in a checkout)", "")
