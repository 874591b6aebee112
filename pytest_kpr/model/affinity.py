"""What the affinity suite observes: the backend each connection from one client reached, per Service of one family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OutsideAffinity:
    """Requests from the runner (outside the cluster) to one node's NodePort, per Service: the backend pod that served
    each (from its log; None: not served), to the sessionAffinity ClientIP Service and to the one without affinity."""
    node: str  # the node whose NodePort every request went to
    source: str  # the runner's address toward it: what that node's per-packet affinity is keyed by
    backends: tuple[str, ...]  # the backend pods
    sticky: tuple[str | None, ...]
    plain: tuple[str | None, ...]

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "source": self.source, "backends": list(self.backends), "requests": len(self.sticky),
                "sticky": list(self.sticky), "plain": list(self.plain)}


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
