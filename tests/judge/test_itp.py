"""internalTrafficPolicy=Local judgements (pytest_kpr.judge.itp): table-driven, no cluster, no root."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.itp import external_problems, local_only_problems

NODES = {"near": "worker", "far": "worker2"}


@pytest.mark.parametrize(("served", "problems"), [
    ({"worker": ["near"] * 3, "worker2": ["far"] * 3}, []),
    # as if Cluster: some connections crossed to the other node's backend
    ({"worker": ["near", "far", "near"], "worker2": ["far"] * 3},
     ["1 of 3 connections from a pod on worker were served by far (on worker2): another node's backend, as if internalTrafficPolicy were Cluster"]),
    ({"worker": ["far"] * 2, "worker2": ["near", "far"]},
     ["2 of 2 connections from a pod on worker were served by far (on worker2): another node's backend, as if internalTrafficPolicy were Cluster",
      "1 of 2 connections from a pod on worker2 were served by near (on worker): another node's backend, as if internalTrafficPolicy were Cluster"]),
    # an unknown backend counts as another node's
    ({"worker": ["10.96.0.12:80", "near"]}, ["1 of 2 connections from a pod on worker have their socket on 10.96.0.12:80, no backend of the "
                                            "Service (the socket plane did not translate them to a backend)"]),
    ({"worker": ["near", None]}, ["1 of 2 connections from a pod on worker reached no backend (its node has a local backend)"]),
    ({"worker": []}, ["a pod on worker made no connection, so which backends serve it is unknown"]),
], ids=["local-only", "one-crossed", "both-crossed", "not-translated", "not-connected", "no-connections"])
def test_local_only(served: dict, problems: list[str]) -> None:
    assert local_only_problems(served, NODES) == problems


@pytest.mark.parametrize(("verdict", "problems"), [
    ("accepted", []),
    ("timeout", ["a raw SYN from outside to 172.18.0.3, which has no local backend, got timeout; internalTrafficPolicy must not apply to "
                 "traffic from outside (externalTrafficPolicy Cluster: the backend on worker2 serves it)"]),
    ("icmp-unreachable", ["a raw SYN from outside to 172.18.0.3, which has no local backend, got icmp-unreachable; internalTrafficPolicy "
                          "must not apply to traffic from outside (externalTrafficPolicy Cluster: the backend on worker2 serves it)"]),
])
def test_external(verdict: str, problems: list[str]) -> None:
    assert external_problems(verdict, "172.18.0.3", "worker2") == problems


def test_the_observation_is_itp_json_and_names_each_backends_node() -> None:
    from pytest_kpr.judge.itp import ItpObservation
    from pytest_kpr.model.probe import ProbeAnswer

    obs = ItpObservation("IPv4", None, "worker", "worker2", {"near": ("10.244.1.5:8080", "worker"), "far": ("10.244.2.6:8080", "worker2")},
                         "10.96.0.12:80", {"worker": ("near", None)}, ProbeAnswer("10.96.0.13:80", "unreachable", "EHOSTUNREACH", 0.2),
                         ProbeAnswer("172.18.0.3:30123", "accepted"), {"worker": {"itp": 1, "itp-far-only": None}}, "6.8.0", "reject")
    assert obs.backend_node == {"near": "worker", "far": "worker2"}
    assert obs.to_json() == {
        "family": "IPv4", "enable_internal_traffic_policy": None, "nodes": {"near": "worker", "far": "worker2"},
        "backends": {"near": {"address": "10.244.1.5:8080", "node": "worker"}, "far": {"address": "10.244.2.6:8080", "node": "worker2"}},
        "cluster_ip": "10.96.0.12:80", "connections": {"worker": ["near", None]},
        "no_local": {"target": "10.96.0.13:80", "verdict": "unreachable", "errno": "EHOSTUNREACH", "elapsed_ms": 0.2},
        "outside": {"from": "worker2's host network", "to": "172.18.0.3:30123", "verdict": "accepted"},
        "agent_slots": {"worker": {"itp": 1, "itp-far-only": None}}, "client_kernel": "6.8.0", "no_backend_response": "reject"}
    assert local_only_problems(obs.connections, obs.backend_node) == [
        "1 of 2 connections from a pod on worker reached no backend (its node has a local backend)"]
