"""The NodePort judgement (pytest_kpr.judge.nodeport), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.nodeport import nodeport_frontend_problems, nodeport_listener_problems
from pytest_kpr.parse import parse_ss

from .tables import _services


def test_nodeport_listener_judgement() -> None:
    socks = parse_ss("LISTEN 0      4096   0.0.0.0:10250 0.0.0.0:*\nLISTEN 0      4096   0.0.0.0:30780 0.0.0.0:*\n")
    assert nodeport_listener_problems(socks[:1], 30780) == []
    (p,) = nodeport_listener_problems(socks, 30780)
    assert p.startswith("1 sockets listen on :30780 on the node (['0.0.0.0:30780'])")


@pytest.mark.parametrize(
    ("entries", "family", "ok"),
    [
        ((("0.0.0.0", 30780, "NodePort"),), "IPv4", True),
        ((("0.0.0.0", 30781, "NodePort"),), "IPv4", False),  # another port
        ((("172.18.0.3", 30780, "NodePort"),), "IPv4", False),  # not the wildcard
        ((("0.0.0.0", 30780, "HostPort"),), "IPv4", False),  # not a NodePort
        ((), "IPv4", False),
        # IPv6: the Service's IPv6 family gets its own wildcard frontend, [::]:<port> (SRC_NODEPORT_WILDCARD)
        ((("0.0.0.0", 30780, "NodePort"), ("::", 30780, "NodePort")), "IPv6", True),
        ((("0.0.0.0", 30780, "NodePort"),), "IPv6", False),  # the IPv4 wildcard only: IPv6 is not served
        ((("::", 30780, "NodePort"),), "IPv4", False),  # and the other way round
        ((("fc00:f853:ccd:e793::3", 30780, "NodePort"),), "IPv6", False),  # a node address, not the wildcard
        ((("::", 30781, "NodePort"),), "IPv6", False),  # another port
    ],
)
def test_nodeport_frontend_judgement(entries: tuple, family: str, ok: bool) -> None:
    problems = nodeport_frontend_problems(_services(*entries), 30780, family)
    assert (problems == []) is ok
    if not ok:
        assert problems[0].startswith(f"the agent lists no {'[::]' if family == 'IPv6' else '0.0.0.0'}:30780 NodePort frontend")
