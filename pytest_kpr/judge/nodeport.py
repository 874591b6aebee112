"""NodePort: served by the agent's BPF frontend, with no listening socket on the port.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ..parse import Service, Socket


def nodeport_listener_problems(listeners: "Sequence[Socket]", port: int) -> list[str]:
    mine = [s.local for s in listeners if s.local_port == port]
    return [f"{len(mine)} sockets listen on :{port} on the node ({mine}); the answer must come from BPF, not a process"] if mine else []


def nodeport_frontend_problems(services: "Sequence[Service]", port: int) -> list[str]:
    """The agent must list the wildcard ``0.0.0.0:<port>`` frontend of type NodePort (that port, not another)."""
    hits = [s for s in services if s.frontend.ip == "0.0.0.0" and s.frontend.port == port and s.type == "NodePort"]
    if hits:
        return []
    near = sorted(str(s.frontend) for s in services if s.type == "NodePort")
    return [f"the agent lists no 0.0.0.0:{port} NodePort frontend (NodePort frontends: {near})"]
