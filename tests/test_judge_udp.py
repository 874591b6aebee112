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
