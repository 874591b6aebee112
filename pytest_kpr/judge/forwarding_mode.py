"""The per-Service forwarding mode: with the agents' bpf-lb-mode-annotation on, a NodePort Service annotated
``service.cilium.io/forwarding-mode`` is forwarded in that mode (rules.datapath.service_forwarding_mode), so the backend
behind another node sees the address that mode gives (rules.datapath.backend_sees).

Pure: an observation in, the list of problems out (empty = the property holds)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..parse.addr import hp
from .etp import client_address_problems


@dataclass(frozen=True)
class AnnotatedRequest:
    """A request from outside to one annotated Service's NodePort on a node without its backend, and what the backend saw."""

    service: str
    annotation: str  # its service.cilium.io/forwarding-mode
    mode: str  # the mode the rule gives it: SNAT | DSR
    node_ip: str  # where the request went (the receiving node's InternalIP of the family)
    node_port: int
    cilium_internal_ip: str  # the receiving node's cilium_host address of the family ("" unread)
    client: str  # the runner's own address toward the node
    http_code: int | None
    seen: str | None  # the client address the backend logged (None: no backend logged the request)
    expected: str  # whom the rule says the backend sees: client | node | cilium-internal-ip
    why: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def forwarding_mode_problems(r: AnnotatedRequest) -> list[str]:
    """HTTP 200 from the NodePort, then the address the backend logged against the Service's own mode."""
    if r.http_code != 200:
        return [f"{r.service} ({r.annotation}): {hp(r.node_ip, r.node_port)} from outside answered {r.http_code or 'nothing'}, so what "
                "the backend sees is unknown"]
    return [f"{r.service} (forwarding-mode {r.annotation}): {p}"
            for p in client_address_problems(r.seen, r.client, r.node_ip, r.expected, r.why, r.cilium_internal_ip)]
