"""North-south: a LoadBalancer VIP and an externalIPs address served from outside through every node, externalTrafficPolicy
Local on the VIP, and the VIP's health frontend.

Pure: an observation in, the list of problems out (empty = the property holds), worded so that a failure names what was
asked, through which node, and what came back.

What the north-south suite observes, in one family: HTTP requests from the runner to a LoadBalancer VIP and to an
externalIPs address, each routed through one node (scenarios.vips), and the VIP's health frontend through each node."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence


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


def served_problems(requests: Sequence[OutsideHttp], backends: Sequence[str], what: str) -> list[str]:
    """Every request (one through each node) is answered 200 by one of the Service's ``backends`` (rules.datapath
    SRC_VIP_OUTSIDE: the address is a frontend of every node's bpf_host). No request made is a problem, never a pass."""
    if not requests:
        return [f"no request was made to the {what}"]
    out = []
    for r in requests:
        if r.http_code != 200:
            out.append(f"{r.target} through {r.via}: {r.answer()}")
        elif r.served_by not in backends:
            out.append(f"{r.target} through {r.via}: answered, but no backend of the Service logged the request "
                       f"(served by {r.served_by or 'nobody known'})")
    return out


def etp_local_problems(requests: Sequence[OutsideHttp], with_backend: str, backend: str, client: str) -> list[str]:
    """externalTrafficPolicy Local on the VIP (SRC_ETP_SCOPES, SRC_ETP_NO_LOCAL): through the node with the backend the
    request is served by it and it sees the runner's own address (``client``: datapath.backend_sees, eTP Local keeps it);
    through a node without a local backend it is not served (that node's external scope has no backend)."""
    mine = [r for r in requests if r.via == with_backend]
    out = [] if mine else [f"no request went through the node with the backend ({with_backend})"]
    for r in mine:
        if r.http_code != 200 or r.served_by != backend:
            out.append(f"through {r.via}, which has the backend, {r.target}: {r.answer()}, served by {r.served_by or 'nobody known'} "
                       f"(expected {backend})")
        elif r.seen != client:
            out.append(f"through {r.via}: the backend saw {r.seen}, not the client's own address {client}")
    out += [f"through {r.via}, which has no local backend, {r.target} was served by {r.served_by or 'a backend'}: the request was "
            f"forwarded to another node" for r in requests if r.via != with_backend and r.http_code == 200]
    return out


def health_problems(health: Sequence[OutsideHttp], expected: Mapping[str, int], port: int) -> list[str]:
    """The VIP's health frontend (SRC_HEALTH_LB_IP): ``<VIP>:<healthCheckNodePort>`` through a node is answered by that
    node's health server, 200 when it has a local backend (``expected``: datapath.local_endpoint_count), 503 when not."""
    if not health:
        return [f"no request was made to the VIP's health frontend (port {port})"]
    out = []
    for r in health:
        want = 200 if expected.get(r.via, 0) else 503
        if r.http_code != want:
            out.append(f"{r.target} through {r.via} ({expected.get(r.via, 0)} local endpoints): {r.answer()}, expected HTTP {want}")
    return out
