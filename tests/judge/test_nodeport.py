"""The NodePort judgement (pytest_kpr.judge.nodeport), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.nodeport import (
    NodePortObservation,
    nodeport_frontend_problems,
    nodeport_http_problems,
    nodeport_listener_problems,
    nodeport_rule_problems,
)
from pytest_kpr.parse import parse_ss

from .tables import KIND_NAT, _services, views


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


def _seen(http_code: int | None = 200, curl_exit: int | None = 0, dumps: dict | None = None) -> NodePortObservation:
    return NodePortObservation("IPv4", "w1", "172.18.0.3", 30780, http_code, curl_exit, views()["n1"] if dumps is None else dumps,
                               (), (), 7)


@pytest.mark.parametrize(("http_code", "curl_exit", "want"), [
    (200, 0, []),
    (0, 7, ["172.18.0.3:30780 answered 0 (curl exit 7)"]),
    (None, 28, ["172.18.0.3:30780 answered None (curl exit 28)"]),
    (503, 0, ["172.18.0.3:30780 answered 503 (curl exit 0)"]),
])
def test_nodeport_http_judgement(http_code: int | None, curl_exit: int | None, want: list[str]) -> None:
    assert nodeport_http_problems(_seen(http_code, curl_exit)) == want


def test_nodeport_rule_judgement_reads_every_view_and_names_the_port() -> None:
    assert nodeport_rule_problems(_seen()) == []
    named = KIND_NAT.replace("COMMIT", "-A KUBE-NODEPORTS -p tcp --dport 30780 -j KUBE-EXT-X\nCOMMIT")
    (p,) = nodeport_rule_problems(_seen(dumps=views(named)["n1"]))
    assert "30780" in p and p.startswith("w1")
    (q,) = nodeport_rule_problems(_seen(dumps=views(legacy=None)["n1"]))
    assert q.startswith("w1: the iptables-legacy view could not be read")


def test_the_observation_is_nodeport_json() -> None:
    assert _seen().to_json() == {"family": "IPv4", "node_ip": "172.18.0.3", "node_port": 30780, "http_code": 200, "curl_exit": 0,
                                 "iptables_lines": 0, "rule_lines": {"iptables-nft": 0, "iptables-legacy": 0, "ip6tables-nft": 0,
                                                                     "ip6tables-legacy": 0, "nft": 0}, "listen_sockets": 0, "service_id": 7}


def test_the_nodeport_evidence_counts_what_names_the_port() -> None:
    named = KIND_NAT.replace("COMMIT", "-A KUBE-NODEPORTS -p tcp --dport 30780 -j KUBE-EXT-X\nCOMMIT", 1)
    socks = tuple(parse_ss("LISTEN 0      4096   0.0.0.0:30780 0.0.0.0:*\nLISTEN 0      4096   0.0.0.0:10250 0.0.0.0:*\n"))
    n = NodePortObservation("IPv6", "w1", "fc00::3", 30780, 0, 7, views(named, legacy=None)["n1"], socks, (), None)
    assert n.to_json() == {"family": "IPv6", "node_ip": "fc00::3", "node_port": 30780, "http_code": 0, "curl_exit": 7, "iptables_lines": 1,
                           "rule_lines": {"iptables-nft": 1, "iptables-legacy": "unreadable", "ip6tables-nft": 0, "ip6tables-legacy": 0, "nft": 0},
                           "listen_sockets": 1, "service_id": None}
