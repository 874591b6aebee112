"""The shared-VIP judgements: each takes what the suite observed (the types below) and returns the problems,
worded for ``holds(problems, f"shared VIP ({way})")``. What Cilium does with a second claim on one VIP:port, and why, is
in pytest_kpr.rules.lbmodel (SRC_FRONTEND_CONFLICT) and the suite's docstring.

What the shared-VIP suite observes: each way's claim (the frontends and the agent's health while two Services want one
VIP:port), what followed the owner's deletion (the release watch, a late look, a follow-up update), the ordering case,
and the port swap. Each type's ``to_json`` is its part of sharedvip.json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from ..parse.addr import hp


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


#: the module whose health a frontend conflict degrades, and the error text (pytest_kpr.rules.datapath FORMAT_RULES)
REFLECTOR_MODULE = "loadbalancer-reflectors"
CONFLICT = "frontend already owned by another service"


def _frontends(claim: Claim) -> dict[str, dict[str, str]]:
    return {a: f.to_json() for a, f in claim.frontends.items()}


def claim_problems(claim: Claim, owner_frontend: str, claimant_frontend: str) -> list[str]:
    """While the owner exists it keeps the claimed frontend, and the rejected claimant keeps the one it had."""
    out = []
    owner = claim.owner_of_vip or ""
    if not (owner and owner.split("/")[-1].startswith("vip-owner")):
        out.append(f"while the owner exists {owner_frontend} belongs to {claim.owner_of_vip}; the claimant must be rejected: {_frontends(claim)}")
    kept = claim.frontends.get(claimant_frontend)
    if kept is None or not kept.service.split("/")[-1].startswith("vip-claimant"):
        out.append(f"a rejected upsert changes nothing, so the claimant keeps {claimant_frontend}: {_frontends(claim)}")
    return out


def health_problems(h: Health) -> list[str]:
    """The conflict shows both ways Cilium shows it: a degraded module in plain ``status``, the error in ``db/show health``."""
    missing = []
    if not h.degraded:
        missing.append(f"plain `cilium-dbg status` shows no degraded module (Modules Health {dict(h.tally) if h.tally else None})")
    if not h.error_seen:
        missing.append(f"`db/show health` has no Degraded {REFLECTOR_MODULE} row whose Error says '{CONFLICT}' "
                       f"({[dict(r) for r in h.reflector]})")
    return missing


def owner_serving_problems(claim: Claim, vip: str) -> list[str]:
    """The owner keeps serving while the claim is rejected."""
    code = claim.owner_http
    return [] if code == 200 else [f"the owner's {hp(vip, 80)} answered HTTP {code} during the conflict"]


def ordering_problems(o: Ordering) -> list[str]:
    """Claim then release in one window ends with the owner the model predicts."""
    if o.observed_owner == o.predicted_owner:
        return []
    return [f"claim then release {o.gap_ms} ms apart; the model ({o.variant}) predicts owner {o.predicted_owner}, the agent shows "
            f"{o.observed_owner}; events {[dict(e) for e in o.events]}"]


def swap_problems(steps: Sequence[SwapStep]) -> list[str]:
    """Each step of the port swap as the model says: the owners and the conflict errors."""
    return [f"{s.step}: the model says {s.model.to_json()}, the agent shows {s.agent.to_json()}" for s in steps if not s.match]


def appeared_problems(vip: str, released: Release, late: LateLook | None) -> list[str]:
    """After the owner's deletion the claimant's frontend appears by itself within the settle window (the known gap:
    released Cilium does not re-queue the claimant). One that appears only at the late look is said so, not 'never'."""
    if released.appeared_by_itself:
        return []
    marks = released.marks
    why = (f"Cilium had processed the deletion {marks['processed']}s after it (owner's frontend gone, marker {released.marker} Done), "
           f"then {released.settle_seconds}s more were watched" if released.ended_by == "settled" and "processed" in marks else
           f"the watch timed out before Cilium showed it had processed the deletion (seen: {sorted(marks)})")
    if late is not None and late.appeared:
        return [f"the claimant's {hp(vip, 80)} appeared after {late.seconds_after_deletion}s, later than the settle window: not within "
                f"{released.watched_seconds}s after the owner was deleted ({why}), but by a later look; longer than Cilium's coalescing "
                f"needs (--kpr-settle={released.settle_seconds})"]
    return [f"the claimant's {hp(vip, 80)} did not appear within {released.watched_seconds}s after the owner was deleted; {why}; nor by "
            f"a later look at {late.seconds_after_deletion if late else '-'}s (last seen: "
            f"{dict(late.frontend) if late and late.frontend else dict(released.last) if released.last else None})"]


def follow_up_problems(vip: str, f: FollowUp) -> list[str]:
    """A follow-up claimant update installs the frontend: Done, and serving HTTP 200."""
    if not f.installed:
        return [f"after a follow-up update the claimant still does not own {hp(vip, 80)}: {dict(f.frontend) if f.frontend else None}"]
    status = (f.frontend or {}).get("status")
    if status != "Done" or f.http != 200:
        return [f"installed but status {status}, HTTP {f.http}: {f.to_json()}"]
    return []
