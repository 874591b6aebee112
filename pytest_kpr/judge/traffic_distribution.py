"""trafficDistribution under service topology: PreferSameNode keeps a client on its own node's backends and falls back to
all when its node has none; PreferClose keeps it in its zone.

Pure: an observation in, the list of problems out (empty = the property holds).

What the trafficDistribution suite observes, in one family: a pod's connections to Services with a
trafficDistribution, each connection's backend (the kernel socket's peer), and where each backend runs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Placed:
    """A backend: its pod, node and zone."""
    pod: str
    node: str
    zone: str | None


@dataclass(frozen=True)
class Reached:
    """``connections`` from the client pod to ``service`` (trafficDistribution ``distribution``): each one's backend
    address (None: not connected), and the Service's backends by address."""
    service: str
    distribution: str
    backends: Mapping[str, Placed]
    peers: tuple[str | None, ...]

    def to_json(self) -> dict[str, Any]:
        return {"service": self.service, "distribution": self.distribution,
                "backends": {a: {"pod": p.pod, "node": p.node, "zone": p.zone} for a, p in self.backends.items()},
                "peers": list(self.peers)}


@dataclass(frozen=True)
class TopologyObservation:
    family: str
    client_node: str
    client_zone: str | None
    same_node: Reached  # PreferSameNode, a backend on the client's node and one elsewhere
    away: Reached  # PreferSameNode, backends on another node only
    close: Reached  # PreferClose, a backend in the client's zone and one in another

    def to_json(self) -> dict[str, Any]:
        """traffic-distribution.json."""
        return {"family": self.family, "client": {"node": self.client_node, "zone": self.client_zone},
                "same_node": self.same_node.to_json(), "away": self.away.to_json(), "close": self.close.to_json()}


def _unconnected(r: Reached) -> list[str]:
    n = sum(p is None for p in r.peers)
    return [f"{n} of {len(r.peers)} connections to {r.service} did not connect"] if n else []


def _where(r: Reached) -> str:
    seen = Counter(r.backends[p].pod if p in r.backends else p for p in r.peers if p)
    return ", ".join(f"{name} x{n}" for name, n in sorted(seen.items())) or "none"


def _left(r: Reached, inside: Callable[[Placed], bool], origin: str, policy: str, scope: str) -> list[str]:
    """The connections that did not connect, and those whose backend is not ``inside`` the client's ``scope``."""
    off = [p for p in r.peers if p and (p not in r.backends or not inside(r.backends[p]))]
    out = _unconnected(r)
    if off:
        out.append(f"{len(off)} of {len(r.peers)} connections from {origin} to {r.service} ({policy}) left the {scope}: "
                   f"reached {_where(r)}")
    return out


def same_node_problems(r: Reached, node: str) -> list[str]:
    """Every connection reaches a backend on the client's ``node`` (rules.datapath.SRC_PREFER_SAME_NODE); the Service must
    have one there (else the observation proves nothing)."""
    if not any(b.node == node for b in r.backends.values()):
        return [f"{r.service} has no backend on {node}: nothing to prefer"]
    return _left(r, lambda b: b.node == node, node, "PreferSameNode", "node")


def fallback_problems(r: Reached, node: str) -> list[str]:
    """With no backend on the client's ``node``, PreferSameNode falls back to every backend: each is reached (chance of
    missing one of k with n connections: about k(1-1/k)^n)."""
    if any(b.node == node for b in r.backends.values()):
        return [f"{r.service} has a backend on {node}: not a fallback"]
    out = _unconnected(r)
    reached = {p for p in r.peers if p}
    missed = sorted(r.backends[a].pod for a in r.backends if a not in reached)
    if missed and reached:
        k, n = len(r.backends), len(r.peers)
        out.append(f"{len(r.peers)} connections from {node}, which has no backend of {r.service} (PreferSameNode), reached {_where(r)}, "
                   f"never {', '.join(missed)}: no fallback to all backends (chance: {k * (1 - 1 / k) ** n:.1e})")
    return out


def zone_problems(r: Reached, zone: str | None) -> list[str]:
    """Every connection reaches a backend in the client's ``zone`` (SRC_PREFER_CLOSE: the hints name each endpoint's own
    zone); the Service must have one there."""
    if zone is None:
        return ["the client's node has no topology.kubernetes.io/zone label"]
    if not any(b.zone == zone for b in r.backends.values()):
        return [f"{r.service} has no backend in {zone}: nothing to prefer"]
    return _left(r, lambda b: b.zone == zone, zone, "PreferClose", "zone")
