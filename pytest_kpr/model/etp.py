"""What the eTP=Local suite observes, in one family: raw SYNs from outside to each node's NodePort of a Local and a
Cluster Service, a pod's connect() to the Local Service's ClusterIP, each node's health-check answer, and (with an
outside view) the address the backend saw."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class OutsideRequest:
    """An HTTP request from the runner to the node with the backend, and who served it seeing what."""
    client: str  # the runner's own address toward the node
    node_ip: str
    http_code: int | None
    served_by: str | None
    seen: str | None


@dataclass(frozen=True)
class EtpObservation:
    family: str
    client: str  # the probe pods' node (no local backend)
    with_backend: str
    without_backend: tuple[str, ...]  # the other nodes
    node_ports: Mapping[str, int]  # Service -> its NodePort
    raw_syn: Mapping[str, Mapping[str, str]]  # Service -> node -> the raw SYN's verdict from outside
    cluster_ip_connect: str  # a pod's connect() to the Local Service's ClusterIP
    health_check_node_port: int
    health: Mapping[str, tuple[int | None, Any]]  # node -> (HTTP code, the JSON body or None)
    health_expected: Mapping[str, int] = field(default_factory=dict)  # node -> its local endpoints (rules.datapath.local_endpoint_count)
    outside: OutsideRequest | None = None  # None: the runner has no route to the nodes

    def to_json(self) -> dict[str, Any]:
        """etp.json."""
        return {"family": self.family, "nodes": {"client": self.client, "with_backend": self.with_backend,
                                                 "without_backend": list(self.without_backend)},
                "node_ports": dict(self.node_ports), "raw_syn": {s: dict(v) for s, v in self.raw_syn.items()},
                "cluster_ip_connect": self.cluster_ip_connect, "health_check_node_port": self.health_check_node_port,
                "health": {n: {"http_code": c, "body": b} for n, (c, b) in self.health.items()},
                "health_expected": dict(self.health_expected), "outside": asdict(self.outside) if self.outside else None}
