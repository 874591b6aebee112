"""NodePort: served by the agent's BPF frontend, with no listening socket on the port.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..parse.addr import hp
from ..rules.datapath import NODEPORT_WILDCARD

if TYPE_CHECKING:
    from ..parse import Service, Socket


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
