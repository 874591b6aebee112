"""externalTrafficPolicy=Local and the client's address: local backends only, the health-check NodePort, who the backend sees.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen.

What the eTP=Local suite observes, in one family: raw SYNs from outside to each node's NodePort of a Local and a
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


def etp_reach_problems(local: "Mapping[str, str]", cluster: "Mapping[str, str]", with_backend: str) -> list[str]:
    """From outside (a raw SYN that arrives on each node's native device): the eTP=Local Service is served by the node
    with its backend and by no other (datapath.SRC_ETP_SCOPES: the external scope holds local backends only), while the
    eTP=Cluster Service on the same backend is served by every node. ``local``/``cluster``: node -> the probe's verdict
    (``accepted`` = a SYN-ACK came back)."""
    out = []
    if local.get(with_backend) != "accepted":
        out.append(f"the node with the backend ({with_backend}) did not serve it from outside: {local.get(with_backend)}")
    out += [f"{node}, which has no local backend, served it from outside ({v}): traffic was forwarded to another node's backend"
            for node, v in sorted(local.items()) if node != with_backend and v == "accepted"]
    out += [f"externalTrafficPolicy=Cluster on the same backend was not served by {node} ({v})"
            for node, v in sorted(cluster.items()) if v != "accepted"]
    return out


def health_check_problems(answers: "Mapping[str, tuple[int, Any]]", local_backends: "Mapping[str, int]", service: tuple[str, str]) -> list[str]:
    """The health-check NodePort (datapath.SRC_HEALTHSERVER): every node answers with its own count of local endpoints
    (``local_backends``: datapath.local_endpoint_count, one per active backend address and port on the node), 200 when
    it has one, 503 when not, naming the Service. ``answers``: node -> (HTTP code, parsed JSON body or None)."""
    out = []
    for node, (code, body) in sorted(answers.items()):
        want = local_backends.get(node, 0)
        want_code = 200 if want else 503
        got = body.get("localEndpoints") if isinstance(body, dict) else None
        if code != want_code or got != want:
            out.append(f"{node} answered HTTP {code or 'nothing'} with localEndpoints {got}, expected {want_code} with {want} "
                       f"(its own backends' addresses and ports)")
        elif (body.get("service") or {}) != {"namespace": service[0], "name": service[1]}:
            out.append(f"{node} answered for {body.get('service')}, not {service[0]}/{service[1]}")
    return out


def client_address_problems(seen: str | None, client: str, node_ip: str, expect: str, why: str, internal_ip: str = "") -> list[str]:
    """The address a backend logged for a request from outside, against the sourced rule (datapath.backend_sees):
    ``expect`` is ``client`` (the runner's own address), ``node`` (the receiving node's InternalIP, SNAT in native
    routing) or ``cilium-internal-ip`` (the receiving node's cilium_host address ``internal_ip``, SNAT in tunnel routing)."""
    names = {"client": "the client", "node": "the receiving node's InternalIP", "cilium-internal-ip": "the receiving node's CiliumInternalIP"}
    want = {"client": client, "node": node_ip, "cilium-internal-ip": internal_ip}[expect]
    if seen is None:
        return ["no backend logged the request, so what it saw is unknown"]
    if not want:
        return [f"the backend saw {seen}, but {names[expect]} is unknown (CiliumNode not readable), so the SNAT rule cannot be checked"]
    if seen != want:
        by_addr = {a: n for n, a in ((names["cilium-internal-ip"], internal_ip), (names["node"], node_ip), ("the client's address", client)) if a}
        name = by_addr.get(seen, "neither the client's nor the node's address")
        return [f"the backend saw {seen} ({name}), expected {want} ({names[expect]}: {why})"]
    return []


def cluster_ip_problems(verdict: str) -> list[str]:
    """A pod on a node without a local backend reaches the Local Service's ClusterIP: externalTrafficPolicy does not
    apply to in-cluster traffic (datapath.SRC_ETP_SCOPES: the ClusterIP keeps every backend)."""
    return [] if verdict == "connected" else [f"{verdict}; externalTrafficPolicy must not apply to in-cluster traffic"]


def outside_answer_problems(http_code: int | None, node_ip: str) -> list[str]:
    """The node with the backend answers the runner's request to the Local Service's NodePort with HTTP 200."""
    return [] if http_code == 200 else [f"{node_ip} (with the backend) answered {http_code}"]
