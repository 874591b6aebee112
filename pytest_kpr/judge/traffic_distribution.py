"""trafficDistribution under service topology: PreferSameNode keeps a client on its own node's backends and falls back to
all when its node has none; PreferClose keeps it in its zone.

Pure: an observation in, the list of problems out (empty = the property holds)."""

from __future__ import annotations

from collections import Counter

from ..model.traffic_distribution import Reached


def _unconnected(r: Reached) -> list[str]:
    n = sum(p is None for p in r.peers)
    return [f"{n} of {len(r.peers)} connections to {r.service} did not connect"] if n else []


def _where(r: Reached) -> str:
    seen = Counter(r.backends[p].pod if p in r.backends else p for p in r.peers if p)
    return ", ".join(f"{name} x{n}" for name, n in sorted(seen.items())) or "none"


def same_node_problems(r: Reached, node: str) -> list[str]:
    """Every connection reaches a backend on the client's ``node`` (rules.datapath.SRC_PREFER_SAME_NODE); the Service must
    have one there (else the observation proves nothing)."""
    if not any(b.node == node for b in r.backends.values()):
        return [f"{r.service} has no backend on {node}: nothing to prefer"]
    off = [p for p in r.peers if p and (p not in r.backends or r.backends[p].node != node)]
    out = _unconnected(r)
    if off:
        out.append(f"{len(off)} of {len(r.peers)} connections from {node} to {r.service} (PreferSameNode) left the node: reached {_where(r)}")
    return out


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
    off = [p for p in r.peers if p and (p not in r.backends or r.backends[p].zone != zone)]
    out = _unconnected(r)
    if off:
        out.append(f"{len(off)} of {len(r.peers)} connections from {zone} to {r.service} (PreferClose) left the zone: reached {_where(r)}")
    return out
