"""NodePort: served by the agent's BPF frontend, with no listening socket on the port.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..parse.addr import hp
from ..rules.datapath import NODEPORT_WILDCARD
from .iptables import port_rule_lines, port_rule_problems

if TYPE_CHECKING:
    from ..parse import RuleDump, Service, Socket


@dataclass(frozen=True)
class NodePortObservation:
    """One node's NodePort of the web Service, in one family: the node's own curl to it, its rule views and listeners
    on the port (one exec), and its agent's service list."""
    family: str
    node: str
    node_ip: str  # the node's InternalIP of the family
    node_port: int
    http_code: int | None
    curl_exit: int | None
    dumps: "Mapping[str, RuleDump | None]"  # view -> the node's rules (None: the view's tool is missing)
    listeners: "Sequence[Socket]"  # TCP listeners on the port
    services: "Sequence[Service]"  # the agent's service list
    service_id: int | None  # the ID of the agent's wildcard NodePort frontend of the family (None: not listed)

    def to_json(self) -> dict[str, Any]:
        """nodeport.json."""
        port = str(self.node_port)
        return {"family": self.family, "node_ip": self.node_ip, "node_port": self.node_port, "http_code": self.http_code,
                "curl_exit": self.curl_exit, "iptables_lines": sum(d.count_token(port) for d in self.dumps.values() if d is not None),
                "rule_lines": port_rule_lines(self.dumps, self.node_port),
                "listen_sockets": len([s for s in self.listeners if s.local_port == self.node_port]),
                "service_id": self.service_id}


def nodeport_http_problems(n: NodePortObservation) -> list[str]:
    """The node's own request to its NodePort is answered 200."""
    if n.http_code == 200:
        return []
    return [f"{hp(n.node_ip, n.node_port)} answered {n.http_code} (curl exit {n.curl_exit})"]


def nodeport_rule_problems(n: NodePortObservation) -> list[str]:
    """Every rule view read, and none naming the port."""
    return port_rule_problems(n.node, n.dumps, n.node_port, "the NodePort")


def nodeport_listener_problems(listeners: "Sequence[Socket]", port: int) -> list[str]:
    mine = [s.local for s in listeners if s.local_port == port]
    return [f"{len(mine)} sockets listen on :{port} on the node ({mine}); the answer must come from BPF, not a process"] if mine else []


def nodeport_frontend_problems(services: "Sequence[Service]", port: int, family: str = "IPv4") -> list[str]:
    """The agent must list the family's wildcard NodePort frontend, ``0.0.0.0:<port>`` or ``[::]:<port>``, of type NodePort
    (that port, not another): SRC_NODEPORT_WILDCARD."""
    wildcard = NODEPORT_WILDCARD[family]
    hits = [s for s in services if s.frontend.ip == wildcard and s.frontend.port == port and s.type == "NodePort"]
    if hits:
        return []
    near = sorted(str(s.frontend) for s in services if s.type == "NodePort")
    return [f"the agent lists no {hp(wildcard, port)} NodePort frontend (NodePort frontends: {near})"]
