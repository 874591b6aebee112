"""The UDP judgement (pytest_kpr.judge.udp) as a table, and the no-backend judgement for an unconnected datagram: no
root, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.no_backend import NoBackendAttempt, no_backend_problems
from pytest_kpr.judge.udp import UdpAttempt, udp_reply_problems
from pytest_kpr.rules.datapath import Plane, no_backend

SVC = "10.96.0.53:53"
BES = frozenset({"10.244.1.7:5353", "10.244.2.9:5353", "[fd00:10:244:1::7]:5353"})


@pytest.mark.parametrize(("attempt", "want"), [
    (UdpAttempt("unconnected", SVC, "answered", reply_from=SVC), []),
    (UdpAttempt("connected", SVC, "answered", reply_from=SVC, peer=SVC), []),
    (UdpAttempt("unconnected", SVC, "answered", reply_from="10.244.1.7:5353"),
     ["UDP (unconnected client to 10.96.0.53:53): the reply came from 10.244.1.7:5353, not from 10.96.0.53:53 (the backend's own "
      "address: the socket LB's recvmsg4 reverse translation is missing); a resolver that sent to 10.96.0.53:53 drops it"]),
    (UdpAttempt("unconnected", SVC, "answered", reply_from="10.96.0.53:5353"),
     ["UDP (unconnected client to 10.96.0.53:53): the reply came from 10.96.0.53:5353, not from 10.96.0.53:53 (neither the Service "
      "nor one of its backends); a resolver that sent to 10.96.0.53:53 drops it"]),
    (UdpAttempt("connected", SVC, "answered", reply_from=SVC, peer="10.244.2.9:5353"),
     ["UDP (connected client to 10.96.0.53:53): getpeername() returned 10.244.2.9:5353, not 10.96.0.53:53: the getpeername4 "
      "reverse translation is missing"]),
    (UdpAttempt("connected", SVC, "answered", reply_from="10.244.2.9:5353", peer="10.244.2.9:5353"),
     ["UDP (connected client to 10.96.0.53:53): the reply came from 10.244.2.9:5353, not from 10.96.0.53:53 (the backend's own "
      "address: the socket LB's recvmsg4 reverse translation is missing); a resolver that sent to 10.96.0.53:53 drops it",
      "UDP (connected client to 10.96.0.53:53): getpeername() returned 10.244.2.9:5353, not 10.96.0.53:53: the getpeername4 "
      "reverse translation is missing"]),
    # IPv6: the words name the family's hooks (recvmsg6, getpeername6)
    (UdpAttempt("connected", "[fd00:10:96::35]:53", "answered", reply_from="[fd00:10:244:2::9]:5353", peer="[fd00:10:244:2::9]:5353"),
     ["UDP (connected client to [fd00:10:96::35]:53): the reply came from [fd00:10:244:2::9]:5353, not from [fd00:10:96::35]:53 (neither "
      "the Service nor one of its backends); a resolver that sent to [fd00:10:96::35]:53 drops it",
      "UDP (connected client to [fd00:10:96::35]:53): getpeername() returned [fd00:10:244:2::9]:5353, not [fd00:10:96::35]:53: the "
      "getpeername6 reverse translation is missing"]),
    (UdpAttempt("unconnected", "[fd00:10:96::35]:53", "answered", reply_from="[fd00:10:244:1::7]:5353"),
     ["UDP (unconnected client to [fd00:10:96::35]:53): the reply came from [fd00:10:244:1::7]:5353, not from [fd00:10:96::35]:53 (the "
      "backend's own address: the socket LB's recvmsg6 reverse translation is missing); a resolver that sent to [fd00:10:96::35]:53 drops it"]),
    (UdpAttempt("unconnected", SVC, "timeout"),
     ["UDP (unconnected client to 10.96.0.53:53): timeout, expected a reply: the Service has backends 10.244.1.7:5353, 10.244.2.9:5353, "
      "[fd00:10:244:1::7]:5353"]),
    (UdpAttempt("connected", SVC, "refused", errno="ECONNREFUSED"),
     ["UDP (connected client to 10.96.0.53:53): refused (ECONNREFUSED), expected a reply: the Service has backends 10.244.1.7:5353, "
      "10.244.2.9:5353, [fd00:10:244:1::7]:5353"]),
])
def test_udp_reply_problems(attempt: UdpAttempt, want: list[str]) -> None:
    assert udp_reply_problems(attempt, BES) == want


@pytest.mark.parametrize(("verdict", "errno", "seconds", "kernel", "words"), [
    ("unreachable", "EHOSTUNREACH", 0.001, (6, 1), None),
    ("unreachable", "EPERM", 0.001, (5, 10), None),
    ("unreachable", "EPERM", 0.001, (6, 12), "sendto() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression"),
    ("timeout", None, 2.0, (6, 12), "sendto() gave timeout after 2.00s; expected unreachable at once"),
])
def test_a_backendless_udp_datagram_is_judged_by_the_socket_planes_rule(verdict: str, errno: str | None, seconds: float,
                                                                      kernel: tuple[int, int], words: str | None) -> None:
    a = NoBackendAttempt("pod sendto() to ClusterIP 10.96.0.54:53", "sendto", verdict, seconds, errno)
    problems = no_backend_problems(a, no_backend(Plane.SOCKET, "drop", kernel=kernel), "drop")
    if words is None:
        assert problems == []
    else:
        assert len(problems) == 1 and words in problems[0], problems


BE_A = "udpterm-a (10.244.2.11:5353)"
TERMINATED = {"aborted": 1, "reconnects": 1, "lost": 1, "max_gap_ms": 100.0, "gaps": [{"start": 1.0, "ms": 100.0}]}


@pytest.mark.parametrize(("report", "bound_ms", "want"), [
    (TERMINATED, 5000.0, []),
    # the agent never terminated it: the socket keeps sending into the deleted pod, and is never answered again
    ({"aborted": 0, "reconnects": 0, "lost": 40, "max_gap_ms": 2000.0, "gaps": [{"start": 1.0, "ms": 2000.0, "open": True}]}, 5000.0,
     [f"the connected socket to the deleted backend {BE_A} was not terminated (no ECONNABORTED): 40 datagrams lost, and it was never "
      "answered again; the agent terminates the UDP sockets connected to a deleted backend, so the client reconnects through the Service"]),
    # per packet, nothing to terminate and nothing lost: still no termination where the plane says there is one
    ({"aborted": 0, "reconnects": 0, "lost": 0, "max_gap_ms": 50.0, "gaps": []}, 5000.0,
     [f"the connected socket to the deleted backend {BE_A} was not terminated (no ECONNABORTED): 0 datagrams lost; the agent "
      "terminates the UDP sockets connected to a deleted backend, so the client reconnects through the Service"]),
    ({**TERMINATED, "reconnects": 0}, 5000.0, [f"the socket to {BE_A} was terminated (1 aborted) but the flow never reconnected"]),
    ({**TERMINATED, "gaps": [{"start": 1.0, "ms": 900.0, "open": True}], "max_gap_ms": 900.0}, 5000.0,
     [f"after its socket to {BE_A} was terminated the flow was never answered again (silent for the last 900 ms)"]),
    ({**TERMINATED, "max_gap_ms": 7000.0}, 5000.0, [f"the flow went silent for 7000 ms when {BE_A} was deleted (bound 5000 ms)"]),
    ({}, 5000.0, [f"the flow to {BE_A} printed no summary, so what its socket saw is unknown"]),
])
def test_a_connected_client_of_a_deleted_backend_is_judged_by_its_flow(report: dict, bound_ms: float, want: list[str]) -> None:
    from pytest_kpr.judge.udp import udp_termination_problems

    assert udp_termination_problems(report, BE_A, bound_ms) == want


@pytest.mark.parametrize(("value", "coverage", "terminated"), [
    (None, "Full", True), ("true", "Full", True), ("false", "Full", False), (None, "Hostns-only", False),
])
def test_pods_udp_sockets_are_terminated_with_socket_lb_in_pods_and_the_option_on(value: str | None, coverage: str, terminated: bool) -> None:
    from pytest_kpr.rules.datapath import pod_udp_sockets_terminated

    assert pod_udp_sockets_terminated(value, coverage) is terminated


def test_a_printed_probe_becomes_an_attempt_and_the_observations_are_their_evidence_files() -> None:
    from pytest_kpr.judge.udp import UdpObservation, UdpTermination, udp_attempt

    printed = {"mode": "connected", "target": "10.96.0.39:53", "verdict": "answered", "reply_from": "10.96.0.39:53",
               "peer": "10.96.0.39:53", "elapsed_ms": 0.4}
    a = udp_attempt(printed)
    assert (a.mode, a.target, a.verdict, a.reply_from, a.peer, a.errno) == ("connected", "10.96.0.39:53", "answered", "10.96.0.39:53",
                                                                           "10.96.0.39:53", None)
    ghost = udp_attempt({"mode": "unconnected", "target": "10.96.0.40:53", "verdict": "unreachable", "errno_name": "EHOSTUNREACH"})
    assert ghost.errno == "EHOSTUNREACH"
    obs = UdpObservation("IPv4", "10.96.0.39:53", ("10.244.1.5:5353",), "10.96.0.40:53", a, a, ghost, 0.2, {"connected": printed},
                         {"node": "w1"}, "6.8.0", "reject")
    assert obs.to_json() == {"family": "IPv4", "service": "10.96.0.39:53", "backends": ["10.244.1.5:5353"], "ghost": "10.96.0.40:53",
                             "probes": {"connected": printed}, "agent": {"node": "w1"}, "client_kernel": "6.8.0", "no_backend_response": "reject"}
    t = UdpTermination("IPv4", None, "10.96.0.41:53", {"udpterm-a": "10.244.2.6:5353"}, "udpterm-a", 61500.0, "udpterm-flow", {"resets": 0})
    assert t.to_json() == {"family": "IPv4", "enable_socket_lb_pod_connection_termination": None, "service": "10.96.0.41:53",
                           "backends": {"udpterm-a": "10.244.2.6:5353"}, "deleted": "udpterm-a", "bound_ms": 61500.0,
                           "flow": {"pod": "udpterm-flow", "summary": {"resets": 0}}}
