"""NodePort forwarding mode (SNAT or DSR): a request from outside is answered, and the backend behind another node
sees the address the agent's reported mode and routing give (rules.datapath.backend_sees).

Pure: an observation in, the list of problems out (empty = the property holds).

What the DSR/SNAT suite observes: a request from outside to a node's NodePort, forwarded to a backend on another
node, and the address that backend saw."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..parse.addr import hp
from .etp import client_address_problems


@dataclass(frozen=True)
class DsrObservation:
    family: str
    mode: str  # the NodePort mode the agent reports (SNAT, DSR, Hybrid)
    routing: str  # the agent's inter-host routing mode (Tunnel, Native; "" unread)
    receiving_node: str
    node_ip: str  # the receiving node's InternalIP of the family, where the request went
    cilium_internal_ip: str  # the receiving node's cilium_host address of the family ("" unread)
    backend_node: str
    node_port: int
    client: str  # the runner's own address toward the node
    http_code: int | None
    seen: str | None  # the client address the backend logged (None: no backend logged the request)
    expected: str  # whom the rule says the backend sees: client | node | cilium-internal-ip (datapath.backend_sees)
    why: str  # the rule, in words
    rule: str  # its citation

    def to_json(self) -> dict[str, Any]:
        """dsr.json."""
        return asdict(self)


def dsr_problems(d: DsrObservation) -> list[str]:
    """HTTP 200 from the NodePort, then the address the backend logged against the rule."""
    if d.http_code != 200:
        return [f"{hp(d.node_ip, d.node_port)} from outside answered {d.http_code or 'nothing'}, so what the backend sees is unknown"]
    return client_address_problems(d.seen, d.client, d.node_ip, d.expected, d.why, d.cilium_internal_ip)
