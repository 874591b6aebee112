"""hostPort: served by an agent's HostPort frontend on the pod's node, admitted once per node.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..parse.addr import family_of, hp
from .iptables import port_rule_lines, port_rule_problems

if TYPE_CHECKING:
    from ..parse import RuleDump, Service, Socket


@dataclass(frozen=True)
class HostPortNode:
    """The hostPort pod's node, the same for every family: its rule views and listeners on the port (one exec), and the
    scheduler's decision on a second pod asking for the port there (a pod view: phase, node, scheduled, reason, message)."""
    node: str
    host_port: int
    rules: "Mapping[str, RuleDump | None]"
    listeners: "Sequence[Socket]"
    second_pod: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "host_port": self.host_port,
                "listen_sockets": len([s for s in self.listeners if s.local_port == self.host_port]),
                "rule_lines": port_rule_lines(self.rules, self.host_port),
                "second_pod": dict(self.second_pod)}


@dataclass(frozen=True)
class HostPortReach:
    """One family's answer from the node's host network on the node's address, and the agent's services."""
    on: HostPortNode
    family: str
    node_ip: str
    connect: str  # the connect probe's verdict
    http_code: int | None
    curl_exit: int | None
    services: "Sequence[Service]"

    def to_json(self) -> dict[str, Any]:
        """hostport.json."""
        fes = [s for s in self.services if s.frontend.port == self.on.host_port]
        return {**self.on.to_json(), "family": self.family, "node_ip": self.node_ip, "connect": self.connect, "http_code": self.http_code,
                "curl_exit": self.curl_exit, "frontends": [{"frontend": str(s.frontend), "type": s.type, "id": s.id} for s in fes]}


def hostport_reach_problems(r: HostPortReach) -> list[str]:
    """The hostPort answers on the node's address: connect() succeeds and HTTP 200 comes back."""
    if r.connect == "connected" and r.http_code == 200:
        return []
    return [f"{hp(r.node_ip, r.on.host_port)} from the node: connect {r.connect}, HTTP {r.http_code} (curl exit {r.curl_exit})"]


def hostport_rule_problems(n: HostPortNode) -> list[str]:
    """Every rule view read, and none naming the port."""
    return port_rule_problems(n.node, n.rules, n.host_port, "the hostPort")


def hostport_frontend_problems(services: "Sequence[Any]", port: int, family: str = "IPv4") -> list[str]:
    """The agent on the pod's node lists a HostPort frontend of ``family`` on the hostPort (datapath.SRC_HOSTPORT,
    SRC_HOSTPORT_FAMILIES: one per family the pod has an address of)."""
    if any(s.type == "HostPort" and s.frontend.port == port and family_of(s.frontend.ip) == family for s in services):
        return []
    seen = sorted({f"{s.type} {s.frontend}" for s in services if s.frontend.port == port})
    return [f"the agent lists no {family} HostPort frontend on port {port}" + (f" (only {seen})" if seen else "")]


def hostport_admission_problems(pod: "Mapping[str, Any]", node: str) -> list[str]:
    """A second pod asking for a hostPort already taken on ``node`` must not run there (datapath.SRC_HOSTPORT_SCHED)."""
    if pod.get("node") == node and pod.get("phase") in ("Running", "Succeeded"):
        return [f"a second pod asking for the same hostPort was admitted on {node} ({pod.get('phase')}): two pods hold one port"]
    return []
