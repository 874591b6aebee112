"""The datapath properties as pure judgements over observations, shared by the suites and by the
real-kernel tests that prove the judgement against a real kernel. Each returns the list of problems
(empty = the property holds), worded so that a failure names the property and shows what was seen.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SocketLBObservation:
    service: str  # ClusterIP:port the client connected to
    client: str  # client ip:port (the holder's socket)
    app_peer: str  # what getpeername() returned to the application
    socket_peer: str  # the kernel socket's peer (ss / netstat Foreign Address)
    backends: frozenset[str]  # ip:port of every backend
    service_translations: int  # conntrack entries that translate the service for this client (Cilium: TCP SVC entries)


def socket_lb_problems(obs: SocketLBObservation, coverage: str = "Full") -> list[str]:
    """Socket LB: the application sees the service, the kernel socket the backend, and no per-packet
    service translation exists. With ``Hostns-only`` coverage a pod's connection takes the per-packet
    path instead, and the expectations flip."""
    p: list[str] = []
    if coverage.lower().startswith("hostns"):
        if obs.socket_peer != obs.service:
            p.append(f"socket LB is hostns-only, yet the pod's socket peer is {obs.socket_peer}, not the service {obs.service}")
        if obs.service_translations == 0:
            p.append(f"socket LB is hostns-only, yet no per-packet service translation exists for {obs.client}")
        return p
    if obs.app_peer != obs.service:
        p.append(f"getpeername() returned {obs.app_peer}, not the service address {obs.service}: the reverse translation is missing")
    if obs.socket_peer == obs.service:
        p.append(f"the socket's peer is the service address {obs.service}: the destination was not rewritten at connect() (per-packet NAT, not socket LB)")
    elif obs.socket_peer not in obs.backends:
        p.append(f"the socket's peer {obs.socket_peer} is none of the backends {sorted(obs.backends)}")
    if obs.app_peer == obs.socket_peer:
        p.append(f"getpeername() equals the socket peer ({obs.app_peer}): no disparity, so no socket LB")
    if obs.service_translations:
        p.append(f"{obs.service_translations} service translation entries exist for {obs.client}: per-packet service NAT, not socket LB")
    return p
