"""What the affinity suite observes: the backend each connection from one client reached, per Service of one family."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class OutsideAffinity:
    """Requests from the runner (outside the cluster) to one node's NodePort, per Service: the backend pod that served
    each (from its log; None: not served), to the sessionAffinity ClientIP Service and to the one without affinity."""
    node: str  # the node whose NodePort every request went to
    source: str  # the runner's address toward it: what that node's per-packet affinity is keyed by
    backends: tuple[str, ...]  # the backend pods
    sticky: tuple[str | None, ...]
    plain: tuple[str | None, ...]
    #: the node's per-packet affinity map after the requests (``bpftool map dump``: SRC_AFFINITY_MAP), each entry
    #: (client, rev_nat_id, netns_cookie, backend_id); None: not read (why: ``map_unread``)
    map_entries: tuple[tuple[str, int, bool, int], ...] | None = None
    map_unread: str | None = None
    #: the sticky Service's NodePort frontend on that node (its rev NAT ID), and each backend pod's ID, from lb/maps-dump
    rev_nat_id: int | None = None
    backend_ids: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "source": self.source, "backends": list(self.backends), "requests": len(self.sticky),
                "sticky": list(self.sticky), "plain": list(self.plain),
                "affinity_map": None if self.map_entries is None else [
                    {"client": c, "rev_nat_id": r, "netns_cookie": n, "backend_id": b} for c, r, n, b in self.map_entries],
                "affinity_map_unread": self.map_unread, "rev_nat_id": self.rev_nat_id, "backend_ids": dict(self.backend_ids)}


@dataclass(frozen=True)
class AffinityObservation:
    family: str
    backends: tuple[str, ...]  # the Services' ready backends (address:port)
    #: the backend each connection reached (the kernel socket's peer; None: no connection or no backend shown), to the
    #: sessionAffinity ClientIP Service, to the one without affinity, and to the one with a short timeout (idle_s apart)
    sticky: tuple[str | None, ...]
    plain: tuple[str | None, ...]
    timeout_peers: tuple[str | None, ...]
    timeout_s: int  # the short Service's sessionAffinityConfig timeoutSeconds
    idle_s: float  # seconds between its connections
    #: the per-packet plane from outside (None: the runner has no view of the nodes)
    outside: OutsideAffinity | None = None

    def to_json(self) -> dict[str, Any]:
        """affinity.json's observation (the suite adds the problems)."""
        return {"family": self.family, "backends": list(self.backends), "connections": len(self.sticky), "sticky": list(self.sticky),
                "plain": list(self.plain), "timeout": {"timeout_s": self.timeout_s, "idle_s": self.idle_s, "peers": list(self.timeout_peers)},
                "outside": self.outside.to_json() if self.outside else None}
