"""Module health: the `Modules Health` tally and tree in `cilium-dbg status [--verbose]`, and `db/show health`
(`kpr parse status`, `kpr parse db-health`). Formats: pytest_kpr/datapath.py FORMAT_RULES and parse/health.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_kpr_parse_cli import kpr_parse

from pytest_kpr.parse import ParseError, parse_db_health, parse_status_text
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


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Modules Health:          Stopped(0) Degraded(x) OK(1)\n", "expected Stopped(N) Degraded(N) OK(N) or the module tree"),
        ("Modules Health:          agent\n                         ├── a   [OK] fine (1s, x1)\n"
         "                         │       └── b   [OK] x (1s, x1)\n", "skips a level"),
        ("Modules Health:          agent\n                         └── a   [OK] fine (1s, x1)\n"
         "                             └── b   [OK] x (1s, x1)\n", "a health reporter with children"),
        ("Modules Health:          agent\n                         └── a   [MAYBE] fine (1s, x1)\n", "not a module health tree line"),
        ("Modules Health:          agent\n                         └── a   [OK] fine (soon, x1)\n", "a tree leaf without"),
        ("Modules Health:          agent\n                         └── a   [OK] fine (1s, xN)\n", "a tree leaf without"),
        ("Modules Health:          agent\n                         │   a   [OK] fine (1s, x1)\n", "without ├── or └──"),
    ],
)
def test_malformed_health_is_a_parse_error(text: str, words: str) -> None:
    with pytest.raises(ParseError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_status_text(text)


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


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda t: t.replace("Degraded   ", "Unwell     ", 1), "unknown level 'Unwell'"),
        (lambda t: t.replace(render.HEALTH_TIME, "yesterday           ", 1), "LastOK is not an RFC 3339 time"),
        (lambda t: t.replace("   1       \n", "   one     \n", 1), "Count is not a number"),
        (lambda t: t.replace("Module ", "Modul  ", 1), "not a db-health table header"),
        (lambda t: "", "no header"),
        (lambda t: t.rsplit("\n", 2)[0] + "\n", "never ends"),
    ],
)
def test_malformed_db_health_is_a_parse_error(mutate: object, words: str) -> None:
    text = render.health_table([CONFIG, {**REFLECTOR, "error": REFLECTOR["error"] + "\nsecond error"}])
    with pytest.raises(ParseError, match=words):
        parse_db_health(mutate(text))  # type: ignore[operator]


def test_kpr_parse_db_health() -> None:
    cp = kpr_parse("db-health", render.health_table([CONFIG, REFLECTOR]))
    assert cp.returncode == 0, cp.stderr
    out = json.loads(cp.stdout)
    assert out[1]["module"] == "agent.controlplane.loadbalancer-reflectors" and out[1]["error"] == REFLECTOR["error"]
    bad = kpr_parse("db-health", "Module Level\nx Sick\n")
    assert bad.returncode == 1 and bad.stdout == "" and "db-health: line 2" in bad.stderr
