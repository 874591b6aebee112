"""UDP through the socket plane: a client that sent to a Service must read the reply from the Service's address.

A resolver sends its query to the ClusterIP and drops any reply whose source is another address. With socket LB the
datagram goes straight to a backend (connect4 for a connected socket, sendmsg4 for an unconnected ``sendto()``), so the
backend's reply carries the backend's address, and only the recvmsg4 hook's reverse translation turns it back into the
ClusterIP's (pytest_kpr.rules.datapath ``SRC_SOCK_SENDMSG``, ``SRC_SOCK_RECVMSG``). A connected client's getpeername()
is translated by getpeername4 (``SRC_SOCK_GETPEERNAME``).

Pure: observations in, problems out (empty = the property holds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class UdpAttempt:
    """One ``kpr probe udp`` from a client, as observed."""

    mode: str  # connected | unconnected
    target: str  # the frontend the client sent to, ip:port
    verdict: str  # answered | timeout | refused | unreachable | no-route | inconclusive
    reply_from: str | None = None  # the source recvfrom() reported for the reply
    peer: str | None = None  # getpeername() of a connected socket
    errno: str | None = None


def udp_reply_problems(a: UdpAttempt, backends: frozenset[str]) -> list[str]:
    """A UDP client of a Service with backends: it gets a reply, and reads it from the address it sent to."""
    what = f"UDP ({a.mode} client to {a.target})"
    v = 6 if a.target.startswith("[") else 4  # the hook of the target's family (bpf_sock.c cil_sock4_* / cil_sock6_*)
    if a.verdict != "answered":
        return [f"{what}: {a.verdict}{' (' + a.errno + ')' if a.errno else ''}, expected a reply: the Service has backends "
                f"{', '.join(sorted(backends)) or '(none listed)'}"]
    p: list[str] = []
    if a.reply_from != a.target:
        why = (f"the backend's own address: the socket LB's recvmsg{v} reverse translation is missing" if a.reply_from in backends
               else "neither the Service nor one of its backends")
        p.append(f"{what}: the reply came from {a.reply_from}, not from {a.target} ({why}); a resolver that sent to {a.target} "
                 f"drops it")
    if a.mode == "connected" and a.peer != a.target:
        p.append(f"{what}: getpeername() returned {a.peer}, not {a.target}: the getpeername{v} reverse translation is missing")
    return p


def udp_termination_problems(report: "dict", backend: str, bound_ms: float) -> list[str]:
    """``report``: the summary of a ``kpr probe flow --udp`` from a pod whose connected socket reached ``backend``, which
    was then deleted (another backend serving), stopped after the agent dropped it. The agent terminated the socket
    (datapath.SRC_UDP_SOCK_TERMINATION): the flow saw ECONNABORTED (``aborted``), reconnected through the Service and
    was answered again, silent for at most ``bound_ms``."""
    if not report:
        return [f"the flow to {backend} printed no summary, so what its socket saw is unknown"]
    out = []
    aborted, reconnects = int(report.get("aborted") or 0), int(report.get("reconnects") or 0)
    open_gap = next((g for g in report.get("gaps") or [] if g.get("open")), None)
    if not aborted:
        lost = int(report.get("lost") or 0)
        out.append(f"the connected socket to the deleted backend {backend} was not terminated (no ECONNABORTED): {lost} datagrams "
                   f"lost{', and it was never answered again' if open_gap else ''}; the agent terminates the UDP sockets "
                   f"connected to a deleted backend, so the client reconnects through the Service")
    elif not reconnects:
        out.append(f"the socket to {backend} was terminated ({aborted} aborted) but the flow never reconnected")
    if aborted and open_gap is not None:
        out.append(f"after its socket to {backend} was terminated the flow was never answered again (silent for the last "
                   f"{float(open_gap.get('ms') or 0):.0f} ms)")
    gap = float(report.get("max_gap_ms") or 0.0)
    if not out and gap > bound_ms:
        out.append(f"the flow went silent for {gap:.0f} ms when {backend} was deleted (bound {bound_ms:.0f} ms)")
    return out


@dataclass(frozen=True)
class UdpObservation:
    """The UDP suite's observation in one family: the three probes (as judged, and as printed for the evidence), the
    client agent's view of the frontend, and what the no-backend rule depends on."""
    family: str
    service: str  # dns's ClusterIP:port
    backends: tuple[str, ...]
    ghost: str  # the backendless Service's ClusterIP:port
    unconnected: UdpAttempt
    connected: UdpAttempt
    ghost_attempt: UdpAttempt
    ghost_elapsed_ms: float
    probes: Mapping[str, Mapping[str, Any]]  # what each probe printed (kpr probe udp --json)
    agent: Mapping[str, Any]  # the client agent's slots, lb entries and UDP conntrack entries for the frontend
    client_kernel: str | None = None
    no_backend_response: str | None = None

    def to_json(self) -> dict[str, Any]:
        """udp.json."""
        return {"family": self.family, "service": self.service, "backends": list(self.backends), "ghost": self.ghost,
                "probes": {k: dict(v) for k, v in self.probes.items()}, "agent": dict(self.agent), "client_kernel": self.client_kernel,
                "no_backend_response": self.no_backend_response}


def udp_attempt(printed: "Mapping[str, Any]") -> UdpAttempt:
    """A ``kpr probe udp --json`` result as the judgement reads it."""
    return UdpAttempt(printed["mode"], printed["target"], printed["verdict"], printed.get("reply_from"), printed.get("peer"),
                      printed.get("errno_name"))


@dataclass(frozen=True)
class UdpTermination:
    """The termination scenario in one family: a connected flow to a backend that was deleted, and its bound."""
    family: str
    setting: str | None  # enable-socket-lb-pod-connection-termination (None: not in the config map)
    service: str
    backends: Mapping[str, str]  # pod -> address:port
    deleted: str
    bound_ms: float
    flow_pod: str
    flow: Mapping[str, Any]  # the flow's summary (kpr probe flow)

    def to_json(self) -> dict[str, Any]:
        """udp-termination.json."""
        return {"family": self.family, "enable_socket_lb_pod_connection_termination": self.setting, "service": self.service,
                "backends": dict(self.backends), "deleted": self.deleted, "bound_ms": self.bound_ms,
                "flow": {"pod": self.flow_pod, "summary": dict(self.flow)}}
