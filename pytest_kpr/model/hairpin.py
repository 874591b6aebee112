"""What the hairpin suite observes: a Service's only backend connecting to the Service from inside itself."""

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
