"""The ICMP-error judgement (pytest_kpr.judge.icmp_errors) and when it applies (rules.datapath.icmp_error_judged), branch by
branch: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.icmp_errors import IcmpErrorObservation, icmp_error_problems
from pytest_kpr.rules.datapath import icmp_error_judged

CLIENT, TARGET = "172.18.0.1:45123", "172.18.0.3:30000"


def obs(verdict: str = "icmp-unreachable", icmp: tuple[int, int] | None = (3, 4), inner: tuple[str | None, str | None] = (CLIENT, TARGET),
        answered: int | None = 1) -> IcmpErrorObservation:
    return IcmpErrorObservation("IPv4", TARGET, CLIENT, verdict, icmp, inner[0], inner[1], 1200, "ie-backend on w2", answered=answered)


@pytest.mark.parametrize(("o", "problems"), [
    (obs(), []),
    (obs("timeout", None, (None, None)), ["no ICMP error came back to 172.18.0.1:45123 for its datagram to 172.18.0.3:30000 (timeout), "
                                          "though ie-backend on w2 answered it with fragmentation needed (1 logged): the reverse NAT did not "
                                          "carry it back"]),
    # the responder never saw it: the request's path, not the error's, is broken
    (obs("timeout", None, (None, None), answered=0), ["no ICMP error came back to 172.18.0.1:45123 for its datagram to 172.18.0.3:30000 "
                                                      "(timeout), and ie-backend on w2 logged no datagram: the NodePort did not forward it"]),
    (obs("timeout", None, (None, None), answered=None), ["(timeout); whether ie-backend on w2 got the datagram is not known (its log "
                                                         "could not be read): the NodePort did not forward it, or the reverse NAT"]),
    (obs(icmp=(3, 3)), ["the error that came back is ICMP 3/3, not fragmentation needed (3/4)"]),
    (obs(inner=("10.244.1.5:32768", "10.244.2.9:7000")), ["the error carries 10.244.1.5:32768 -> 10.244.2.9:7000, not the datagram as sent, "
                                                         "172.18.0.1:45123 -> 172.18.0.3:30000: its inner header was not reverse-translated"]),
    (obs(inner=(CLIENT, "10.244.2.9:7000")), ["the error carries 172.18.0.1:45123 -> 10.244.2.9:7000"]),  # half translated
])
def test_the_icmp_error_judgement(o: IcmpErrorObservation, problems: list[str]) -> None:
    got = icmp_error_problems(o)
    assert len(got) == len(problems) and all(w in g for w, g in zip(problems, got, strict=True)), got


@pytest.mark.parametrize(("mode", "family", "judged"), [
    ("SNAT", "IPv4", True), ("Hybrid", "IPv4", True),  # Hybrid SNATs the UDP request
    ("DSR", "IPv4", False), ("SNAT", "IPv6", False),
])
def test_where_the_reverse_nat_of_an_icmp_error_is_judged(mode: str, family: str, judged: bool) -> None:
    assert (icmp_error_judged(mode, family) == "") is judged
