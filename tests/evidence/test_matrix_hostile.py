"""`kpr matrix` and its gate against broken and hostile artifacts: every unusable input is one line and exit 2 (never a
traceback, never exit 1, never blocking), the gate refuses to compare nothing, reports cannot be forged, and outputs
are written all or none."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_kpr.cli import main

FACTS = {"cluster": "kpr", "provider": "kind", "cilium_version": "1.20.5", "profile": "default",
         "nodes": [{"name": "kpr-worker", "kernel": "6.1.0-50-amd64"}]}
PASSING = {"run": {"complete": True, "exit_status": 0}, "properties": {"iptables": {"verdict": "pass", "figure": "0 lines"},
                                                                      "NodePort": {"verdict": "pass"}}}


def run_dir(root: Path, name: str = "run", facts: dict | None = None, results: dict | str | bytes | None = PASSING) -> Path:
    d = root / name / "kpr"
    d.mkdir(parents=True)
    (d / "cluster.json").write_text(json.dumps(facts or FACTS))
    if isinstance(results, dict):
        (d / "results.json").write_text(json.dumps(results))
    elif isinstance(results, str):
        (d / "results.json").write_text(results)
    elif isinstance(results, bytes):
        (d / "results.json").write_bytes(results)
    return root / name


def one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize(("content", "words"), [
    (json.dumps(PASSING)[:100], ["results.json: not JSON", "cut short?"]),  # a results.json cut at 100 bytes
    ("{}", ["results.json: the top level: missing key 'properties'"]),
    (json.dumps({"properties": {"x": {"verdict": "maybe"}}}), ["properties.x.verdict: 'maybe' is not one of pass, fail, skip, xfail"]),
    (json.dumps({"properties": {"x": {"verdict": "pass", "counts": {"passed": -1}}}}), ["properties.x.counts.passed: -1 is below 0"]),
    (json.dumps({"properties": [1, 2]}), ["properties: expected object, got list"]),
    (b'{"properties": {"\xff": {"verdict": "pass"}}}', ["results.json: not UTF-8 (byte 17)"]),
    ('{"properties": {}, "run": {"exit_status": NaN}}', ["NaN is not JSON"]),
    ('{"properties": {}, "run": {"exit_status": 1e999}}', ["1e999 overflows"]),
    ('{"properties": {}, "run": {"exit_status": ' + "9" * 400 + "}}", ["a 400-digit number"]),
    ('{"properties": {}, "tests": [' + "[" * 100_000 + "]" * 100_000 + "]}", ["nested"]),
])
def test_a_broken_results_json_is_one_line_naming_the_file_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 content: str | bytes, words: list[str]) -> None:
    d = run_dir(tmp_path, results=content)
    one_line_exit_2(["matrix", str(d)], capsys, *words)
    one_line_exit_2(["matrix", "--compare", str(run_dir(tmp_path, "old")), str(d)], capsys, *words)  # the gate: 2, never 0 or 1


@pytest.mark.parametrize(("facts", "words"), [
    ({"provider": "kind"}, ["cluster.json: the top level: missing key 'cilium_version'"]),
    ({**FACTS, "nodes": "kpr-worker"}, ["cluster.json: nodes: expected array, got str"]),
    ({**FACTS, "phases": [{"phase": "install", "outcome": "exploded"}]}, ["phases[0].outcome: 'exploded' is not one of"]),
])
def test_a_broken_cluster_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], facts: dict, words: list[str]) -> None:
    one_line_exit_2(["matrix", str(run_dir(tmp_path, facts=facts))], capsys, *words)


def test_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = run_dir(tmp_path, results=None)
    results = d / "kpr" / "results.json"
    results.mkdir()
    one_line_exit_2(["matrix", str(d)], capsys, "results.json: a directory, where a file is expected")
    results.rmdir()
    os.mkfifo(results)  # nobody writes: reading it would block forever
    one_line_exit_2(["matrix", str(d)], capsys, "results.json: a FIFO, where a file is expected")
    results.unlink()
    os.symlink(results.name, results)  # a loop
    one_line_exit_2(["matrix", str(d)], capsys, "results.json: cannot read it: Too many levels of symbolic links")


# -- the gate refuses to compare nothing --------------------------------------------------------------------------------

def gate(old: Path, new: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["matrix", "--compare", str(old), str(new)])
    return rc, capsys.readouterr().out


def test_a_new_run_without_results_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = gate(run_dir(tmp_path, "old"), run_dir(tmp_path, "new", results=None), capsys)
    assert rc == 1 and "no results (no results.json, no JUnit XML): nothing compared" in out


@pytest.mark.parametrize(("run", "says"), [
    ({"complete": False, "exit_status": 2, "interrupted_by": "Ctrl-C"}, "the run did not complete (exit status 2, Ctrl-C)"),
    ({"complete": False, "exit_status": 2, "interrupted_by": "SIGTERM"}, "the run did not complete (exit status 2, SIGTERM)"),
])
def test_an_interrupted_new_run_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str], run: dict, says: str) -> None:
    rc, out = gate(run_dir(tmp_path, "old"), run_dir(tmp_path, "new", results={**PASSING, "run": run}), capsys)
    assert rc == 1 and says in out


def test_a_kernel_patch_bump_pairs_each_cell_and_passes_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two cells on each side, the kernel's patch bumped in NEW (a runner image update): each cell pairs by its kernel
    minor, and the change is a notice, not a failure (tests/evidence/test_gate.py holds the whole table)."""
    old, new = tmp_path / "old", tmp_path / "new"
    for root, kernels in ((old, ("6.1.0-50-amd64", "6.12.1")), (new, ("6.1.0-51-amd64", "6.12.2"))):
        for k in kernels:
            run_dir(root, k, facts={**FACTS, "nodes": [{"name": "n", "kernel": k}]})
    rc, out = gate(old, new, capsys)
    assert rc == 0 and out.count("(shown, not judged)") == 2 and "no regression" in out, out


def test_twin_runs_are_two_columns_and_not_each_others_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    failing = {**PASSING, "properties": {**PASSING["properties"], "iptables": {"verdict": "fail"}}}
    run_dir(tmp_path / "both", "a", results=PASSING)
    run_dir(tmp_path / "both", "b", results=failing)
    assert main(["matrix", str(tmp_path / "both"), "--json", str(tmp_path / "m.json")]) == 0
    m = json.loads((tmp_path / "m.json").read_text())
    assert [c["key"] for c in m["columns"]] == ["Cilium 1.20.5 / kernel 6.1.0-50-amd64 / default",
                                                 "Cilium 1.20.5 / kernel 6.1.0-50-amd64 / default #2"]
    assert not any("regressed_from" in cell for p in m["properties"].values() for cell in p.values())


def test_the_gate_passes_only_when_every_old_pass_passes_in_a_complete_new_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = gate(run_dir(tmp_path, "old"), run_dir(tmp_path, "new"), capsys)
    assert rc == 0 and out.startswith("no regression")


# -- reports cannot be forged; outputs all or none ----------------------------------------------------------------------

def test_a_hostile_directory_name_or_figure_cannot_inject_into_the_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evil = {**PASSING, "properties": {"x | y\n<script>alert(1)</script>": {"verdict": "pass", "figure": "a|b\n| injected | row |"}}}
    d = run_dir(tmp_path, "javascript:alert(1)", results=evil)
    assert main(["matrix", str(d), "--html", str(tmp_path / "m.html"), "--markdown", str(tmp_path / "m.md")]) == 0
    page = (tmp_path / "m.html").read_text()
    assert 'href="javascript:' not in page and "<script>alert" not in page and 'href="./javascript%3Aalert%281%29/kpr"' in page
    md = (tmp_path / "m.md").read_text().splitlines()
    assert len(md) == 3, md  # header, rule, one row: no injected row, no broken cell
    assert md[2].count(" | ") == 1 and "<script>" not in md[2] and "(./javascript%3Aalert%281%29/kpr)" in md[0]


def test_outputs_are_all_or_none_and_never_inside_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = run_dir(tmp_path)
    one_line_exit_2(["matrix", str(d), "--json", str(d / "m.json")], capsys, "is inside an input directory")
    one_line_exit_2(["matrix", str(d), "--json", str(tmp_path / "m.json"), "--html", str(tmp_path / "nowhere" / "m.html")], capsys,
                    "none was written")
    assert not (tmp_path / "m.json").exists(), "the first output is not left behind"
    assert main(["matrix", str(d), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["columns"][0]["cilium"] == "1.20.5"


# -- the plugin says whether its run completed ---------------------------------------------------------------------------

@pytest.mark.parametrize(("how", "interrupted_by"), [("raise KeyboardInterrupt", "Ctrl-C"),
                                                      ("os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)", "SIGTERM")])
def test_a_run_ended_by_ctrl_c_or_sigterm_is_marked_incomplete(pytester: pytest.Pytester, how: str, interrupted_by: str) -> None:
    pytester.makepyfile(test_suite=f"""
import os, signal, time
import pytest
pytestmark = pytest.mark.kpr

def test_one(kpr_facts):
    assert kpr_facts.nodes

def test_two(kpr_facts):
    {how}
""")
    result = pytester.runpytest_subprocess("-m", "kpr", "--kpr-provider=fake", "-p", "no:cacheprovider", "-p", "no:xdist", timeout=120)
    assert result.ret == 2
    run = json.loads((pytester.path / "kpr-artifacts" / "latest" / "fake" / "results.json").read_text())["run"]
    assert run["complete"] is False and run["interrupted_by"] == interrupted_by and run["exit_status"] == 2
    data = json.loads((pytester.path / "kpr-artifacts" / "latest" / "fake" / "cluster.json").read_text())
    assert any(p["phase"] == "cleanup" for p in data["phases"]), "the run still cleaned up"
