"""What the shared-VIP suite observes: each way's claim (the frontends and the agent's health while two Services want one
VIP:port), what followed the owner's deletion (the release watch, a late look, a follow-up update), the ordering case,
and the port swap. Each type's ``to_json`` is its part of sharedvip.json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Frontend:
    """One row of ``db/show frontends``: who owns the address, its status, its error."""
    service: str
    status: str
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Owned:
    """The owner took VIP:80, Done, this long after it was created."""
    frontend: str
    owner: str
    seconds_to_done: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Health:
    """The conflict as the agent shows it: the degraded count from plain ``status``, the error text from ``db/show health``."""
    tally: Mapping[str, int] | None  # Modules Health {stopped, degraded, ok}; None: plain status printed no tally
    error_seen: bool  # a Degraded reflector row whose Error names the conflict
    reflector: tuple[Mapping[str, str], ...] = ()  # the reflector's rows: id, level, message, error
    shown_by: tuple[str, ...] = ()
    verbose: Mapping[str, Any] = field(default_factory=dict)  # what --verbose showed (recorded, not judged)

    @property
    def degraded(self) -> int | None:
        return self.tally["degraded"] if self.tally else None

    def to_json(self) -> dict[str, Any]:
        return {"tally": dict(self.tally) if self.tally else None, "degraded": self.degraded, "error_seen": self.error_seen,
                "reflector": [dict(r) for r in self.reflector], "shown_by": list(self.shown_by), "verbose": dict(self.verbose)}


@dataclass(frozen=True)
class Claim:
    """The claimant asked for the owner's port too: the frontends, who owns VIP:80, the health, the owner's HTTP answer."""
    frontends: Mapping[str, Frontend]
    owner_of_vip: str | None  # who owns the claimed frontend (VIP:80), from the same read
    health: Health
    owner_http: int

    def to_json(self) -> dict[str, Any]:
        return {"frontends": {a: f.to_json() for a, f in self.frontends.items()}, "owner_of_vip": self.owner_of_vip,
                "health": self.health.to_json(), "owner_http": self.owner_http}


@dataclass(frozen=True)
class Release:
    """How the watch after the owner's deletion ended: ``appeared`` (the claimant took the frontend by itself), ``settled``
    (Cilium had processed the deletion and the settle window passed) or ``timeout``."""
    ended_by: str
    settle_seconds: float
    watched_seconds: float
    observations: int
    marks: Mapping[str, float]  # owner_gone, marker_done, processed, appeared: seconds after the deletion
    marker: str  # the marker Service's frontend
    last: Mapping[str, Any] | None  # the claimed frontend as last read

    @property
    def appeared_by_itself(self) -> bool:
        return self.ended_by == "appeared"

    def to_json(self) -> dict[str, Any]:
        return {"appeared_by_itself": self.appeared_by_itself, "ended_by": self.ended_by, "settle_seconds": self.settle_seconds,
                "watched_seconds": self.watched_seconds, "observations": self.observations, "marks": dict(self.marks),
                "marker": self.marker, "last": dict(self.last) if self.last else None}


@dataclass(frozen=True)
class LateLook:
    """One more read a settle window after the watch ended: did the claimant appear after all?"""
    seconds_after_deletion: float
    appeared: bool
    frontend: Mapping[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {"seconds_after_deletion": self.seconds_after_deletion, "appeared": self.appeared,
                "frontend": dict(self.frontend) if self.frontend else None}


@dataclass(frozen=True)
class FollowUp:
    """A follow-up claimant update: did it install the frontend, Done, serving?"""
    installed: bool
    seconds_to_done: float | None
    frontend: Mapping[str, Any] | None
    http: int | None

    def to_json(self) -> dict[str, Any]:
        return {"installed": self.installed, "seconds_to_done": self.seconds_to_done,
                "frontend": dict(self.frontend) if self.frontend else None, "http": self.http}


@dataclass(frozen=True)
class Ordering:
    """Claim then release, back to back: the events as the model was given them, its prediction, what the agent shows."""
    events: tuple[Mapping[str, Any], ...]
    gap_ms: float
    variant: str
    predicted_owner: str | None
    observed_owner: str | None

    def to_json(self) -> dict[str, Any]:
        return {"events": [dict(e) for e in self.events], "gap_ms": self.gap_ms, "variant": self.variant,
                "predicted_owner": self.predicted_owner, "observed_owner": self.observed_owner}


@dataclass(frozen=True)
class Owners:
    """The owners of the VIP's frontends (address -> service, Done only) and the conflict errors, as one side saw them."""
    owners: Mapping[str, str]
    errors: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"owners": dict(self.owners), "errors": list(self.errors)}


@dataclass(frozen=True)
class SwapStep:
    """One step of the port swap: the model's owners and errors beside the agent's."""
    step: str
    model: Owners
    agent: Owners

    @property
    def match(self) -> bool:
        return self.model == self.agent

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "model": self.model.to_json(), "agent": self.agent.to_json(), "match": self.match}


@dataclass(frozen=True)
class PortSwap:
    """Two Services swap ports on one VIP (steps 0-1), then the release-first handoff (steps 2-4)."""
    vip: str
    variant: str
    rejected_after_swap: tuple[str, ...]
    steps: tuple[SwapStep, ...]

    SWAP = slice(0, 2)
    HANDOFF = slice(2, None)

    def to_json(self) -> dict[str, Any]:
        return {"vip": self.vip, "variant": self.variant, "rejected_after_swap": list(self.rejected_after_swap),
                "swapped": self.steps[1].to_json(), "recovered": self.steps[-1].to_json(), "steps": [s.to_json() for s in self.steps]}


@dataclass(frozen=True)
class GeneratedStep:
    """One event of a generated sequence, the owners the model predicts after it, and (when they never matched) the agent's."""
    op: str
    service: str
    ports: tuple[int, ...]
    model: Mapping[str, str]
    cluster: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "service": self.service, "ports": list(self.ports), "model": dict(self.model),
                **({"cluster": dict(self.cluster)} if self.cluster is not None else {})}


@dataclass
class Generated:
    """A Hypothesis-generated sequence of upserts and deletes (replayable with its seed) and each step as it was applied."""
    seed: int
    variant: str
    sequence: tuple[tuple[str, str, tuple[int, ...]], ...]
    steps: list[GeneratedStep] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "variant": self.variant, "sequence": [[op, name, list(ports)] for op, name, ports in self.sequence],
                "steps": [s.to_json() for s in self.steps]}
