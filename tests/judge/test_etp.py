"""The eTP=Local judgement (pytest_kpr.judge.etp), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.etp import client_address_problems, etp_reach_problems, health_check_problems


@pytest.mark.parametrize(("local", "cluster", "fragments"), [
    ({"b": "accepted", "c": "icmp-unreachable"}, {"b": "accepted", "c": "accepted"}, []),
    ({"b": "accepted", "c": "timeout"}, {"b": "accepted", "c": "accepted"}, []),  # drop, or enable-no-service-endpoints-routable off
    ({"b": "accepted", "c": "accepted"}, {"b": "accepted", "c": "accepted"}, ["c, which has no local backend, served it"]),
    ({"b": "timeout", "c": "icmp-unreachable"}, {"b": "accepted", "c": "accepted"}, ["the node with the backend (b) did not serve it from outside: timeout"]),
    ({"b": "accepted", "c": "reset"}, {"b": "accepted", "c": "timeout"}, ["externalTrafficPolicy=Cluster on the same backend was not served by c (timeout)"]),
    ({}, {}, ["the node with the backend (b) did not serve it from outside: None"]),
])
def test_etp_reach_judgement(local: dict, cluster: dict, fragments: list[str]) -> None:
    problems = etp_reach_problems(local, cluster, "b")
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


ETP_SVC = ("ns", "etp-local")


OK_BODY = {"service": {"namespace": "ns", "name": "etp-local"}, "localEndpoints": 1}


NONE_BODY = {"service": {"namespace": "ns", "name": "etp-local"}, "localEndpoints": 0}


@pytest.mark.parametrize(("answers", "fragments"), [
    ({"a": (503, NONE_BODY), "b": (200, OK_BODY)}, []),
    ({"a": (200, OK_BODY), "b": (200, OK_BODY)}, ["a answered HTTP 200 with localEndpoints 1, expected 503 with 0"]),
    ({"a": (503, NONE_BODY), "b": (503, NONE_BODY)}, ["b answered HTTP 503 with localEndpoints 0, expected 200 with 1"]),
    ({"a": (0, None), "b": (200, OK_BODY)}, ["a answered HTTP nothing with localEndpoints None"]),
    ({"a": (503, NONE_BODY), "b": (200, {**OK_BODY, "service": {"namespace": "ns", "name": "other"}})}, ["b answered for {'namespace': 'ns', 'name': 'other'}"]),
    ({"a": (503, "not json"), "b": (200, OK_BODY)}, ["a answered HTTP 503 with localEndpoints None"]),
])
def test_health_check_judgement(answers: dict, fragments: list[str]) -> None:
    problems = health_check_problems(answers, {"a": 0, "b": 1}, ETP_SVC)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("seen", "expect", "internal", "fragment"), [
    ("1.1.1.1", "client", "10.0.0.1", None),
    ("2.2.2.2", "node", "10.0.0.1", None),
    ("10.0.0.1", "cilium-internal-ip", "10.0.0.1", None),
    ("2.2.2.2", "client", "10.0.0.1", "saw 2.2.2.2 (the receiving node's InternalIP), expected 1.1.1.1 (the client: why)"),
    ("1.1.1.1", "node", "10.0.0.1", "saw 1.1.1.1 (the client's address), expected 2.2.2.2 (the receiving node's InternalIP: why)"),
    # tunnel routing: the SNAT address is the cilium_host one; the InternalIP there is the swapped-address fault
    ("2.2.2.2", "cilium-internal-ip", "10.0.0.1", "saw 2.2.2.2 (the receiving node's InternalIP), expected 10.0.0.1 (the receiving node's "
                                                  "CiliumInternalIP: why)"),
    ("10.0.0.1", "node", "10.0.0.1", "saw 10.0.0.1 (the receiving node's CiliumInternalIP), expected 2.2.2.2"),
    ("3.3.3.3", "client", "10.0.0.1", "(neither the client's nor the node's address)"),
    ("10.0.0.1", "cilium-internal-ip", "", "the receiving node's CiliumInternalIP is unknown (CiliumNode not readable)"),
    (None, "client", "10.0.0.1", "no backend logged the request"),
])
def test_client_address_judgement(seen: str | None, expect: str, internal: str, fragment: str | None) -> None:
    problems = client_address_problems(seen, "1.1.1.1", "2.2.2.2", expect, "why", internal)
    assert (fragment is None and not problems) or (fragment is not None and len(problems) == 1 and fragment in problems[0]), problems


@pytest.mark.parametrize(("verdict", "want"), [
    ("connected", []),
    ("unreachable", ["unreachable; externalTrafficPolicy must not apply to in-cluster traffic"]),
    ("timeout", ["timeout; externalTrafficPolicy must not apply to in-cluster traffic"]),
])
def test_the_cluster_ip_judgement(verdict: str, want: list[str]) -> None:
    from pytest_kpr.judge.etp import cluster_ip_problems

    assert cluster_ip_problems(verdict) == want


@pytest.mark.parametrize(("code", "want"), [(200, []), (0, ["172.18.0.3 (with the backend) answered 0"]),
                                            (None, ["172.18.0.3 (with the backend) answered None"]), (503, ["172.18.0.3 (with the backend) answered 503"])])
def test_the_outside_answer_judgement(code: int | None, want: list[str]) -> None:
    from pytest_kpr.judge.etp import outside_answer_problems

    assert outside_answer_problems(code, "172.18.0.3") == want


def test_the_observation_is_etp_json() -> None:
    from pytest_kpr.judge.etp import EtpObservation, OutsideRequest

    obs = EtpObservation("IPv4", "w1", "w2", ("cp",), {"etp-local": 30001}, {"etp-local": {"w2": "accepted"}}, "connected", 31000,
                         {"w2": (200, {"localEndpoints": 1})}, {"w2": 1}, OutsideRequest("172.18.0.1", "172.18.0.3", 200, "etp-backend", "172.18.0.1"))
    assert obs.to_json() == {
        "family": "IPv4", "nodes": {"client": "w1", "with_backend": "w2", "without_backend": ["cp"]}, "node_ports": {"etp-local": 30001},
        "raw_syn": {"etp-local": {"w2": "accepted"}}, "cluster_ip_connect": "connected", "health_check_node_port": 31000,
        "health": {"w2": {"http_code": 200, "body": {"localEndpoints": 1}}}, "health_expected": {"w2": 1},
        "outside": {"client": "172.18.0.1", "node_ip": "172.18.0.3", "http_code": 200, "served_by": "etp-backend", "seen": "172.18.0.1"}}
