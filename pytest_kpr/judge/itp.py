"""internalTrafficPolicy=Local: a pod's connections to the ClusterIP are served by its own node's backends only, and outside
traffic through a NodePort is unaffected. (A pod on a node without a local backend gets its plane's no-backend answer:
judged by :func:`pytest_kpr.judge.no_backend.no_backend_problems`.)

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen.

What the iTP=Local suite observes, in one family: where each pod's connections to the ClusterIP went, what a pod on
the node without a local backend got, and what a raw SYN from outside through that node got."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..model.probe import ProbeAnswer


@dataclass(frozen=True)
class ItpObservation:
    family: str
    setting: str | None  # the agent's enable-internal-traffic-policy (None: not in its config map)
    near: str  # the client node: a backend of the itp Service, none of itp-far-only
    far: str
    backends: Mapping[str, tuple[str, str]]  # backend pod -> (address:port of the family, its node)
    cluster_ip: str  # the itp Service's ClusterIP:port
    connections: Mapping[str, tuple[str | None, ...]]  # client node -> the backend pod each connection reached (None: none)
    no_local: ProbeAnswer  # a pod on the near node to the Service whose only backend is on the far node
    outside: ProbeAnswer  # a raw SYN from the far node's host network to the near node's NodePort of that Service
    agent_slots: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)  # node -> Service -> backends listed
    client_kernel: str | None = None
    no_backend_response: str | None = None

    @property
    def backend_node(self) -> dict[str, str]:
        """Backend pod -> its node."""
        return {pod: node for pod, (_, node) in self.backends.items()}

    def to_json(self) -> dict[str, Any]:
        """itp.json."""
        return {"family": self.family, "enable_internal_traffic_policy": self.setting, "nodes": {"near": self.near, "far": self.far},
                "backends": {pod: {"address": a, "node": n} for pod, (a, n) in self.backends.items()}, "cluster_ip": self.cluster_ip,
                "connections": {n: list(ps) for n, ps in self.connections.items()},
                "no_local": {"target": self.no_local.target, "verdict": self.no_local.verdict, "errno": self.no_local.errno,
                             "elapsed_ms": self.no_local.elapsed_ms},
                "outside": {"from": f"{self.far}'s host network", "to": self.outside.target, "verdict": self.outside.verdict},
                "agent_slots": {n: dict(s) for n, s in self.agent_slots.items()}, "client_kernel": self.client_kernel,
                "no_backend_response": self.no_backend_response}


def local_only_problems(served: "Mapping[str, Sequence[str | None]]", backend_node: "Mapping[str, str]") -> list[str]:
    """``served``: client node -> the backend pod each of its connections reached (None: it did not connect);
    ``backend_node``: backend pod -> its node. Every connection from a node is served by a backend on that node
    (datapath.SRC_ITP_CLUSTER_IP: the ClusterIP's only scope holds the node's own backends)."""
    out = []
    for node, pods in sorted(served.items()):
        if not pods:
            out.append(f"a pod on {node} made no connection, so which backends serve it is unknown")
            continue
        remote = sorted({p for p in pods if p is not None and p in backend_node and backend_node[p] != node})
        stray = sorted({p for p in pods if p is not None and p not in backend_node})
        lost = sum(p is None for p in pods)
        if stray:
            n = sum(p in stray for p in pods)
            out.append(f"{n} of {len(pods)} connections from a pod on {node} have their socket on {', '.join(stray)}, no backend of the "
                       "Service (the socket plane did not translate them to a backend)")
        if remote:
            where = ", ".join(f"{p} (on {backend_node.get(p, '?')})" for p in remote)
            n = sum(p in remote for p in pods)
            out.append(f"{n} of {len(pods)} connections from a pod on {node} were served by {where}: another node's backend, "
                       "as if internalTrafficPolicy were Cluster")
        if lost:
            out.append(f"{lost} of {len(pods)} connections from a pod on {node} reached no backend (its node has a local backend)")
    return out


def external_problems(verdict: str, via: str, backend_on: str) -> list[str]:
    """A raw SYN from outside to ``via`` (a node without a local backend) for the NodePort of an internalTrafficPolicy=Local,
    externalTrafficPolicy=Cluster Service must be served (``accepted``) by the backend on ``backend_on``
    (datapath.SRC_ITP_EXTERNAL: the external scope keeps every backend)."""
    if verdict == "accepted":
        return []
    return [f"a raw SYN from outside to {via}, which has no local backend, got {verdict}; internalTrafficPolicy must not apply "
            f"to traffic from outside (externalTrafficPolicy Cluster: the backend on {backend_on} serves it)"]
