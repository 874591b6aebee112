"""The regression gate (``kpr matrix --compare``) as a table: what changes between two healthy runs of a workflow never
fails it (a kernel string, an LVH tag, a Cilium patch or minor rotation, a cell that left or joined the matrix, a baseline
that is missing or expired), and every real regression inside a cell does (pass -> fail, skip, xfail or missing; per
address family; per test; for every NEW run of a cell; whatever the verdict field claims). Artifacts are built here as
a workflow's report job downloads them: ``<dir>/<artifact>/<cell>/<cluster>/{cluster,results}.json``."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_kpr.cli import main
from pytest_kpr.evidence.gate import cell_name, safe

K61, K612, K68 = "6.1.0-50-amd64", "6.12.41+deb13-amd64", "6.8.0-1021-azure"
TESTS = {  # property -> its tests (the family-dependent ones run per family)
    "NodePort": ["suites/test_nodeport.py::test_nodeport_from_outside", "suites/test_nodeport.py::test_nodeport_between_nodes"],
    "iptables": ["suites/test_iptables.py::test_no_rule_names_the_web_cluster_ip"],
}


def run(cilium: str = "1.20.5", kernel: str = K68, *, provider: str = "kind", profile: str = "default", families: tuple[str, ...] = ("IPv4",),
        outcomes: dict[str, str] | None = None, verdicts: dict[str, str] | None = None, drop: tuple[str, ...] = (),
        run_record: dict[str, Any] | None = None, setup_failed: str = "", results: bool = True) -> dict[str, Any]:
    """One run of a cell: every test passes unless ``outcomes`` says otherwise (test id, with ``[IPv6]`` for a family);
    ``verdicts`` overrides what results.json claims for a property; ``drop`` leaves properties out."""
    tests = []
    for prop, ids in TESTS.items():
        if prop in drop:
            continue
        for tid in ids:
            fams = families if prop == "NodePort" else ("",)
            for fam in fams:
                full = f"{tid}[{fam}]" if fam and families != ("IPv4",) else tid
                entry = {"test": full, "property": prop, "outcome": (outcomes or {}).get(full, "passed")}
                if fam and families != ("IPv4",):
                    entry["family"] = fam
                tests.append(entry)
    from pytest_kpr.evidence.results import results_json

    by: dict[str, list[str]] = {}
    for t in tests:
        by.setdefault(t["property"], []).append(t["outcome"])
    data = results_json(by, {}, tests, {"complete": True, "exit_status": 1 if any(t["outcome"] == "failed" for t in tests) else 0,
                                        "cilium_version": cilium, "ip_families": list(families), **(run_record or {})})
    for prop, v in (verdicts or {}).items():
        data["properties"][prop]["verdict"] = v
    facts = {"cluster": "kpr", "provider": provider, "cilium_version": cilium, "profile": profile,
             "nodes": [{"name": "kpr-worker", "kernel": kernel}] if kernel else []}
    if setup_failed:
        facts["phases"] = [{"phase": "provision", "outcome": "failed", "error": setup_failed}]
    return {"facts": facts, "results": data if results else None}


def write(root: Path, cells: dict[str, dict[str, Any] | list[dict[str, Any]]]) -> Path:
    """``cells``: artifact name -> one run (or several: twins, each in its own evidence directory)."""
    for artifact, runs in cells.items():
        for i, r in enumerate(runs if isinstance(runs, list) else [runs]):
            d = root / artifact / artifact / f"kpr-{i}"
            d.mkdir(parents=True)
            (d / "cluster.json").write_text(json.dumps(r["facts"]))
            if r["results"] is not None:
                (d / "results.json").write_text(json.dumps(r["results"]))
    root.mkdir(parents=True, exist_ok=True)
    return root


def gate(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: dict, new: dict, *older: dict) -> tuple[int, list[str]]:
    dirs = [write(tmp_path / "old", old), write(tmp_path / "new", new)]
    extra = [a for i, o in enumerate(older) for a in ("--older", str(write(tmp_path / f"older-{i}", o)))]
    rc = main(["matrix", "--compare", *map(str, dirs), *extra])
    return rc, capsys.readouterr().out.splitlines()


KIND = {"kpr-cilium-1.19.8": run("1.19.8"), "kpr-cilium-1.20.5": run("1.20.5"), "kpr-profile-ipv6": run("1.20.5", profile="ipv6")}


def _kernel(cells: dict, kernel: str) -> dict:
    return {a: run(r["facts"]["cilium_version"], kernel, profile=r["facts"]["profile"]) for a, r in cells.items()}


# -- what changes between two healthy runs: notices, never a failure ----------------------------------------------------

PASSING_CHANGES = {
    "identical": (KIND, KIND, (), []),
    "the runner's kernel string changed": (KIND, _kernel(KIND, "6.8.0-1030-azure"), (), ["*since the baseline, kernel 6.8.0-1021-azure -> 6.8.0-1030-azure*"] * 3),
    "the runner's kernel moved to another minor": (KIND, _kernel(KIND, "6.11.0-1015-azure"), (), ["*kernel 6.8.0-1021-azure -> 6.11.0-1015-azure*"] * 3),
    "an LVH tag bump": ({"kpr-kernel-6.1-20250101.100000": run(kernel="6.1.140"), "kpr-kernel-6.12-20250101.100000": run(kernel="6.12.30")},
                        {"kpr-kernel-6.1-20250616.013250": run(kernel="6.1.150"), "kpr-kernel-6.12-20250616.013250": run(kernel="6.12.41")},
                        (), ["*kernel 6.1.140 -> 6.1.150*", "*kernel 6.12.30 -> 6.12.41*"]),
    "a Cilium patch release": (KIND, {**KIND, "kpr-cilium-1.19.9": run("1.19.9")} | {"kpr-cilium-1.19.8": None}, (), ["*Cilium 1.19.8 -> 1.19.9*"]),
    "a cell dropped": (KIND, {k: v for k, v in KIND.items() if k != "kpr-profile-ipv6"}, (), ["*ipv6*not in this run (the cell left the matrix)*"]),
    "a cell added": (KIND, {**KIND, "kpr-profile-netkit": run(profile="netkit")}, (), ["*kpr-profile-netkit*no baseline*"]),
    "a Cilium column rotation": ({"kpr-cilium-1.18.9": run("1.18.9"), **{k: v for k, v in KIND.items() if "cilium" in k}},
                                {"kpr-cilium-1.19.8": run("1.19.8"), "kpr-cilium-1.20.5": run("1.20.5"), "kpr-cilium-1.21.0": run("1.21.0")},
                                (), ["*kpr-cilium-1.21.0*no baseline*", "*kpr-cilium-1.18.9*left the matrix*"]),
    "no baseline for any cell": ({"kpr-upgrade-1.18.9-1.19.8": run("1.19.8")}, KIND, (), ["*no baseline*"] * 3 + ["*left the matrix*"]),
    "an expired baseline (OLD's cell had no artifacts; an older run has it)": (
        {k: v for k, v in KIND.items() if k != "kpr-profile-ipv6"}, KIND, ({"kpr-profile-ipv6": run(profile="ipv6")},),
        ["*ipv6*baseline from an older run (older-0)*"]),
    "a per-family run's families all pass": ({"kpr-profile-dual": run(families=("IPv4", "IPv6"))},
                                             {"kpr-profile-dual": run(families=("IPv4", "IPv6"))}, (), []),
    "a test that failed before and passes now": ({"c": run(outcomes={TESTS["iptables"][0]: "failed"})}, {"c": run()}, (), []),
    "a new property failing (the matrix's, not a regression)": ({"c": run(drop=("iptables",))},
                                                               {"c": run(outcomes={TESTS["iptables"][0]: "failed"})}, (), []),
}


@pytest.mark.parametrize(("old", "new", "older", "notices"), list(PASSING_CHANGES.values()), ids=list(PASSING_CHANGES))
def test_what_changes_between_healthy_runs_never_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: dict, new: dict,
                                                                older: tuple, notices: list[str]) -> None:
    new = {k: v for k, v in new.items() if v is not None}
    rc, out = gate(tmp_path, capsys, old, new, *older)
    assert rc == 0, out
    assert out[-1].startswith("no regression"), out
    said = [line for line in out if line.startswith("notice: ")]
    assert len(said) == len(notices) and all(any(fnmatch.fnmatch(s, n) for s in said) for n in notices), said


# -- a real regression inside a cell: exit 1, one line naming it --------------------------------------------------------

NP4, NP6 = TESTS["NodePort"][0] + "[IPv4]", TESTS["NodePort"][0] + "[IPv6]"
DUAL = ("IPv4", "IPv6")
REGRESSIONS = {
    "pass -> fail": ({"c": run()}, {"c": run(outcomes={TESTS["iptables"][0]: "failed"})}, (),
                     ["REGRESSION iptables: passed in *, fails in * -- test_no_rule_names_the_web_cluster_ip fails"]),
    "pass -> skip": ({"c": run()}, {"c": run(outcomes={TESTS["iptables"][0]: "skipped"})}, (), ["REGRESSION iptables: *, is skipped in *"]),
    "pass -> missing": ({"c": run()}, {"c": run(drop=("iptables",))}, (), ["REGRESSION iptables: passed in *, is missing in *"]),
    "pass -> xfail, the verdict field claiming pass": (
        {"c": run()}, {"c": run(outcomes={TESTS["iptables"][0]: "xfailed"}, verdicts={"iptables": "pass"})}, (),
        ["REGRESSION *: its record contradicts itself (iptables is recorded as pass but its tests give xfail): not trusted"]),
    "pass -> xfail": ({"c": run()}, {"c": run(outcomes={TESTS["iptables"][0]: "xfailed"})}, (),
                      ["REGRESSION iptables: *, is only an expected failure (xfail) in *"]),
    "IPv6 pass -> skip under an overall pass": (
        {"c": run(families=DUAL)}, {"c": run(families=DUAL, outcomes={NP6: "skipped", TESTS["NodePort"][1] + "[IPv6]": "skipped"})}, (),
        ["REGRESSION NodePort: passed in *, is skipped for IPv6 in * -- test_nodeport_between_nodes[[]IPv6] is skipped, "
         "test_nodeport_from_outside[[]IPv6] is skipped"]),
    "one test pass -> skip while its property still passes": (
        {"c": run()}, {"c": run(outcomes={TESTS["NodePort"][1]: "skipped"})}, (),
        ["REGRESSION NodePort: passed in *, passes, but not every test that passed there in * -- test_nodeport_between_nodes is skipped"]),
    "IPv6 fails, the verdict fields claiming pass": (
        {"c": run(families=DUAL)}, {"c": run(families=DUAL, outcomes={NP6: "failed"}, verdicts={"NodePort": "pass"})}, (),
        ["REGRESSION *: its record contradicts itself (NodePort is recorded as pass but its tests give fail): not trusted"]),
    "the second NEW run of a cell fails": ({"c": run()}, {"c": [run(), run(outcomes={TESTS["iptables"][0]: "failed"})]}, (),
                                           ["REGRESSION iptables: passed in *, fails in *"]),
    "a regression against an older baseline (the last run in which the cell ran)": (
        {"other": run(profile="x")}, {"c": run(outcomes={TESTS["iptables"][0]: "failed"})}, ({"c": run()},),
        ["REGRESSION iptables: passed in *, fails in *"]),
    "a regression across a kernel change": ({"c": run(kernel=K61)}, {"c": run(kernel="6.1.0-51-amd64", outcomes={NP4[:-6]: "failed"})}, (),
                                            ["REGRESSION NodePort: passed in *, fails in *"]),
    "two kernels under one name, each patch bumped: each pairs by its minor": (
        {"c": [run(kernel="6.1.140"), run(kernel="6.12.1")]},
        {"c": [run(kernel="6.1.150"), run(kernel="6.12.2", outcomes={TESTS["iptables"][0]: "failed"})]}, (),
        ["REGRESSION iptables: passed in * kernel 6.12.1 *, fails in * kernel 6.12.2 *"]),
    "exit status 0 with a failed test": ({"c": run()}, {"c": run(outcomes={TESTS["iptables"][0]: "failed"}, run_record={"exit_status": 0})}, (),
                                         ["REGRESSION *: its record contradicts itself (exit status 0 with 1 failed test(s)): not trusted"]),
    "complete, yet interrupted": ({"c": run()}, {"c": run(run_record={"interrupted_by": "SIGTERM"})}, (),
                                  ["REGRESSION *: its record contradicts itself (complete, yet interrupted by SIGTERM): not trusted"]),
    "results.json and cluster.json name two Cilium versions": (
        {"c": run()}, {"c": run(run_record={"cilium_version": "1.19.8"})}, (),
        ["REGRESSION *: its record contradicts itself (results.json says Cilium 1.19.8, cluster.json 1.20.5): not trusted"]),
    "a new cell that failed before its suites": ({"c": run()}, {"c": run(), "d": run(profile="d", kernel="", setup_failed="kind create failed")},
                                                 (), ["REGRESSION *: failed at *kind create failed* (its properties were not judged)"]),
    "a NEW run without results": ({"c": run()}, {"c": run(results=False)}, (), ["REGRESSION *: no results (no results.json, no JUnit XML)*"]),
}


@pytest.mark.parametrize(("old", "new", "older", "lines"), list(REGRESSIONS.values()), ids=list(REGRESSIONS))
def test_a_real_regression_inside_a_cell_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: dict, new: dict,
                                                        older: tuple, lines: list[str]) -> None:
    rc, out = gate(tmp_path, capsys, old, new, *older)
    assert rc == 1, out
    got = [line for line in out if line.startswith("REGRESSION ")]
    assert len(got) == len(lines) and all(fnmatch.fnmatch(g, e) for g, e in zip(got, lines, strict=True)), got
    assert not out[-1].startswith("no regression")


# -- a baseline that judged nothing is never a baseline ------------------------------------------------------------------

FAILING_CELL = {"c": run(outcomes={TESTS["iptables"][0]: "failed"})}
UNJUDGED = {
    "its setup failed": {"c": run(setup_failed="helm install of Cilium failed")},
    "it did not complete (interrupted)": {"c": run(run_record={"complete": False, "interrupted_by": "SIGTERM"})},
    "it did not complete (cancelled: no results)": {"c": run(results=False)},
}


@pytest.mark.parametrize("old", list(UNJUDGED.values()), ids=list(UNJUDGED))
def test_a_baseline_that_judged_nothing_is_could_not_compare_never_no_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                                 old: dict) -> None:
    """The same failing run against a baseline whose setup failed, that was interrupted or left no results: exit 3 with a
    COULD NOT COMPARE line naming why, never "no regression" (which would make the failing run the next baseline)."""
    rc, out = gate(tmp_path, capsys, old, FAILING_CELL)
    assert rc == 3, out
    assert [ln for ln in out if ln.startswith("COULD NOT COMPARE ")] and not [ln for ln in out if ln.startswith("no regression")], out
    assert any("no earlier run judged this cell" in ln for ln in out), out


@pytest.mark.parametrize("old", list(UNJUDGED.values()), ids=list(UNJUDGED))
def test_the_gate_walks_back_past_a_run_that_judged_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str], old: dict) -> None:
    """An older run that judged the cell is the baseline instead: the regression is found (exit 1)."""
    rc, out = gate(tmp_path, capsys, old, FAILING_CELL, {"c": run()})
    assert rc == 1, out
    assert any(ln.startswith("REGRESSION iptables: passed in OLD") for ln in out), out
    assert any("baseline from an older run (older-0), the last one in which this cell was judged" in ln for ln in out), out


# -- names and escaping -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "cell"), [
    ("kpr-cilium-1.19.8", "kpr-cilium-1.19"), ("kpr-upgrade-1.18.5-1.19.8", "kpr-upgrade-1.18-1.19"),
    ("kpr-kernel-6.1-20250616.013250", "kpr-kernel-6.1"), ("6.1.0-50-amd64", "6.1"), ("kpr-profile-ipv6", "kpr-profile-ipv6"), ("", ""),
])
def test_a_cells_name_keeps_its_versions_to_the_minor(name: str, cell: str) -> None:
    assert cell_name(name) == cell


HOSTILE = "x\n::error::forged\r\x1b[2J\x1b]8;;http://evil\x07\u2028\u202e::add-mask::y\x9b31m"


def test_nothing_from_an_artifact_can_form_a_workflow_command_or_a_terminal_sequence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = run(outcomes={TESTS["iptables"][0]: "failed"})
    new["results"]["properties"]["iptables"]["figure"] = HOSTILE
    new["results"]["properties"][HOSTILE] = new["results"]["properties"].pop("NodePort")
    for t in new["results"]["tests"]:
        if t["property"] == "NodePort":
            t["property"] = HOSTILE
    old = run()
    old["results"]["properties"][HOSTILE] = old["results"]["properties"].pop("NodePort")
    for t in old["results"]["tests"]:
        if t["property"] == "NodePort":
            t["property"] = HOSTILE
            t["test"] += HOSTILE
    rc, out = gate(tmp_path, capsys, {f"c{HOSTILE}": old}, {f"c{HOSTILE}": new})
    assert rc == 1
    assert len(out) == 1, out  # one regression line: none forged by a line break
    assert not any(line.lstrip().startswith("::") or "::" in line for line in out), out
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", "\n".join(out).replace("\n", "")), out
    assert safe("a\nb::c\x1b") == "a\\x0ab:\\x3ac\\x1b"


# -- scripts/regression_gate.sh: the baseline per cell, and distinct exit statuses --------------------------------------

REPO = Path(__file__).resolve().parents[2]
GH = REPO / "tests" / "workflows" / "standins" / "bin" / "gh"


def gate_script(tmp_path: Path, runs: dict[int, dict], new: dict, *, fail: str = "", repo: str = "example/pytest-kpr",
                new_dir: Path | None = None) -> tuple[int, str, list[str]]:
    """``runs``: earlier runs of kpr-kind.yml on main (id -> their cells; an empty dict: artifacts expired)."""
    import os
    import subprocess
    import sys

    for rid, cells in runs.items():  # (cells, "EVENT CONCLUSION") for a run that was not a successful push
        meta = None
        if isinstance(cells, tuple):
            cells, meta = cells
        write(tmp_path / "gh" / "kpr-kind.yml" / str(rid), cells)
        if meta:
            (tmp_path / "gh" / "kpr-kind.yml" / str(rid) / ".meta").write_text(meta + "\n")
    (tmp_path / "gh").mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").symlink_to(GH)
    (bin_dir / "kpr").symlink_to(Path(sys.executable).parent / "kpr")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "KPR_GH_RUNS": str(tmp_path / "gh"), "KPR_GH_LOG": str(tmp_path / "log"),
           "KPR_GH_FAIL": fail, "GITHUB_RUN_ID": "999", "TMPDIR": str(tmp_path), "HOME": os.environ.get("HOME", "/root")}
    if repo:
        env["GITHUB_REPOSITORY"] = repo
    target = new_dir or write(tmp_path / "new", new)
    r = subprocess.run([str(REPO / "scripts" / "regression_gate.sh"), "kpr-kind.yml", str(target), "kpr-*"], env=env,
                       capture_output=True, text=True, timeout=120)
    log = (tmp_path / "log").read_text().splitlines() if (tmp_path / "log").exists() else []
    return r.returncode, r.stdout + r.stderr, log


FAILING = {**KIND, "kpr-cilium-1.20.5": run("1.20.5", outcomes={TESTS["iptables"][0]: "failed"})}
UNJUDGED_KIND = {**KIND, "kpr-cilium-1.20.5": run("1.20.5", setup_failed="helm install of Cilium failed")}


@pytest.mark.parametrize(("runs", "new", "fail", "rc", "says", "downloads"), [
    ({7: KIND}, KIND, "", 0, ["regression gate: baseline run 7 of kpr-kind.yml on main", "*no regression*"], ["7"]),
    ({7: KIND}, FAILING, "", 1, ["REGRESSION iptables: passed in OLD kpr-cilium-1.20.5: *", "::error::regression gate: a regression*"], ["7"]),
    # a run that failed (any conclusion) is a baseline too; a run whose artifacts expired is passed over
    ({9: {}, 8: KIND}, FAILING, "", 1, ["*run 9 has no kpr-* artifacts (expired*passed over", "REGRESSION iptables*"], ["9", "8"]),
    # the newest run lacks a cell: the last run in which it ran is its baseline (every listed run is downloaded: which
    # one judged a cell is kpr's to say)
    ({8: {k: v for k, v in KIND.items() if k != "kpr-cilium-1.20.5"}, 7: KIND, 6: KIND}, FAILING, "", 1,
     ["REGRESSION iptables: passed in OLD kpr-cilium-1.20.5*", "notice: *baseline from an older run (01-run-7)*"], ["8", "7", "6"]),
    # a run that judged nothing is never a baseline: the gate walks back past it, or says it could not compare
    ({8: UNJUDGED_KIND, 7: KIND}, FAILING, "", 1, ["REGRESSION iptables: passed in OLD kpr-cilium-1.20.5*",
                                                   "notice: *kpr-cilium-1.20.5*older run (01-run-7), the last one in which this cell was judged*"],
     ["8", "7"]),
    ({8: UNJUDGED_KIND}, FAILING, "", 3, ["COULD NOT COMPARE *kpr-cilium-1.20.5*: could not compare: no earlier run judged this cell*",
                                          "::error::regression gate: could not compare: no earlier run on main judged a cell*"], ["8"]),
    # a pull request's run (a fork's branch named main) and a cancelled run are never listed as baselines
    ({9: (KIND, "pull_request success"), 8: (KIND, "push cancelled"), 7: KIND}, FAILING, "", 1,
     ["regression gate: run 9 is a pull request's (pull_request): never a baseline", "regression gate: run 8 was cancelled: never a baseline",
      "regression gate: baseline run 7 of kpr-kind.yml on main", "REGRESSION iptables*"], ["7"]),
    # a provider: fake dispatch on main: its cells pair with no kind cell; the kind run before it is the baseline
    ({8: {k: run(v["facts"]["cilium_version"], provider="fake", profile=v["facts"]["profile"]) for k, v in KIND.items()}, 7: KIND},
     FAILING, "", 1, ["REGRESSION iptables: passed in OLD kpr-cilium-1.20.5*"], ["8", "7"]),
    ({}, FAILING, "", 0, ["::notice::no completed kpr-kind.yml run on main with kpr-* artifacts yet*"], []),
    ({9: {}}, KIND, "", 0, ["::notice::no completed kpr-kind.yml run on main*"], ["9"]),
    ({7: KIND}, KIND, "list", 3, ["::error::regression gate: could not compare: gh run list failed: HTTP 502*"], []),
    ({7: KIND}, KIND, "download", 3, ["::error::regression gate: could not compare: gh run download 7 failed: *401*"], ["7"]),
], ids=["no regression", "a regression", "an expired run passed over", "a cell's baseline from an older run",
        "a baseline that judged nothing passed over", "no run judged the cell", "a pull request and a cancelled run",
        "a fake dispatch", "no run yet",
        "every run expired", "gh run list fails", "gh run download fails"])
def test_the_workflows_gate_takes_each_cells_last_run_on_main(tmp_path: Path, runs: dict, new: dict, fail: str, rc: int, says: list[str],
                                                              downloads: list[str]) -> None:
    got, out, log = gate_script(tmp_path, runs, new, fail=fail)
    assert got == rc, out
    lines = out.splitlines()
    assert all(any(fnmatch.fnmatch(line, s) for line in lines) for s in says), out
    assert [c.split()[2] for c in log if c.startswith("run download")] == downloads, log
    if runs or fail:
        assert "run list --repo example/pytest-kpr --workflow kpr-kind.yml --branch main --status completed --limit 5" in log[0]


def test_the_gate_cannot_compare_without_its_inputs(tmp_path: Path) -> None:
    rc, out, _ = gate_script(tmp_path / "a", {7: KIND}, KIND, repo="")
    assert rc == 3 and "could not compare: GITHUB_REPOSITORY is not set" in out
    (tmp_path / "b" / "empty").mkdir(parents=True)
    rc, out, _ = gate_script(tmp_path / "b", {7: KIND}, {}, new_dir=tmp_path / "b" / "empty")
    assert rc == 3 and "could not compare: no cells in" in out


def test_the_gates_artifact_text_is_printed_with_workflow_commands_stopped(tmp_path: Path) -> None:
    new = run("1.20.5", outcomes={TESTS["iptables"][0]: "failed"})
    new["results"]["properties"]["iptables"]["figure"] = "x\n::error::forged\n::stop-commands::"
    rc, out, _ = gate_script(tmp_path, {7: {"kpr-cilium-1.20.5": run("1.20.5")}}, {"kpr-cilium-1.20.5": new})
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[start].split("::")[2]
    assert len(token) == 32 and lines.index(f"::{token}::") > start
    between = lines[start + 1:lines.index(f"::{token}::")]
    assert rc == 1 and any(line.startswith("REGRESSION iptables") for line in between)
    assert not any(line.startswith("::") for line in between) and "::error::forged" not in out
