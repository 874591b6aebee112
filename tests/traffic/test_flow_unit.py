"""The flow meter's bookkeeping, without a network (tests/test_realkernel_flow.py measures real disruptions)."""

from __future__ import annotations

import io
import json

import pytest

from pytest_kpr.traffic.flow import FlowReport, _Meter


def meter(out: io.StringIO | None = None) -> _Meter:
    return _Meter("10.0.0.1", 7100, udp=False, interval_ms=10, duration_s=1, stall_ms=3000, report_gap_ms=100, out=out, connect_timeout=1)


@pytest.mark.parametrize(("ms", "listed", "line"), [
    (10.0, False, False),  # the cadence
    (19.9, False, False),  # under two intervals: jitter, not a gap
    (20.0, True, False),  # two intervals: a gap, listed
    (99.9, True, False),
    (100.0, True, True),  # at the report threshold: also a JSON line as it ends
    (310.0, True, True),
])
def test_a_gap_is_listed_from_two_intervals_and_printed_from_the_report_threshold(ms: float, listed: bool, line: bool) -> None:
    out = io.StringIO()
    m = meter(out)
    m.gap(100.0, 100.0 + ms / 1000.0)
    assert (len(m.r.gaps) == 1) is listed and bool(out.getvalue()) is line
    assert m.r.max_gap_ms == pytest.approx(ms), "every interval counts toward the longest gap"
    if line:
        assert json.loads(out.getvalue()) == {"kind": "gap", **m.r.gaps[0]}


def test_an_open_gap_at_the_end_says_so() -> None:
    m = meter()
    m.gap(100.0, 101.5, open_=True)
    assert m.r.gaps[0]["open"] is True and m.r.max_gap_ms == pytest.approx(1500.0)


def test_the_summary_has_what_a_gate_judges() -> None:
    r = FlowReport("tcp", "10.0.0.1:7100", 10, 2, sent=200, answered=190, resets=1, reconnects=1, rtts_ms=[0.2, 0.3, 0.25], late_ms=[0.1] * 10)
    j = r.to_json()
    assert j["lost"] == 10 and j["resets"] == 1 and j["reconnects"] == 1
    assert j["rtt_ms"] == {"median": 0.25, "p99": 0.3, "max": 0.3} and j["send_late_ms"]["median"] == 0.1
    assert r.explain() == "tcp flow to 10.0.0.1:7100: 200 sent, 10 lost, longest gap 0 ms, 1 resets, 1 reconnects"
    assert FlowReport("udp", "x:1", 10, 1).to_json()["rtt_ms"] is None
