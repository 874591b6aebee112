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


@pytest.mark.parametrize(("outlived", "want"), [
    (True, []),
    (False, ["term-a was gone before the flow was stopped (its preStop holds it 300 s); nothing can be said of its connection"]),
])
def test_the_flow_must_be_stopped_while_its_backend_still_terminates(outlived: bool, want: list[str]) -> None:
    from pytest_kpr.judge.terminating import flow_outlived_problems

    assert flow_outlived_problems(outlived, "term-a", 300) == want


def test_the_observation_is_terminating_json() -> None:
    from pytest_kpr.model.probe import ProbeAnswer
    from pytest_kpr.judge.terminating import SlotsSeen, TerminatingObservation

    a, b = "10.244.1.5:7000", "10.244.2.6:7000"
    obs = TerminatingObservation("IPv4", None, True, 300, {"term-a": a, "term-b": b}, "10.96.0.20:7000", "w1",
                                 {"one": {a: "active"}}, {"a_terminating": SlotsSeen((b,), (a,))}, (b, None, "10.9.9.9:1"), (a,),
                                 ProbeAnswer("10.96.0.20:7000", "connected", None, 1.5), "term-flow", True, {"resets": 0}, "6.8.0", "reject")
    assert obs.pod_of(a) == "term-a" and obs.pod_of("10.9.9.9:1") == "10.9.9.9:1" and obs.pod_of(None) is None
    assert obs.to_json() == {
        "family": "IPv4", "enable_k8s_terminating_endpoint": None, "hold_s": 300, "backends": {"term-a": a, "term-b": b},
        "service": "10.96.0.20:7000", "agent": {"node": "w1", "states": {"one": {a: "active"}},
                                                 "slots": {"a_terminating": {"selectable": [b], "kept": [a]}}},
        "new_connections": {"a_terminating": ["term-b", None, "10.9.9.9:1"], "only_terminating": ["term-a"]},
        "only_terminating_probe": {"verdict": "connected", "errno": None, "elapsed_ms": 1.5},
        "flow": {"pod": "term-flow", "backend": "term-a", "term_a_still_terminating_at_stop": True, "summary": {"resets": 0}},
        "client_kernel": "6.8.0", "no_backend_response": "reject"}
