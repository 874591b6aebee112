"""What the affinity suite observes: the backend each connection from one client reached, per Service of one family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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

    def to_json(self) -> dict[str, Any]:
        """affinity.json's observation (the suite adds the problems)."""
        return {"family": self.family, "backends": list(self.backends), "connections": len(self.sticky), "sticky": list(self.sticky),
                "plain": list(self.plain), "timeout": {"timeout_s": self.timeout_s, "idle_s": self.idle_s, "peers": list(self.timeout_peers)}}
