"""Hairpin: a Service's only backend reaches the Service from inside itself, is served by itself, and sees the source its
plane gives (rules.datapath.hairpin_source: its own address on the socket plane, the service loopback address per packet).

Pure: an observation in, the list of problems out (empty = the property holds), worded so that a failure names the
property and shows what was seen.

What the hairpin suite observes: a Service's only backend connecting to the Service from inside itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HairpinObservation:
    family: str
    service: str  # ClusterIP:port
    pod: str  # the backend, and the client
    pod_ip: str
    plane: str  # the plane the rules say answers (datapath.plane_for): socket | per-packet
    coverage: str  # the agents' socket-LB coverage
    verdict: str  # the connect probe's verdict
    socket_peer: str | None  # the kernel socket's peer (recorded)
    http_code: int | None
    served_by: str | None  # the pod whose server logged the request (None: no pod did)
    seen: str | None  # the client address that server logged
    expected_source: str  # the rule's address (datapath.hairpin_source)
    why: str  # the rule, in words
    source: str  # the rule's citation
    #: why this cluster's answer is not judged ("" when it is: datapath.hairpin_unjudged)
    unjudged: str = ""


MARTIAN = ("; per packet a packet from a pod to itself must be source-NATed to the loopback address, else the kernel drops it "
           "as a martian")


def hairpin_reach_problems(h: HairpinObservation) -> list[str]:
    """The connection is made, HTTP 200 comes back, and the backend itself served it."""
    if h.verdict != "connected" or h.http_code != 200:
        return [f"{h.pod} could not reach its own Service {h.service} ({h.plane} plane): connect {h.verdict}, HTTP "
                f"{h.http_code or 'nothing'}{MARTIAN if h.plane == 'per-packet' else ''}"]
    if h.served_by != h.pod:
        return [f"the request to {h.service} was not served by {h.pod} (served by {h.served_by})"]
    return []


def hairpin_source_problems(h: HairpinObservation) -> list[str]:
    """The backend saw the source its plane gives (unknown when no request was logged: a problem too)."""
    if h.seen is None:
        return [f"{h.pod} logged no request from itself to {h.service}, so the source it saw is unknown"]
    if h.seen != h.expected_source:
        return [f"{h.pod} saw its own request to {h.service} come from {h.seen}, expected {h.expected_source} ({h.plane} plane: "
                f"{h.why}) [{h.source.split(';')[0]}]"]
    return []
