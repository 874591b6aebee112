"""What the terminating-backends suite observes, in one family: a Service's two backends deleted one after the other,
the client agent's view of them at each step, where new connections went, and a flow to the first through its
termination."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .probe import ProbeAnswer


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
