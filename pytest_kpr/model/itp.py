"""What the iTP=Local suite observes, in one family: where each pod's connections to the ClusterIP went, what a pod on
the node without a local backend got, and what a raw SYN from outside through that node got."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .probe import ProbeAnswer


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
