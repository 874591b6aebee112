"""What the north-south suite observes, in one family: HTTP requests from the runner to a LoadBalancer VIP and to an
externalIPs address, each routed through one node (scenarios.vips), and the VIP's health frontend through each node."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class OutsideHttp:
    """One HTTP GET from the runner: to what, through which node, the answer, and the backend that logged it seeing what."""
    target: str  # ip:port
    via: str  # the node the address was routed through
    http_code: int | None  # None: no HTTP answer
    verdict: str  # http | timeout | refused | ...
    served_by: str | None = None  # the pod that logged the request
    seen: str | None = None  # the client address it logged

    def answer(self) -> str:
        return f"HTTP {self.http_code}" if self.http_code else f"no answer ({self.verdict})"


@dataclass(frozen=True)
class NorthSouthObservation:
    family: str
    client: str  # the runner's own address toward the nodes
    backends: tuple[str, ...]  # the pods behind ns-lb and ns-eip
    vip: str  # ns-lb's VIP (externalTrafficPolicy Cluster)
    vip_requests: tuple[OutsideHttp, ...]  # one through each node
    external_ip: str
    eip_requests: tuple[OutsideHttp, ...]  # one through each node
    local_vip: str  # ns-local's VIP (externalTrafficPolicy Local, one backend)
    local_backend: str  # its pod
    with_backend: str  # the node it runs on
    local_requests: tuple[OutsideHttp, ...]  # one through each node
    health_port: int  # ns-local's healthCheckNodePort
    #: the agents' enable-health-check-loadbalancer-ip (None: not reported); off: no health frontend on the VIP
    health_on_vip: bool | None
    health: tuple[OutsideHttp, ...] = ()  # <VIP>:<healthCheckNodePort> through each node
    health_expected: Mapping[str, int] = field(default_factory=dict)  # node -> its local endpoints (rules.datapath.local_endpoint_count)
    no_view: str | None = None  # why the runner could not send from outside (then no request was made)

    def to_json(self) -> dict[str, Any]:
        """north-south.json."""
        return {"family": self.family, "client": self.client, "backends": list(self.backends), "vip": self.vip,
                "vip_requests": [asdict(r) for r in self.vip_requests], "external_ip": self.external_ip,
                "eip_requests": [asdict(r) for r in self.eip_requests], "local_vip": self.local_vip,
                "local_backend": self.local_backend, "with_backend": self.with_backend,
                "local_requests": [asdict(r) for r in self.local_requests], "health_port": self.health_port,
                "health_on_vip": self.health_on_vip, "health": [asdict(r) for r in self.health],
                "health_expected": dict(self.health_expected), "no_view": self.no_view}
