"""No evidence file holds a planted secret: every writer of the evidence (put_text, Evidence.write, a failure's bundle,
the setup-failure bundle) goes through the recording's filter, and a whole fake run -- a pull Secret applied with
``kubectl apply`` (so repeated in ``last-applied-configuration``) and read through the API -- leaves none of the planted
forms in any file under its artifacts, the compressed recording included."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import planted
from pytest_kpr.evidence.store import Evidence, put_text, write_sections
from pytest_kpr.k8s.api import ExecResult


def _every_byte(root: Path) -> bytes:
    """Every file under ``root``, a gzip inflated."""
    out = b""
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            out += gzip.decompress(data) if p.suffix == ".gz" else data
    return out


def test_put_text_and_evidence_write_and_a_failure_bundle_keep_no_planted_form(tmp_path: Path) -> None:
    put_text(tmp_path / "free.txt", planted.ALL_TEXT)
    ev = Evidence(tmp_path / "ev")
    ev.write("svc.json", {"objects": planted.ALL_OBJECTS, "text": planted.ALL_TEXT})
    write_sections(tmp_path / "failures" / "t", {"node-1: service list": planted.ALL_TEXT, "pods": planted.ALL_TEXT})
    assert len(list(tmp_path.rglob("*.*"))) == 4
    assert planted.found(_every_byte(tmp_path)) == []
    assert json.loads((tmp_path / "ev" / "svc.json").read_text())["objects"][0]["kind"] == "Secret"  # still the evidence


class PlantedCluster:
    """The setup-failure bundle's sources, every one answering with the planted forms: the provider's own view (helm
    values), the Cilium pods (their status, their logs), the events, the agents (an exec that answers, and one that fails)."""

    def diagnostics(self) -> dict[str, str]:
        return {"helm-values.yaml": planted.ALL_TEXT, "helm-status.txt": planted.ALL_TEXT}

    def diagnostics_kube(self) -> "PlantedCluster":
        return self

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[dict[str, Any]]:
        if kind == "Event":
            return [{"type": "Warning", "reason": "Failed", "message": planted.ALL_TEXT, "involvedObject": {"kind": "Pod", "name": "x"}}]
        return [{"kind": "Pod", "metadata": {"name": f"cilium-{n}", "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                                                                   planted.ALL_TEXT}},
                 "spec": {"nodeName": f"node-{n}"}, "status": {"message": planted.ALL_TEXT, "objects": planted.ALL_OBJECTS}}
                for n in ("a", "b")]

    def logs(self, namespace: str, pod: str, container: str | None = None) -> str:
        return planted.ALL_TEXT

    def exec(self, namespace: str, pod: str, argv: Any, container: str | None = None, timeout: float = 60.0) -> ExecResult:
        if pod == "cilium-b":
            raise RuntimeError(f"exec failed: {planted.ALL_TEXT}")
        return ExecResult(tuple(argv), 0, planted.ALL_TEXT, planted.ALL_TEXT, f"pod {pod}")


def test_the_setup_failure_bundle_keeps_no_planted_form(tmp_path: Path) -> None:
    from pytest_kpr.observe.diagnose import setup_bundle

    class Settings:
        no_sysdump = True

    cluster = PlantedCluster()
    files = setup_bundle(cluster, None, Settings(), tmp_path / "setup-failure", 5.0, lambda line: None)
    names = {p.name for p in files}
    assert {"helm-values.yaml", "cilium-pods.yaml", "log-cilium-a.txt", "events-kube-system.txt", "agent-status-node-a.txt",
            "agent-status-node-b.txt"} <= names, names
    assert planted.found(_every_byte(tmp_path)) == []


PULL_SECRET_CONFTEST = """
import json
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

SECRET = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
          "metadata": {"name": "regcred", "namespace": "creds"}, "data": {".dockerconfigjson": %(dockerconfig)r}}
SECRET["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(SECRET)}
FAKE = FakeCluster(FakeConfig(pod_ready_ticks=2))
FAKE.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "creds"}})
FAKE.create(SECRET)
PROVIDER = FakeProvider(FAKE)

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""


def test_a_fake_run_that_copies_a_pull_secret_leaves_it_in_no_file(pytester: pytest.Pytester) -> None:
    """The run reads the Secret (data and its last-applied copy) and writes it into each namespace it makes: the recording,
    cluster.json, results.json and every other file under the artifacts hold neither the data nor the annotation's copy."""
    suites = Path(__file__).resolve().parents[2] / "suites"
    dest = pytester.path / "suites"
    dest.mkdir()
    shutil.copy(suites / "test_headless.py", dest / "test_headless.py")
    pytester.makeconftest(PULL_SECRET_CONFTEST % {"dockerconfig": planted.DOCKERCONFIG})
    result = pytester.runpytest(str(dest), "-m", "kpr", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider", "--import-mode=importlib",
                                "--kpr-timeout-scale=0.05", "--kpr-image-pull-secret=creds/regcred")
    assert result.ret == 0, result.stdout.str()[-2000:]
    data = _every_byte(pytester.path / "artifacts")
    assert b"recording" in b"".join(p.name.encode() for p in (pytester.path / "artifacts").rglob("*"))
    assert planted.DOCKERCONFIG[:20].encode() not in data and planted.found(data) == []


@pytest.mark.parametrize(("provider", "runs"), [("existing", False), ("kind", True)])
def test_cilium_sysdump_never_runs_on_a_cluster_the_run_did_not_create(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        provider: str, runs: bool) -> None:
    """Its archive is the cilium CLI's and does not go through the filter: on an existing cluster the bundle says so instead."""
    from pytest_kpr.observe.diagnose import setup_bundle

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cilium").write_text(f"#!/bin/sh\necho ran > {tmp_path}/ran\n")
    (bin_dir / "cilium").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")

    class Settings:
        no_sysdump = False

    Settings.provider = provider  # type: ignore[attr-defined]
    files = setup_bundle(PlantedCluster(), None, Settings(), tmp_path / "setup-failure", 5.0, lambda line: None)
    assert (tmp_path / "ran").exists() is runs
    assert ("cilium-sysdump.txt" in {p.name for p in files}) is not runs
