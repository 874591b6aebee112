"""Which drop reasons rose between two readings of the agents' `bpf metrics list`: a table, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.parse.errors import ParseError
from pytest_kpr.parse.metrics import MetricRow, drops_that_rose, parse_bpf_metrics_list

NF = "Service backend not found"


def row(reason: str, packets: int, direction: str = "egress", line: int | None = 1286, file: str | None = "bpf_lxc.c") -> MetricRow:
    return MetricRow(reason, direction, packets, packets * 60, line, file)


@pytest.mark.parametrize(("before", "after", "expected"), [
    ({}, {}, []),
    ({"w": [row(NF, 2)]}, {"w": [row(NF, 5)]}, [f"{NF} x3 on w (egress, bpf_lxc.c:1286)"]),
    ({"w": [row(NF, 5)]}, {"w": [row(NF, 5)]}, []),  # unchanged: not this failure's
    ({}, {"w": [row(NF, 4)]}, [f"{NF} x4 on w (egress, bpf_lxc.c:1286)"]),  # an agent not read before counts from zero
    ({"w": [row("Success", 10)]}, {"w": [row("Success", 90), row("Interface", 3)]}, []),  # forwards are not drops
    ({"w": [row(NF, 1, line=10)]}, {"w": [row(NF, 1, line=10), row(NF, 2, line=20)]}, [f"{NF} x2 on w (egress, bpf_lxc.c:20)"]),
    ({}, {"a": [row(NF, 1)], "b": [row("Policy denied", 7, "ingress", None, None)]},
     ["Policy denied x7 on b (ingress)", f"{NF} x1 on a (egress, bpf_lxc.c:1286)"]),  # the largest first
])
def test_drops_that_rose(before: dict, after: dict, expected: list[str]) -> None:
    assert [str(d) for d in drops_that_rose(before, after)] == expected


@pytest.mark.parametrize("text", [
    "Success   EGRESS   1   2\n",  # no header
    "REASON   DIRECTION   PACKETS   BYTES   LINE   FILE\nSuccess   EGRESS   x   2   3   a.c\n",
    "REASON   DIRECTION   PACKETS   BYTES\nSuccess   EGRESS   1\n",
])
def test_what_is_not_the_format_is_refused_with_its_line(text: str) -> None:
    with pytest.raises(ParseError, match="bpf-metrics-list: line"):
        parse_bpf_metrics_list(text)


def test_no_entries_is_an_empty_list() -> None:
    assert parse_bpf_metrics_list("") == []  # "No entries found." goes to stderr


def test_the_drop_baseline_is_read_with_each_agents_status_in_one_exec() -> None:
    """Drops counted before the suites (here: two on fake-worker when the run begins) are the baseline, read in the
    readiness exec itself, so a failure later names only what rose after it."""
    from pytest_kpr.core.wait import Timeouts
    from pytest_kpr.observe.readiness import drop_baseline, wait_ready
    from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

    fake = FakeCluster(FakeConfig())
    handle = FakeProvider(fake).provision(lambda line: None)
    for _ in range(2):
        fake.agents["fake-worker"].count(NF, "ingress", 1, "nodeport.h")
    execs = []
    real_exec = handle.kube.exec
    handle.kube.exec = lambda *a, **kw: execs.append(a) or real_exec(*a, **kw)  # type: ignore[method-assign]
    states = wait_ready(handle.kube, Timeouts().scaled(0.05), lambda line: None)
    assert len(execs) == 3, "one exec per agent: the status and the counters together"
    base = drop_baseline(states)
    assert sorted(base) == ["fake-control-plane", "fake-worker", "fake-worker2"]
    assert [(r.reason, r.packets) for r in base["fake-worker"] if r.reason == NF] == [(NF, 2)]
    fake.agents["fake-worker"].count(NF, "ingress", 1, "nodeport.h")
    now = {s.node: s.drops for s in wait_ready(handle.kube, Timeouts().scaled(0.05), lambda line: None)}
    assert [str(d) for d in drops_that_rose(base, now)] == [f"{NF} x1 on fake-worker (ingress, nodeport.h:1)"]


def test_a_failure_snapshot_carries_the_drop_counters_it_read() -> None:
    """The failure bundle's drop counters are parsed where they are read (observe.diagnose.FailureSnapshot.drops), beside
    the text written to the bundle: the plugin compares them with the baseline without parsing the text back."""
    from pytest_kpr.observe.diagnose import failure_snapshot
    from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

    fake = FakeCluster(FakeConfig())
    handle = FakeProvider(fake).provision(lambda line: None)
    for _ in range(3):
        fake.agents["fake-worker"].count(NF, "ingress", 1, "nodeport.h")
    snap = failure_snapshot(handle, [], 5.0)
    assert sorted(snap.drops) == ["fake-control-plane", "fake-worker", "fake-worker2"]
    assert [(r.reason, r.packets) for r in snap.drops["fake-worker"] if r.reason == NF] == [(NF, 3)]
    assert "fake-worker: bpf metrics list" in snap.sections and snap.pods == []
    assert [str(d) for d in drops_that_rose({}, snap.drops)] == [f"{NF} x3 on fake-worker (ingress, nodeport.h:1)"]
