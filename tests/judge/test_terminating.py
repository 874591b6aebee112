"""Terminating-backend judgements (pytest_kpr.judge.terminating): table-driven, no cluster, no root."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.terminating import draining_flow_problems, new_connection_problems

CLEAN = {"resets": 0, "closed": 0, "stalls": 0, "reconnects": 0, "max_gap_ms": 50.0}


@pytest.mark.parametrize(("report", "problems"), [
    (CLEAN, []),
    ({**CLEAN, "resets": 1, "reconnects": 1},
     ["the established connection to term-a was interrupted while it terminated: 1 resets, 1 reconnects (its active connections must be "
      "able to terminate gracefully)"]),
    ({**CLEAN, "closed": 1, "reconnects": 1},
     ["the established connection to term-a was interrupted while it terminated: 1 closed, 1 reconnects (its active connections must be "
      "able to terminate gracefully)"]),
    ({**CLEAN, "max_gap_ms": 1500.0}, ["the established connection to term-a went silent for 1500 ms while it terminated (bound 1000 ms)"]),
    ({**CLEAN, "max_gap_ms": 1000.0}, []),
    ({}, ["the flow to term-a printed no summary, so whether it kept working is unknown"]),
], ids=["kept", "reset", "closed", "silent", "at-the-bound", "no-summary"])
def test_draining_flow(report: dict, problems: list[str]) -> None:
    assert draining_flow_problems(report, "term-a", 1000.0) == problems


A, B = {"10.0.0.2:7000": "term-b"}, {"10.0.0.1:7000": "term-a"}


@pytest.mark.parametrize(("peers", "problems"), [
    (["10.0.0.2:7000"] * 3, []),
    (["10.0.0.2:7000", "10.0.0.1:7000", "10.0.0.1:7000"],
     ["while term-a terminates: 2 of 3 new connections reached term-a, which should not be picked"]),
    (["10.0.0.2:7000", "10.9.9.9:7000"], ["while term-a terminates: 1 of 2 new connections reached 10.9.9.9:7000, no backend of the Service"]),
    (["10.0.0.2:7000", None], ["while term-a terminates: 1 of 2 new connections failed although term-b is there to serve them"]),
    ([], ["while term-a terminates: no new connection was made, so which backends they reach is unknown"]),
], ids=["active-only", "picked-terminating", "stray", "failed", "none"])
def test_new_connections(peers: list, problems: list[str]) -> None:
    assert new_connection_problems(peers, A, B, "while term-a terminates") == problems
