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
