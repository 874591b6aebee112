"""Module health: the `Modules Health` tally and tree in `cilium-dbg status [--verbose]`, and `db/show health`
(`kpr parse status`, `kpr parse db-health`). Formats: pytest_kpr/datapath.py FORMAT_RULES and parse/health.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.test_kpr_parse_cli import kpr_parse

from pytest_kpr.parse import HealthLeaf, HealthStatus, ParseError, parse_db_health, parse_status_text
from pytest_kpr.parse.errors import shown_line
from pytest_kpr.testing import render

REFLECTOR = {"module": "agent.controlplane.loadbalancer-reflectors", "component": "job-reflect-services-endpoints", "level": "Degraded",
             "message": "Failure processing services", "last_ok": render.NEVER,
             "error": "frontend already owned by another service: 198.18.10.80:80/TCP is owned by demo/owner"}
CONFIG = {"module": "agent.controlplane.cilium-agent-dynamic-config", "component": "job-k8s-reflector-cilium-configs-cm-cilium-config-kube-system",
          "level": "OK", "message": "168 upserted, 0 deleted, 168 total objects", "error": ""}


# -- status: the tally and the tree ---------------------------------------------------------------------

def test_real_tally_lines(cilium_fixtures: Path) -> None:
    text = (cilium_fixtures / "health" / "modules-health-tally-real-samples.txt").read_text()
    k8s_snap = [line for line in text.splitlines() if line.startswith("Modules Health:")]
    got = [(h.stopped, h.degraded, h.ok) for h in (parse_status_text(line + "\n").modules_health for line in k8s_snap) if h]
    assert got[:2] == [(0, 0, 52), (11, 0, 77)] and got[2] == (0, 1, 94)


def test_the_hand_trimmed_third_party_tree_is_refused(cilium_fixtures: Path) -> None:
    """Sample (3) was trimmed by its author: a blank line inside the section and leaves without (age, xN)."""
    text = (cilium_fixtures / "health" / "modules-health-tally-real-samples.txt").read_text()
    third = text[text.index("Modules Health:          Stopped(0) Degraded(1) OK(94)"):]
    with pytest.raises(ParseError, match="line 3"):
        parse_status_text(third)


def test_the_tree_starting_on_the_modules_health_line_before_pr_46739(cilium_fixtures: Path) -> None:
    text = (cilium_fixtures / "health" / "pr46739-modules-health-new-layout-excerpt.txt").read_text()
    before = text[text.index("Modules Health:                             agent"):text.index("                                            ...")]
    h = parse_status_text(before).modules_health
    assert h is not None and (h.stopped, h.degraded, h.ok) == (None, None, None), "no tally in this layout"
    (leaf,) = h.leaves
    assert leaf.path == ("agent", "controlplane", "cilium-agent-dynamic-config", "job-k8s-reflector-cilium-configs-cm-cilium-config-kube-system")
    assert (leaf.level, leaf.message, leaf.age, leaf.count) == ("OK", "168 upserted, 0 deleted, 168 total objects", "2m48s", 1)


def test_the_excerpt_of_the_new_layout_is_cut_off_and_refused(cilium_fixtures: Path) -> None:
    text = (cilium_fixtures / "health" / "pr46739-modules-health-new-layout-excerpt.txt").read_text()
    after = text[text.index("Modules Health:   Stopped(0) Degraded(0) OK(90)"):text.index("[excerpt ends here]")]
    with pytest.raises(ParseError, match="a tree leaf without"):
        parse_status_text(after)
    h = parse_status_text(after.rstrip() + "-x   [OK] Running (5s, x2)\n").modules_health
    assert h is not None and (h.stopped, h.degraded, h.ok) == (0, 0, 90) and h.leaves[0].path[-1] == "job-x"


@pytest.mark.parametrize("layout", ["pre-46739", "post-46739"])
def test_rendered_layouts_round_trip(layout: str) -> None:
    text = "\n".join(render.modules_health([CONFIG, REFLECTOR], verbose=True, layout=layout)) + "\n"
    h = parse_status_text(text).modules_health
    assert h is not None
    assert [leaf.id for leaf in h.degraded_leaves] == ["agent.controlplane.loadbalancer-reflectors.job-reflect-services-endpoints"]
    assert h.degraded_leaves[0].message == "Failure processing services", "the tree never carries the error"
    assert (h.degraded is None) == (layout == "pre-46739")


P = "                         "  # the outer tabwriter's column


@pytest.mark.parametrize(
    ("text", "lineno", "reason"),
    [
        ("Modules Health:          Stopped(0) Degraded(x) OK(1)\n", 1, "expected Stopped(N) Degraded(N) OK(N) or the module tree"),
        ("Modules Health:          [OK] x (1s, x1)\n", 1, "expected Stopped(N) Degraded(N) OK(N) or the module tree"),
        ("KVStore:                 Disabled\nModules Health:\n", 2, "neither a tally nor a module tree"),
        (f"Modules Health:          agent\n{P}├── a   [OK] fine (1s, x1)\n{P}│       └── b   [OK] x (1s, x1)\n", 3, "the tree skips a level"),
        (f"Modules Health:          agent\n{P}└── a   [OK] fine (1s, x1)\n{P}    └── b   [OK] x (1s, x1)\n", 2,
         "a health reporter with children (reporters are leaves)"),
        (f"Modules Health:          agent\n{P}└── a   [MAYBE] fine (1s, x1)\n", 2, "not a module health tree line"),
        (f"Modules Health:          agent\n{P}└── a   [OK] fine (soon, x1)\n", 2, "a tree leaf without [OK|DEGRADED|STOPPED] <message> (<age>, x<count>)"),
        (f"Modules Health:          agent\n{P}└── a   [OK] fine (1s, xN)\n", 2, "a tree leaf without [OK|DEGRADED|STOPPED] <message> (<age>, x<count>)"),
        (f"Modules Health:          agent\n{P}└── a\n", 2, "a tree leaf without [OK|DEGRADED|STOPPED] <message> (<age>, x<count>)"),
        (f"Modules Health:          agent\n{P}│   a   [OK] fine (1s, x1)\n", 2, "a tree line without ├── or └──"),
    ],
)
def test_malformed_health_is_a_parse_error_naming_the_line(text: str, lineno: int, reason: str) -> None:
    """The error names the format, the line number, the reason and the line as printed."""
    with pytest.raises(ParseError) as e:
        parse_status_text(text)
    line = text.splitlines()[lineno - 1]
    shown = f"Modules Health: {line.split(':', 1)[1].strip()}" if lineno == 1 or line.startswith("Modules Health:") else line
    assert str(e.value) == f"status: line {lineno}: {reason}: {shown_line(shown)}"


def test_the_tree_may_start_on_the_line_after_modules_health() -> None:
    """The 21d690e1 layout: "Modules Health:" alone, the tree indented on the next lines."""
    h = parse_status_text(f"Modules Health:\n{P}agent\n{P}└── a\n{P}    └── b   [STOPPED] gone (n/a, x0)\n").modules_health
    assert h is not None and h.leaves == (HealthLeaf(("agent", "a", "b"), "STOPPED", "gone", "n/a", 0),) and h.degraded is None


def test_kpr_parse_status_reports_the_tally_and_the_leaves() -> None:
    text = "\n".join(render.modules_health([CONFIG, REFLECTOR], verbose=True, layout="post-46739")) + "\n"
    out = json.loads(kpr_parse("status", text).stdout)["modules_health"]
    assert (out["stopped"], out["degraded"], out["ok"]) == (0, 1, 1)
    assert out["leaves"][1] == {"path": ["agent", "controlplane", "loadbalancer-reflectors", "job-reflect-services-endpoints"],
                                "level": "DEGRADED", "message": "Failure processing services", "age": "3s", "count": 1}


# -- db/show health --------------------------------------------------------------------------------------

def test_db_health_rows_and_the_error_column() -> None:
    rows = parse_db_health(render.health_table([CONFIG, REFLECTOR]))
    assert [r.id for r in rows] == ["agent.controlplane.cilium-agent-dynamic-config.job-k8s-reflector-cilium-configs-cm-cilium-config-kube-system",
                                    "agent.controlplane.loadbalancer-reflectors.job-reflect-services-endpoints"]
    r = rows[1]
    assert (r.level, r.message, r.error, r.last_ok, r.count) == ("Degraded", "Failure processing services", REFLECTOR["error"], render.NEVER, 1)
    assert rows[0].error == ""


def test_db_health_joined_errors_continue_on_the_next_lines() -> None:
    """errors.Join separates the reflector's errors with newlines; the cell continues on the next lines."""
    three = "\n".join(f"frontend already owned by another service: 198.18.10.80:{p}/TCP is owned by demo/o{p}" for p in (80, 81, 82))
    rows = parse_db_health(render.health_table([CONFIG, {**REFLECTOR, "error": three, "count": 4}]))
    assert rows[1].error == three and rows[1].count == 4 and rows[1].updated_at == render.HEALTH_TIME


def shown(line: str) -> str:
    """How a ParseError shows the line (its repr, at most 120 characters)."""
    return shown_line(line)


@pytest.mark.parametrize(
    ("mutate", "lineno", "reason"),
    [
        (lambda t: t.replace("Degraded   ", "Unwell     ", 1), 3, "unknown level 'Unwell'"),
        (lambda t: t.replace(" OK ", "    ", 1), 2, "unknown level ''"),
        (lambda t: t.replace(render.HEALTH_TIME, "yesterday           ", 1), 2, "LastOK is not an RFC 3339 time: 'yesterday'"),
        (lambda t: t.replace(render.HEALTH_TIME + "   1", render.HEALTH_TIME + "   x", 1), 2, "Count is not a number: 'x'"),
        (lambda t: t.replace("Module ", "Modul  ", 1), 1, "not a db-health table header (unknown columns ['Modul'])"),
        (lambda t: t.replace("agent.controlplane.cilium-agent-dynamic-config ", " " * 47, 1), 2, "empty Module"),
        (lambda t: "\n".join(t.splitlines()[:3]) + "\n", 3, "the last row's Error never ends"),
        (lambda t: "\n".join(t.splitlines()[:3] + t.splitlines()[1:2]) + "\n", 4, "a new row while the previous row's Error is still open"),
    ],
)
def test_malformed_db_health_is_a_parse_error_naming_the_line(mutate: object, lineno: int, reason: str) -> None:
    text = mutate(render.health_table([CONFIG, {**REFLECTOR, "error": REFLECTOR["error"] + "\nsecond error"}]))  # type: ignore[operator]
    with pytest.raises(ParseError) as e:
        parse_db_health(text)
    assert str(e.value) == f"db-health: line {lineno}: {reason}: {shown(text.splitlines()[lineno - 1])}"


def test_db_health_without_a_header_or_with_a_lone_continuation() -> None:
    with pytest.raises(ParseError) as e:
        parse_db_health("\n")
    assert str(e.value) == "db-health: line 1: no header: ''"
    with pytest.raises(ParseError) as e:
        parse_db_health("Module   Level\nx        Sick\n")
    assert str(e.value) == "db-health: line 2: unknown level 'Sick': 'x        Sick'"


def test_db_health_misaligned_rows_and_continuations() -> None:
    table = render.health_table([CONFIG, {**REFLECTOR, "error": REFLECTOR["error"] + "\nsecond error"}])
    lines = table.splitlines()
    start = lines[0].index("Component")
    shifted = lines[:2] + ["x" * start + lines[2][start:]] + lines[3:]  # a Module cell that runs into the Component column
    with pytest.raises(ParseError, match="db-health: line 3: text runs into column Component"):
        parse_db_health("\n".join(shifted) + "\n")
    # a continuation line is read by its own rule (split at runs of spaces), wherever its text falls
    cont = lines[:3] + ["second error spilling far   " + render.NEVER + "   " + render.HEALTH_TIME + "   1"]
    (_, reflector) = parse_db_health("\n".join(cont) + "\n")
    assert reflector.error == REFLECTOR["error"] + "\nsecond error spilling far" and reflector.last_ok == render.NEVER


def test_kpr_parse_db_health() -> None:
    cp = kpr_parse("db-health", render.health_table([CONFIG, REFLECTOR]))
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout)
    assert out[1]["module"] == "agent.controlplane.loadbalancer-reflectors" and out[1]["error"] == REFLECTOR["error"]
    bad = kpr_parse("db-health", "Module Level\nx Sick\n")
    assert bad.returncode == 2 and bad.stdout == "" and "db-health: line 2" in bad.stderr


def test_db_health_with_a_subset_of_the_columns() -> None:
    """`db/show health --columns=...` prints some columns only; the missing ones read as empty (Count 0)."""
    (row,) = parse_db_health("Module       Level      Message\nagent.x.y    Degraded   Failure processing services\n")
    assert row == HealthStatus("agent.x.y", "", "Degraded", "Failure processing services", "", "", "", 0)
    (row,) = parse_db_health("Module       Component   Level   UpdatedAt              Count\n"
                             f"agent.x      job-y       OK      {render.HEALTH_TIME}   7\n")
    assert (row.component, row.updated_at, row.count, row.last_ok) == ("job-y", render.HEALTH_TIME, 7, "")


def test_db_health_continuation_segments_keep_their_spacing_and_their_tail() -> None:
    lines = render.health_table([CONFIG, {**REFLECTOR, "error": REFLECTOR["error"] + "\nsecond"}]).splitlines()
    cont = lines[:3] + ["second  part   " + render.NEVER + "   " + "2026-12-01T00:00:00Z" + "   3"]
    (_, reflector) = parse_db_health("\n".join(cont) + "\n")
    assert reflector.error == REFLECTOR["error"] + "\nsecond  part"
    assert (reflector.last_ok, reflector.updated_at, reflector.count) == (render.NEVER, "2026-12-01T00:00:00Z", 3)


@pytest.mark.parametrize(
    ("text", "lineno", "reason", "line"),
    [
        (f"Modules Health:\n{P}└── a   [OK] x (1s, x1)\n", 2, "the tree skips a level", f"{P}└── a   [OK] x (1s, x1)"),
        ("Modules Health:          agent\n", 1, "a tree leaf without [OK|DEGRADED|STOPPED] <message> (<age>, x<count>)", "agent"),
        ("Modules Health:          [OK]\n", 1, "expected Stopped(N) Degraded(N) OK(N) or the module tree", "Modules Health: [OK]"),
    ],
)
def test_tree_shapes_cilium_never_prints(text: str, lineno: int, reason: str, line: str) -> None:
    with pytest.raises(ParseError) as e:
        parse_status_text(text)
    assert str(e.value) == f"status: line {lineno}: {reason}: {shown_line(line)}"


def test_sibling_leaves() -> None:
    h = parse_status_text(f"Modules Health:          agent\n{P}└── m\n{P}    ├── a   [OK] x (1s, x1)\n{P}    └── b   [DEGRADED] y (2s, x2)\n").modules_health
    assert h is not None and [leaf.id for leaf in h.leaves] == ["agent.m.a", "agent.m.b"] and [leaf.level for leaf in h.leaves] == ["OK", "DEGRADED"]


def test_db_health_edge_rows() -> None:
    (row,) = parse_db_health("Module    Level\nagent.x   OK\n")
    assert (row.component, row.message, row.error, row.last_ok, row.updated_at, row.count) == ("", "", "", "", "", 0)
    header = "Module    Level   LastOK                 UpdatedAt              Count"
    with pytest.raises(ParseError) as e:
        parse_db_health(f"{header}\nagent.x   OK                             {render.HEALTH_TIME}   1\n")
    assert str(e.value).startswith("db-health: line 2: LastOK is not an RFC 3339 time: ''")
    with pytest.raises(ParseError) as e:
        parse_db_health(f"{header}\nagent.x   OK      {render.HEALTH_TIME}   soon                   1\n")
    assert str(e.value).startswith("db-health: line 2: UpdatedAt is not an RFC 3339 time: 'soon'")


@pytest.mark.parametrize("tail", [f"{render.NEVER}   {render.HEALTH_TIME}   x", f"{render.NEVER}   later   1", f"never   {render.HEALTH_TIME}   1"])
def test_a_continuation_whose_tail_is_not_times_and_a_count_keeps_the_error_open(tail: str) -> None:
    lines = render.health_table([CONFIG, {**REFLECTOR, "error": REFLECTOR["error"] + "\nsecond"}]).splitlines()
    with pytest.raises(ParseError, match="the last row's Error never ends"):
        parse_db_health("\n".join(lines[:3] + [f"second   {tail}"]) + "\n")


def test_a_row_with_an_empty_lastok_and_count_but_an_updatedat_is_not_a_continued_row() -> None:
    header = "Module    Level   LastOK                 UpdatedAt              Count"
    with pytest.raises(ParseError) as e:
        parse_db_health(f"{header}\nagent.x   OK                             {render.HEALTH_TIME}        \n")
    assert str(e.value).startswith("db-health: line 2: LastOK is not an RFC 3339 time: ''")


def test_more_db_health_edges() -> None:
    header = "Module    Level   LastOK                 UpdatedAt              Count"
    with pytest.raises(ParseError) as e:  # a Count but no times: a row, not a continued one
        parse_db_health(f"{header}\nagent.x   OK                                                    4\n")
    assert str(e.value).startswith("db-health: line 2: LastOK is not an RFC 3339 time: ''")
    lines = render.health_table([{**REFLECTOR, "error": REFLECTOR["error"] + "\nsecond"}]).splitlines()
    with pytest.raises(ParseError) as e:  # the first row's Error never ends
        parse_db_health("\n".join(lines[:2]) + "\n")
    assert str(e.value) == f"db-health: line 2: the last row's Error never ends: {shown(lines[1])}"
    cont = lines[:2] + ["a  b  c   " + render.NEVER + "   " + render.HEALTH_TIME + "   5"]
    (row,) = parse_db_health("\n".join(cont) + "\n")
    assert row.error == REFLECTOR["error"] + "\na  b  c" and row.count == 5
