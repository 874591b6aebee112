"""What the DSR/SNAT suite observes: a request from outside to a node's NodePort, forwarded to a backend on another
node, and the address that backend saw."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


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
