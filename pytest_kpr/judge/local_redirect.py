"""Local Redirect Policy: a ServiceMatcher CiliumLocalRedirectPolicy replaces a ClusterIP Service's backends, for pods on a
node, with the policy's selected pods on that node only (rules.datapath.SRC_LRP) -- node-local DNS's case.

Pure: an observation in, the list of problems out (empty = the property holds)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class RedirectObservation:
    service: str  # ClusterIP:port of the redirected Service
    node: str  # the client's node
    local: dict[str, str]  # address:port -> pod, the policy's selected pods on the client's node
    own: dict[str, str]  # address:port -> pod, the Service's own backends (on other nodes)
    peers: tuple[str | None, ...]  # each connection's backend (None: it did not connect)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "peers": list(self.peers)}


def redirect_problems(o: RedirectObservation) -> list[str]:
    """Every connection connected, and to one of the policy's local pods (never to the Service's own backends)."""
    if not o.local:
        return [f"the policy selects no pod on {o.node}, so the redirect cannot be judged"]
    failed = sum(p is None for p in o.peers)
    off = Counter(o.own.get(p, p) for p in o.peers if p and p not in o.local)
    out = []
    if failed:
        out.append(f"{failed} of {len(o.peers)} connections from {o.node} to {o.service} did not connect")
    if off:
        where = ", ".join(f"{name} x{n}" for name, n in sorted(off.items()))
        out.append(f"{sum(off.values())} of {len(o.peers)} connections from {o.node} to {o.service} reached {where}, not the policy's "
                   f"local {', '.join(sorted(o.local.values()))}: the Local Redirect Policy did not redirect them")
    return out
