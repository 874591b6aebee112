"""The trafficDistribution judgement (pytest_kpr.judge.traffic_distribution) and the selection rule the fake follows
(rules.datapath.topology_backends), branch by branch: no root, no pytester, no cluster."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_kpr.judge.traffic_distribution import fallback_problems, same_node_problems, zone_problems
from pytest_kpr.judge.traffic_distribution import Placed, Reached
from pytest_kpr.rules.datapath import topology_backends

NEAR, FAR, FAR2 = "10.244.1.5:8080", "10.244.2.5:8080", "10.244.2.6:8080"
PAIR = {NEAR: Placed("near", "w1", "zone-a"), FAR: Placed("far", "w2", "zone-b")}
AWAY = {FAR: Placed("away-1", "w2", "zone-b"), FAR2: Placed("away-2", "w2", "zone-b")}


def r(backends: dict, peers: list) -> Reached:
    return Reached("svc", "PreferSameNode", backends, tuple(peers))


def ok(problems: list[str], fragments: list[str]) -> bool:
    return len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True))


@pytest.mark.parametrize(("reached", "fragments"), [
    (r(PAIR, [NEAR] * 20), []),
    (r(PAIR, [NEAR] * 19 + [FAR]), ["1 of 20 connections from w1 to svc (PreferSameNode) left the node: reached far x1, near x19"]),
    (r(PAIR, [NEAR] * 19 + [None]), ["1 of 20 connections to svc did not connect"]),
    (r(PAIR, ["10.9.9.9:8080"]), ["left the node: reached 10.9.9.9:8080 x1"]),  # a peer that is no backend
    (r(AWAY, [FAR] * 20), ["svc has no backend on w1: nothing to prefer"]),
])
def test_same_node_judgement(reached: Reached, fragments: list[str]) -> None:
    assert ok(same_node_problems(reached, "w1"), fragments), same_node_problems(reached, "w1")


@pytest.mark.parametrize(("reached", "fragments"), [
    (r(AWAY, [FAR, FAR2] * 10), []),
    (r(AWAY, [FAR] * 20), ["20 connections from w1, which has no backend of svc (PreferSameNode), reached away-1 x20, never away-2: "
                           "no fallback to all backends (chance: 1.9e-06)"]),
    (r(AWAY, [None] * 20), ["20 of 20 connections to svc did not connect"]),
    (r(PAIR, [NEAR] * 20), ["svc has a backend on w1: not a fallback"]),
])
def test_fallback_judgement(reached: Reached, fragments: list[str]) -> None:
    assert ok(fallback_problems(reached, "w1"), fragments), fallback_problems(reached, "w1")


@pytest.mark.parametrize(("reached", "zone", "fragments"), [
    (r(PAIR, [NEAR] * 20), "zone-a", []),
    (r(PAIR, [NEAR, FAR] * 10), "zone-a", ["10 of 20 connections from zone-a to svc (PreferClose) left the zone: reached far x10, near x10"]),
    (r(PAIR, [NEAR] * 20), None, ["the client's node has no topology.kubernetes.io/zone label"]),
    (r(AWAY, [FAR] * 20), "zone-a", ["svc has no backend in zone-a: nothing to prefer"]),
])
def test_zone_judgement(reached: Reached, zone: str | None, fragments: list[str]) -> None:
    assert ok(zone_problems(reached, zone), fragments), zone_problems(reached, zone)


@dataclass(frozen=True)
class B:
    name: str
    node: str
    zones: tuple[str, ...] = ()


A1, A2, B1 = B("a1", "w1", ("zone-a",)), B("a2", "cp", ("zone-a",)), B("b1", "w2", ("zone-b",))


@pytest.mark.parametrize(("dist", "node", "zone", "want"), [
    ("PreferSameNode", "w1", "zone-a", ["a1"]),
    ("PreferSameNode", "w3", "zone-c", ["a1", "a2", "b1"]),  # no local backend: all (SRC_PREFER_SAME_NODE)
    ("PreferClose", "w1", "zone-a", ["a1", "a2"]),  # the zone, not the node
    ("PreferSameZone", "w2", "zone-b", ["b1"]),
    ("PreferClose", "w3", "zone-c", ["a1", "a2", "b1"]),  # no backend for the zone: all (SRC_PREFER_CLOSE_FALLBACK)
    ("PreferClose", "w1", None, ["a1", "a2", "b1"]),  # a node without a zone label
    (None, "w1", "zone-a", ["a1", "a2", "b1"]),
    ("SomethingElse", "w1", "zone-a", ["a1", "a2", "b1"]),
])
def test_the_topology_selection_rule(dist: str | None, node: str, zone: str | None, want: list[str]) -> None:
    assert [b.name for b in topology_backends(dist, [A1, A2, B1], node, zone)] == want


@pytest.mark.parametrize(("dist", "version", "want"), [
    ("PreferSameNode", "1.18.14", ["a1", "a2", "b1"]),  # not topology-aware before 1.20 (SRC_PREFER_SAME_SINCE): all
    ("PreferSameNode", "1.19.8", ["a1", "a2", "b1"]),
    ("PreferSameNode", "1.20.0-pre.1", ["a1"]),
    ("PreferSameNode", "1.20.5", ["a1"]),
    ("PreferSameNode", "", ["a1"]),  # an unknown version: the newest
    ("PreferSameZone", "1.19.8", ["a1", "a2", "b1"]),  # the alias came with the same PR
    ("PreferSameZone", "1.20.5", ["a1", "a2"]),
    ("PreferClose", "1.18.14", ["a1", "a2"]),  # PreferClose is honoured on every minor the suites run
    ("PreferClose", "1.19.8", ["a1", "a2"]),
])
def test_prefer_same_node_and_zone_are_honoured_from_1_20(dist: str, version: str, want: list[str]) -> None:
    assert [b.name for b in topology_backends(dist, [A1, A2, B1], "w1", "zone-a", version)] == want
