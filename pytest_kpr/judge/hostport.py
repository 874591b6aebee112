"""hostPort: served by an agent's HostPort frontend on the pod's node, admitted once per node.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..parse.addr import family_of


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
