"""The agent's load-balancing tables -- services, frontends, backends, node addresses -- and how they print.

The rows are Cilium's ``TableRow()`` (cilium/cilium pkg/loadbalancer service.go, frontend.go, backend.go; the node
addresses pkg/datapath/tables/node_address.go), the order is each table's primary index: a service by its name
(`ServiceName.Key()`, "<namespace>/<name>"), a frontend or an old-layout backend by ``L3n4Addr.Bytes()``, a
new-layout backend by (service, address, source priority).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .addr import IP, L3n4, as16

ACTIVE, TERMINATING, QUARANTINED, MAINTENANCE, TERMINATING_NOT_SERVING = (
    "active", "terminating", "quarantined", "maintenance", "terminating-not-serving")
#: loadbalancer.go BackendState, its numeric value (sortedBackends sorts by it: active first; the JSON form prints it:
#: endpointslice-weight.txtar@669f18e3 shows a maintenance backend as "State": 4)
STATE_ORDER = {ACTIVE: 0, TERMINATING: 1, TERMINATING_NOT_SERVING: 2, QUARANTINED: 3, MAINTENANCE: 4}
#: source.Sources: a source's priority is its index (k8s: 4, as the backends table prints it)
SOURCE_PRIORITY = {"unspec": 0, "local-api": 1, "kvstore": 2, "custom-resource": 3, "k8s": 4, "cluster-mesh": 5, "generated": 6,
                   "local": 7, "restored": 8, "directory": 9}

DEFAULT_WEIGHT = 100


def go_duration(seconds: int) -> str:
    """Go's time.Duration String() for whole seconds: 42s, 3m0s, 3h0m0s."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m}m{s}s"
    if m:
        return f"{m}m{s}s"
    return f"{s}s"


@dataclass
class Service:
    name: str
    source: str = "k8s"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    selector: dict[str, str] = field(default_factory=dict)
    ext_policy: str = "Cluster"
    int_policy: str = "Cluster"
    forwarding_mode: str = ""  # "", "dsr", "snat"
    session_affinity: bool = False
    affinity_timeout: int = 0
    lb_class: str | None = None
    health_check_node_port: int = 0
    loopback_hostport: bool = False
    source_ranges: tuple[str, ...] = ()
    port_names: dict[str, int] = field(default_factory=dict)
    traffic_distribution: str = ""
    proxy_delegation: str = "none"

    def source_ranges_policy(self) -> str:
        """service.go GetSourceRangesPolicy."""
        return "deny" if (self.annotations.get("service.cilium.io/src-ranges-policy") or "").lower() == "deny" else "allow"

    def lb_algorithm_annotation(self) -> str:
        """GetLBAlgorithmAnnotation: "maglev", "random" or "" (undef)."""
        value = self.annotations.get("service.cilium.io/lb-algorithm", "")
        return value if value in ("maglev", "random") else ""

    def table_row(self) -> dict[str, str]:
        tp = self.ext_policy if self.ext_policy == self.int_policy else f"Ext={self.ext_policy}, Int={self.int_policy}"
        flags = []
        if self.session_affinity:
            flags.append("SessionAffinity=" + go_duration(self.affinity_timeout))
        if self.source_ranges:
            flags.append("SourceRanges=" + ", ".join(self.source_ranges))
        if self.source_ranges_policy() == "deny":
            flags.append("SourceRangesPolicy=deny")
        if self.health_check_node_port:
            flags.append(f"HealthCheckNodePort={self.health_check_node_port}")
        if self.loopback_hostport:
            flags.append("LoopbackHostPort=true")
        if self.lb_algorithm_annotation():
            flags.append("ExplicitLBAlgorithm=" + self.lb_algorithm_annotation())
        if self.forwarding_mode:
            flags.append("ForwardingMode=" + self.forwarding_mode)
        if self.traffic_distribution:
            flags.append("TrafficDistribution=" + self.traffic_distribution)
        if self.lb_class is not None:
            flags.append("LoadBalancerClass=" + self.lb_class)
        flags.sort()
        names = ", ".join(f"{n}={self.port_names[n]}" for n in sorted(self.port_names))
        return {"Name": self.name, "Source": self.source, "PortNames": names, "TrafficPolicy": tp, "Flags": ", ".join(flags)}


@dataclass
class BackendParams:
    """One service's view of a backend (an instance of the backends table's row)."""
    service: str
    address: L3n4
    port_names: tuple[str, ...] = ()
    weight: int = DEFAULT_WEIGHT
    node_name: str = ""
    zone: str = ""
    for_zones: tuple[str, ...] = ()
    source: str = "k8s"
    state: str = ACTIVE
    unhealthy: bool = False
    health_checked: bool = False  # UnhealthyUpdatedAt set: a health checker has spoken
    revision: int = 0

    @property
    def priority(self) -> int:
        return SOURCE_PRIORITY.get(self.source, len(SOURCE_PRIORITY))

    def same_params(self, other: BackendParams) -> bool:
        return replace(self, revision=0) == replace(other, revision=0)

    def state_shown(self) -> str:
        return QUARANTINED if self.unhealthy else self.state


def instance_key(be: BackendParams) -> tuple[str, bytes, int]:
    return (be.service, be.address.key, be.priority)


def backend_rows_new(instances: list[BackendParams]) -> list[dict[str, str]]:
    """The backends table after 2026-03-06: a row per service instance (Service, Address, Source, Priority, State,
    PortNames, NodeName), ordered by service, address, priority."""
    out = []
    for be in sorted(instances, key=instance_key):
        out.append({"Service": be.service, "Address": str(be.address), "Source": be.source, "Priority": str(be.priority),
                    "State": be.state_shown(), "PortNames": ", ".join(be.port_names), "NodeName": be.node_name,
                    "Weight": str(be.weight), "Zone": be.zone})
    return out


def backend_json_new(instances: list[BackendParams]) -> str:
    """``db/show backends -f json`` after 2026-03-06: BackendParams as encoding/json.MarshalIndent writes it, one object
    per instance, each followed by a newline (statedb writeObjects)."""
    import json

    out = []
    for be in sorted(instances, key=instance_key):
        if be.zone or be.for_zones or be.unhealthy:
            raise ValueError("a backend with a zone or health state: its JSON form is not modelled")
        obj = {"ServiceName": be.service, "Address": str(be.address), "PortNames": list(be.port_names) or None, "Weight": be.weight,
               "NodeName": be.node_name, "Zone": None, "ClusterID": 0, "Source": be.source, "State": STATE_ORDER[be.state],
               "Unhealthy": False, "UnhealthyUpdatedAt": None}
        out.append(json.dumps(obj, indent=2) + "\n")
    return "".join(out)


def backend_rows_old(instances: list[BackendParams]) -> list[dict[str, str]]:
    """The backends table before 2026-03-06 (backend.go TableRow): a row per address -- its instances, one per service
    (the preferred source's; "svc [state] (port names)"), the other sources' as shadows, the first instance's node."""
    by_addr: dict[bytes, list[BackendParams]] = {}
    for be in instances:
        by_addr.setdefault(be.address.key, []).append(be)
    out = []
    for key in sorted(by_addr):
        insts = sorted(by_addr[key], key=lambda b: (b.service, b.priority))
        shown, shadows, seen = [], [], set()
        for be in insts:
            if be.service in seen:
                shadows.append(be)
                continue
            seen.add(be.service)
            text = be.service
            if be.state != ACTIVE or be.unhealthy:
                text += " [" + ("unhealthy" if be.unhealthy else be.state) + "]"
            if be.port_names:
                text += " (" + " ".join(be.port_names) + ")"
            shown.append(text)
        shadow_text = []
        for svc in sorted({b.service for b in shadows}):
            parts = [b.source + (f" ({' '.join(b.port_names)})" if b.port_names else "") for b in shadows if b.service == svc]
            shadow_text.append(f"{svc} [{', '.join(parts)}]")
        out.append({"Address": str(insts[0].address), "Instances": ", ".join(shown), "Shadows": ", ".join(shadow_text),
                    "NodeName": next((b.node_name for b in insts if b.node_name), "")})
    return out


@dataclass(frozen=True)
class FrontendParams:
    address: L3n4
    type: str
    service: str
    port_name: str = ""
    service_port: int = 0


@dataclass
class Frontend:
    params: FrontendParams
    service: Service
    backends: list[BackendParams] = field(default_factory=list)
    status: str = "Pending"
    error: str = ""
    id: int = 0
    redirect_to: str | None = None
    revision: int = 0

    @property
    def address(self) -> L3n4:
        return self.params.address

    @property
    def type(self) -> str:
        return self.params.type

    def table_row(self) -> dict[str, str]:
        shown = [str(b.address) for b in self.backends]
        text = ", ".join(shown[:5]) + (f" + {len(shown) - 5} more ..." if len(shown) > 5 else "")
        return {"Address": str(self.address), "Type": self.type, "ServiceName": self.params.service, "PortName": self.params.port_name,
                "Backends": text, "RedirectTo": self.redirect_to or "", "Status": self.status, "Since": "0s", "Error": self.error,
                "ID": str(self.id)}


@dataclass(frozen=True)
class NodeAddress:
    addr: IP
    nodeport: bool = False
    primary: bool = False
    device: str = ""

    @property
    def key(self) -> tuple[int, bytes, str]:
        return (self.addr.version, as16(self.addr), self.device)

    def table_row(self) -> dict[str, str]:
        return {"Address": str(self.addr), "NodePort": str(self.nodeport).lower(), "Primary": str(self.primary).lower(),
                "DeviceName": self.device}

    @classmethod
    def from_yaml(cls, doc: dict[str, Any]) -> NodeAddress:
        from .addr import ip_of

        return cls(ip_of(str(doc["addr"])), bool(doc.get("nodeport", False)), bool(doc.get("primary", False)), str(doc.get("devicename", "")))
