"""Every phase leaves a record: cluster.json from the first moment, the phase that failed and why, what explains it
(collected while the cluster still exists), exit status 3, and a red cell in kpr matrix -- never a run that vanishes."""

from __future__ import annotations

import json

import pytest

from pytest_kpr.evidence.runrecord import PHASES, RunRecord, failed_at

SUITE = """
import pytest
pytestmark = pytest.mark.kpr

def test_cluster(kpr_facts):
    assert kpr_facts.nodes
"""


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_phases_end_in_order_and_the_failed_one_keeps_its_error_and_duration() -> None:
    clock = Clock()
    r = RunRecord({"id": "x"}, clock=clock)
    r.begin("preflight")
    clock.t += 1.5
    r.begin("provision")  # the previous phase ended well
    clock.t += 2
    r.begin("install")
    clock.t += 30
    r.end("helm install of Cilium 1.20.5 failed: timeout")
    got = [(p["phase"], p["outcome"], p["duration_s"], p["error"]) for p in r.to_json()["phases"]]
    assert got == [("preflight", "ok", 1.5, None), ("provision", "ok", 2.0, None),
                   ("install", "failed", 30.0, "helm install of Cilium 1.20.5 failed: timeout")]
    assert r.current is None and r.failed()["phase"] == "install"  # type: ignore[index]
    assert failed_at(r.to_json()) == "failed at install: helm install of Cilium 1.20.5 failed: timeout"


@pytest.mark.parametrize(("phases", "expected"), [
    ([], None),
    ([{"phase": "suites", "outcome": "running"}], None),
    ([{"phase": "cleanup", "outcome": "failed", "error": "x"}], None),  # after the suites: the cells say what was judged
    ([{"phase": "readiness", "outcome": "failed", "error": None}], "failed at readiness: no error recorded"),
    (["not a phase"], None),
])
def test_failed_at_names_only_a_setup_phase(phases: list, expected: str | None) -> None:
    assert failed_at({"phases": phases}) == expected


def test_the_phases_are_the_runs_order() -> None:
    assert PHASES == ("preflight", "provision", "install", "readiness", "facts", "suites", "cleanup")


@pytest.mark.parametrize(("fault", "phase", "error", "files"), [
    ("helm_install_fails", "install", "helm install of Cilium * failed: Error: INSTALLATION FAILED*",
     {"helm-status.txt", "cilium-pods.yaml", "events-kube-system.txt"}),
    # the full 420 s readiness bound, spent on the fake's virtual clock (no scaled-down timeouts)
    ("agents_never_ready", "readiness", "timed out after 420s waiting for every cilium-agent to report Ok*",
     {"helm-status.txt", "cilium-pods.yaml", "agent-status-fake-worker.txt", "agent-status-fake-control-plane.txt"}),
])
def test_a_failed_setup_leaves_its_phase_error_and_diagnostics_exits_3_and_shows_red_in_the_matrix(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], fault: str, phase: str, error: str, files: set[str]) -> None:
    import fnmatch

    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", f"--kpr-fake-faults={fault}", "-p", "no:cacheprovider")
    assert result.ret == 3, result.stdout.str()[-2000:]
    art = pytester.path / "kpr-artifacts" / "latest" / "fake"
    data = json.loads((art / "cluster.json").read_text())
    outcomes = {p["phase"]: p["outcome"] for p in data["phases"]}
    assert outcomes[phase] == "failed" and outcomes["preflight"] == "ok", outcomes
    failed = next(p for p in data["phases"] if p["outcome"] == "failed")
    assert fnmatch.fnmatch(failed["error"], error), failed["error"]
    assert data["run"]["provider"] == "fake" and data["run"]["plugin_version"] and data["run"]["requested"]["cilium_version"]
    got = {p.name for p in (art / "setup-failure").iterdir()}
    assert files <= got, got
    result.stdout.fnmatch_lines([f"[[]kpr[]] {phase} failed: * diagnostic files under *setup-failure"])

    from pytest_kpr.cli import main

    assert main(["matrix", str(pytester.path / "kpr-artifacts")]) == 0
    table = capsys.readouterr().out
    assert f"failed at {phase}" in table and "setup" in table


def test_a_passing_run_records_every_phase_ok(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "-p", "no:cacheprovider")
    assert result.ret == 0
    data = json.loads((pytester.path / "kpr-artifacts" / "latest" / "fake" / "cluster.json").read_text())
    assert [(p["phase"], p["outcome"]) for p in data["phases"]] == [
        ("preflight", "ok"), ("provision", "ok"), ("install", "ok"), ("readiness", "ok"), ("facts", "ok"), ("suites", "ok"),
        ("cleanup", "ok")]
    assert not (pytester.path / "kpr-artifacts" / "latest" / "fake" / "setup-failure").exists()


def test_results_json_says_what_it_is_about_and_how_the_run_ended(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE + "\n\ndef test_fails(kpr_facts):\n    assert False, 'x'\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "-p", "no:cacheprovider")
    assert result.ret == 1
    run = json.loads((pytester.path / "kpr-artifacts" / "latest" / "fake" / "results.json").read_text())["run"]
    assert run["exit_status"] == 1 and run["profile"] == "default" and run["kernels"] == ["6.8.0-49-generic"]
    assert run["cilium_version"] == "1.20.5" and run["plugin_version"] and run["finished"].endswith("+00:00")
    tests = {t["test"].rsplit("::", 1)[1]: t for t in json.loads((pytester.path / "kpr-artifacts" / "latest" / "fake" / "results.json").read_text())["tests"]}
    failed = tests["test_fails"]
    assert failed["outcome"] == "failed" and failed["message"] == "x"  # the verdict's first line, for the matrix's FAIL cell
    assert failed["evidence"].startswith("failures/") and (pytester.path / "kpr-artifacts" / "latest" / "fake" / failed["evidence"]).is_dir()
    assert all("message" not in t for t in tests.values() if t["outcome"] == "passed")


def test_a_run_that_judged_nothing_records_exit_status_5(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """results.json is written once, already with the status the run ends with (never read back and patched)."""
    from pathlib import Path

    from pytest_kpr.evidence import store

    writes: list[str] = []
    real = store._write  # the one writer under put_text and put_bytes

    def counting(path: Path, data: bytes, root: Path | None) -> Path:
        if path.name == "results.json":
            writes.append(str(path))
        return real(path, data, root)

    monkeypatch.setattr(store, "_write", counting)
    pytester.makepyfile(test_suite="import pytest\npytestmark = pytest.mark.kpr\n\ndef test_s(kpr_facts):\n    pytest.skip('no')\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "-p", "no:cacheprovider")
    assert result.ret == 5
    run = json.loads((pytester.path / "kpr-artifacts" / "latest" / "fake" / "results.json").read_text())["run"]
    assert run["exit_status"] == 5 and run["complete"] is True
    assert len(writes) == 1, writes
