"""ICMP errors about a SNATed NodePort flow: an ICMP fragmentation-needed error that the backend side sends about a
request a node source-NATed reaches the outside client reverse-translated -- addressed to the client, and carrying the
client's own address and port and the NodePort it asked (rules.datapath.SRC_ICMP_ERROR_REVNAT), so that its path-MTU
discovery works.

Pure: an observation in, the list of problems out (empty = the property holds)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..rules.datapath import ICMP_FRAG_NEEDED


@dataclass(frozen=True)
class IcmpErrorObservation:
    family: str
    target: str  # the receiving node's InternalIP:NodePort
    client: str  # the runner's source address:port of the datagram
    verdict: str  # the probe's: icmp-unreachable | timeout | ...
    icmp: tuple[int, int] | None  # the error's type and code
    inner_src: str | None  # the datagram's source as the error carries it
    inner_dst: str | None  # its destination there
    mtu: int | None  # the next-hop MTU the error names
    responder: str  # the backend pod that sent the error, and its node
    unjudged: str = ""  # why this cluster is not judged (datapath.icmp_error_judged)
    answered: int | None = None  # the errors the responder logged sending (None: its log could not be read)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def icmp_error_problems(o: IcmpErrorObservation) -> list[str]:
    """The error arrived, is a fragmentation-needed one, and the header inside it is the datagram as the client sent it."""
    if o.verdict != "icmp-unreachable" or o.icmp is None:
        head = f"no ICMP error came back to {o.client} for its datagram to {o.target} ({o.verdict})"
        if o.answered == 0:
            return [f"{head}, and {o.responder} logged no datagram: the NodePort did not forward it to the backend"]
        if o.answered is None:
            return [f"{head}; whether {o.responder} got the datagram is not known (its log could not be read): the NodePort did not "
                    "forward it, or the reverse NAT did not carry the error back"]
        return [f"{head}, though {o.responder} answered it with fragmentation needed ({o.answered} logged): the reverse NAT did not "
                "carry it back"]
    out = []
    if tuple(o.icmp) != ICMP_FRAG_NEEDED:
        out.append(f"the error that came back is ICMP {o.icmp[0]}/{o.icmp[1]}, not fragmentation needed (3/4)")
    if (o.inner_src, o.inner_dst) != (o.client, o.target):
        out.append(f"the error carries {o.inner_src} -> {o.inner_dst}, not the datagram as sent, {o.client} -> {o.target}: its inner "
                   "header was not reverse-translated, so the client's stack cannot match it to its socket")
    return out
