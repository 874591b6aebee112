"""The datapath properties as pure judgements over observations, shared by the suites and by the
real-kernel tests that prove the judgement against a real kernel. Each returns the list of problems
(empty = the property holds), worded so that a failure names the property and shows what was seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .datapath import NoBackendRule


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


# -- no backend -------------------------------------------------------------------------------------

#: the bound for "at once": a rejection takes well under a millisecond on the node (measured in the
#: real-kernel tier: scripts/bench_probes.py), a drop takes the client's whole timeout (seconds)
FAST_S = 1.0


@dataclass(frozen=True)
class NoBackendAttempt:
    """One client's attempt on a backendless service, as observed."""

    path: str  # e.g. "pod connect() to ClusterIP 10.96.0.12:80"
    tool: str  # curl | connect | raw
    verdict: str  # curl: its exit code as text; probes: their verdict
    seconds: float
    errno: str | None = None
    icmp: tuple[int, int] | None = None


def no_backend_problems(a: NoBackendAttempt, rule: "NoBackendRule", response: str) -> list[str]:
    """What is wrong with an attempt, given the sourced rule for its plane (pytest_kpr.datapath)."""
    where = f"no backend ({a.path}; {rule.plane} plane, ServiceNoBackendResponse={response})"
    want_fast = f"at once (under {FAST_S:g}s)" if rule.fast else "at its limit"
    why = f"{rule.why} [{rule.source.split(';')[0]}]"
    p: list[str] = []
    if a.tool == "curl":
        if a.verdict != str(rule.curl_exit):
            meaning = {"28": "it timed out: the traffic was dropped", "7": "it could not connect"}.get(a.verdict, "")
            p.append(f"{where}: curl exited {a.verdict} after {a.seconds:.2f}s{' (' + meaning + ')' if meaning else ''}; "
                     f"expected exit {rule.curl_exit} {want_fast}: {why}")
    elif a.tool == "connect":
        if a.verdict not in rule.connect:
            p.append(f"{where}: connect() gave {a.verdict}{' (' + a.errno + ')' if a.errno else ''} after {a.seconds:.2f}s; "
                     f"expected {' or '.join(sorted(rule.connect))} {want_fast}: {why}")
        elif rule.errnos and a.errno not in rule.errnos:
            p.append(f"{where}: connect() failed with {a.errno}, expected {' or '.join(sorted(rule.errnos))}: {why}")
    elif a.tool == "raw":
        if rule.raw is None:
            p.append(f"{where}: a raw packet cannot reach the {rule.plane} plane; this attempt was misclassified")
        elif a.verdict != rule.raw:
            p.append(f"{where}: a raw SYN got {a.verdict}{' ICMP %d/%d' % a.icmp if a.icmp else ''} after {a.seconds:.2f}s; "
                     f"expected {rule.raw}{' ICMP %d/%d' % rule.icmp if rule.icmp else ''}: {why}")
        elif rule.icmp is not None and a.icmp != rule.icmp:
            got = "no ICMP type/code" if a.icmp is None else "ICMP %d/%d" % a.icmp
            p.append(f"{where}: the reject answer is {got}, expected ICMP {rule.icmp[0]}/{rule.icmp[1]} "
                     f"(destination unreachable, port unreachable): {why}")
    else:
        raise ValueError(f"unknown tool {a.tool!r}")
    if not p and rule.fast and a.seconds >= FAST_S:
        p.append(f"{where}: {a.tool} failed as expected ({a.verdict}) but took {a.seconds:.2f}s; the {rule.plane} plane answers at once "
                 f"(bound {FAST_S:g}s)")
    return p
