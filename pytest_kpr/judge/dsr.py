"""NodePort forwarding mode (SNAT or DSR): a request from outside is answered, and the backend behind another node
sees the address the agent's reported mode and routing give (rules.datapath.backend_sees).

Pure: an observation in, the list of problems out (empty = the property holds)."""

from __future__ import annotations

from ..model.dsr import DsrObservation
from ..parse.addr import hp
from .etp import client_address_problems


def dsr_problems(d: DsrObservation) -> list[str]:
    """HTTP 200 from the NodePort, then the address the backend logged against the rule."""
    if d.http_code != 200:
        return [f"{hp(d.node_ip, d.node_port)} from outside answered {d.http_code or 'nothing'}, so what the backend sees is unknown"]
    return client_address_problems(d.seen, d.client, d.node_ip, d.expected, d.why, d.cilium_internal_ip)
