"""Terminating backends during a rollout: an established connection to a terminating backend keeps working, new
connections avoid terminating backends while an active one exists, and use them when only terminating ones remain.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen.

What the terminating-backends suite observes, in one family: a Service's two backends deleted one after the other,
the client agent's view of them at each step, where new connections went, and a flow to the first through its
termination."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..model.probe import ProbeAnswer


@dataclass(frozen=True)
class SlotsSeen:
    """The client agent's slots for the Service's frontend at one step: the selectable backends and those kept."""
    selectable: tuple[str, ...]
    kept: tuple[str, ...]


@dataclass(frozen=True)
class TerminatingObservation:
    family: str
    setting: str | None  # the agent's enable-k8s-terminating-endpoint (None: not in its config map)
    kept: bool  # whether that setting keeps terminating endpoints (rules.datapath.terminating_endpoints_kept)
    hold_s: int  # how long a deleted backend terminates (its preStop)
    backends: Mapping[str, str]  # pod -> its address:port of the family
    service: str  # the ClusterIP:port of the family
    node: str  # the client node, whose agent is read
    states: Mapping[str, Mapping[str, str]]  # step -> backend address -> its state in the agent's service list
    slots: Mapping[str, SlotsSeen]  # step (a_terminating, only_terminating) -> the agent's slots
    peers_a_terminating: tuple[str | None, ...]  # each new connection's backend address while term-a terminates
    peers_only_terminating: tuple[str | None, ...]  # and while only terminating backends remain (none when not kept)
    only_terminating_probe: ProbeAnswer
    flow_pod: str
    flow_outlived: bool  # term-a was still terminating when the flow was stopped
    flow: Mapping[str, Any] = field(default_factory=dict)  # the flow's summary (kpr probe flow)
    client_kernel: str | None = None
    no_backend_response: str | None = None

    def pod_of(self, address: str | None) -> str | None:
        """The pod behind a backend address (the address itself when it is none of the Service's)."""
        return {a: p for p, a in self.backends.items()}.get(address or "", address)

    def to_json(self) -> dict[str, Any]:
        """terminating.json."""
        return {"family": self.family, "enable_k8s_terminating_endpoint": self.setting, "hold_s": self.hold_s,
                "backends": dict(self.backends), "service": self.service,
                "agent": {"node": self.node, "states": {s: dict(v) for s, v in self.states.items()},
                          "slots": {s: {"selectable": list(v.selectable), "kept": list(v.kept)} for s, v in self.slots.items()}},
                "new_connections": {"a_terminating": [self.pod_of(p) for p in self.peers_a_terminating],
                                    "only_terminating": [self.pod_of(p) for p in self.peers_only_terminating]},
                "only_terminating_probe": self.only_terminating_probe.to_json(),
                "flow": {"pod": self.flow_pod, "backend": "term-a", "term_a_still_terminating_at_stop": self.flow_outlived,
                         "summary": dict(self.flow)},
                "client_kernel": self.client_kernel, "no_backend_response": self.no_backend_response}


def draining_flow_problems(report: "Mapping[str, Any]", backend: str, bound_ms: float) -> list[str]:
    """``report``: the summary of a ``kpr probe flow`` whose TCP connection reached ``backend`` before it started
    terminating, stopped while the pod still terminated. The connection kept working (datapath.SRC_TERMINATING_DRAIN):
    no reset, no close, no stall, no reconnect, no gap over ``bound_ms``."""
    out = []
    counts = {k: int(report.get(k) or 0) for k in ("resets", "closed", "stalls", "reconnects")}
    bad = {k: v for k, v in counts.items() if v}
    if bad:
        out.append(f"the established connection to {backend} was interrupted while it terminated: "
                   + ", ".join(f"{v} {k}" for k, v in bad.items()) + " (its active connections must be able to terminate gracefully)")
    gap = float(report.get("max_gap_ms") or 0.0)
    if gap > bound_ms:
        out.append(f"the established connection to {backend} went silent for {gap:.0f} ms while it terminated (bound {bound_ms:.0f} ms)")
    if not report:
        out.append(f"the flow to {backend} printed no summary, so whether it kept working is unknown")
    return out


def new_connection_problems(peers: "Sequence[str | None]", allowed: "Mapping[str, str]", avoided: "Mapping[str, str]", when: str) -> list[str]:
    """``peers``: the backend address each new connection reached (None: it failed); ``allowed``/``avoided``: address ->
    pod. Every connection reached an allowed backend (datapath.SRC_TERMINATING_SLOTS, SRC_TERMINATING_NEW)."""
    if not peers:
        return [f"{when}: no new connection was made, so which backends they reach is unknown"]
    out = []
    wrong = [p for p in peers if p is not None and p in avoided]
    stray = [p for p in peers if p is not None and p not in avoided and p not in allowed]
    failed = sum(p is None for p in peers)
    if wrong:
        pods = sorted({avoided[p] for p in wrong})
        out.append(f"{when}: {len(wrong)} of {len(peers)} new connections reached {', '.join(pods)}, which should not be picked")
    if stray:
        out.append(f"{when}: {len(stray)} of {len(peers)} new connections reached {', '.join(sorted(set(stray)))}, no backend of the Service")
    if failed:
        out.append(f"{when}: {failed} of {len(peers)} new connections failed although {', '.join(sorted(set(allowed.values())))} "
                   f"{'is' if len(set(allowed.values())) == 1 else 'are'} there to serve them")
    return out


def flow_outlived_problems(outlived: bool, backend: str, hold_s: int) -> list[str]:
    """The precondition of the draining judgement: the backend was still terminating when its flow was stopped (else
    nothing can be said of its connection)."""
    if outlived:
        return []
    return [f"{backend} was gone before the flow was stopped (its preStop holds it {hold_s} s); nothing can be said of its connection"]
