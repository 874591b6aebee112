"""The shared-VIP judgements: each takes what the suite observed (pytest_kpr.model.shared_vip) and returns the problems,
worded for ``holds(problems, f"shared VIP ({way})")``. What Cilium does with a second claim on one VIP:port, and why, is
in pytest_kpr.rules.lbmodel (SRC_FRONTEND_CONFLICT) and the suite's docstring."""

from __future__ import annotations

from typing import Sequence

from ..model.shared_vip import Claim, FollowUp, Health, LateLook, Ordering, Release, SwapStep
from ..parse.addr import hp

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
