"""The shared-VIP judgements (pytest_kpr.judge.shared_vip), branch by branch, on hand-made observations: no root, no
pytester, no cluster; and the evidence form (sharedvip.json) of each observation type."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.shared_vip import (CONFLICT, appeared_problems, claim_problems, follow_up_problems, health_problems,
                                         ordering_problems, owner_serving_problems, swap_problems)
from pytest_kpr.judge.shared_vip import (Claim, FollowUp, Frontend, Generated, GeneratedStep, Health, LateLook, Ordering, Owned, Owners,
                                         PortSwap, Release, SwapStep)

VIP = "198.18.10.80"
FE80, FE81 = f"{VIP}:80/TCP", f"{VIP}:81/TCP"
OWNER, CLAIMANT = "ns/vip-owner-eip", "ns/vip-claimant-eip"
ROW = {"id": "agent.controlplane.loadbalancer-reflectors.job", "level": "Degraded", "message": "Failure processing services",
       "error": f"{CONFLICT}: {FE80} is owned by {OWNER}"}
SEEN = Health(tally={"stopped": 0, "degraded": 1, "ok": 40}, error_seen=True, reflector=(ROW,))


def claim(owner: str | None = OWNER, kept: str | None = CLAIMANT, http: int = 200, health: Health = SEEN) -> Claim:
    fes = {**({FE80: Frontend(owner, "Done")} if owner else {}), **({FE81: Frontend(kept, "Done")} if kept else {})}
    return Claim(frontends=fes, owner_of_vip=owner, health=health, owner_http=http)


@pytest.mark.parametrize(("observed", "fragments"), [
    (claim(), []),
    (claim(owner=CLAIMANT), [f"while the owner exists {FE80} belongs to {CLAIMANT}; the claimant must be rejected"]),
    (claim(owner=None), [f"while the owner exists {FE80} belongs to None"]),
    (claim(kept=None), [f"a rejected upsert changes nothing, so the claimant keeps {FE81}"]),
    (claim(kept=OWNER), [f"so the claimant keeps {FE81}: {{'{FE80}': {{'service': '{OWNER}'"]),
    (claim(owner=None, kept=None), ["belongs to None", "the claimant keeps"]),
])
def test_claim_judgement(observed: Claim, fragments: list[str]) -> None:
    problems = claim_problems(observed, FE80, FE81)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("health", "fragments"), [
    (SEEN, []),
    (Health(tally={"stopped": 0, "degraded": 0, "ok": 41}, error_seen=True),
     ["plain `cilium-dbg status` shows no degraded module (Modules Health {'stopped': 0, 'degraded': 0, 'ok': 41})"]),
    (Health(tally=None, error_seen=True), ["shows no degraded module (Modules Health None)"]),
    (Health(tally=SEEN.tally, error_seen=False, reflector=({**ROW, "error": ""},)),
     [f"`db/show health` has no Degraded loadbalancer-reflectors row whose Error says '{CONFLICT}' ([{{'id'"]),
    (Health(tally=None, error_seen=False), ["no degraded module", "no Degraded loadbalancer-reflectors row"]),
])
def test_health_judgement(health: Health, fragments: list[str]) -> None:
    problems = health_problems(health)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("code", "problems"), [
    (200, []), (0, [f"the owner's {VIP}:80 answered HTTP 0 during the conflict"]), (503, [f"the owner's {VIP}:80 answered HTTP 503 during the conflict"]),
])
def test_owner_serving_judgement(code: int, problems: list[str]) -> None:
    assert owner_serving_problems(claim(http=code), VIP) == problems


EVENTS = ({"at_ms": 0.0, "op": "upsert", "service": OWNER, "frontends": [FE80]},)


@pytest.mark.parametrize(("predicted", "observed", "fragments"), [
    (None, None, []), (CLAIMANT, CLAIMANT, []),
    (None, CLAIMANT, [f"claim then release 3.2 ms apart; the model (cilium-1.18) predicts owner None, the agent shows {CLAIMANT}; events [{{'at_ms': 0.0"]),
    (CLAIMANT, None, [f"predicts owner {CLAIMANT}, the agent shows None"]),
])
def test_ordering_judgement(predicted: str | None, observed: str | None, fragments: list[str]) -> None:
    problems = ordering_problems(Ordering(EVENTS, 3.2, "cilium-1.18", predicted, observed))
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


A = Owners({FE80: OWNER}, ())
B = Owners({FE80: OWNER}, (f"{CONFLICT}: {FE80} is owned by {OWNER}",))


@pytest.mark.parametrize(("steps", "fragments"), [
    ((SwapStep("one", A, A), SwapStep("two", B, B)), []),
    ((SwapStep("one", A, A), SwapStep("two", B, A)),
     [f"two: the model says {{'owners': {{'{FE80}': '{OWNER}'}}, 'errors': ['{CONFLICT}: {FE80} is owned by {OWNER}']}}, the agent "
      f"shows {{'owners': {{'{FE80}': '{OWNER}'}}, 'errors': []}}"]),
    ((SwapStep("one", A, Owners({}, ())), SwapStep("two", B, A)), ["one: the model says", "two: the model says"]),
])
def test_swap_judgement(steps: tuple[SwapStep, ...], fragments: list[str]) -> None:
    problems = swap_problems(steps)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


def released(ended_by: str, marks: dict[str, float] | None = None) -> Release:
    marks = {"owner_gone": 0.4, "marker_done": 0.6, "processed": 0.6} if marks is None else marks
    return Release(ended_by, settle_seconds=1.0, watched_seconds=1.6, observations=9, marks=marks, marker="10.96.0.9:80/TCP",
                   last={"service": "", "status": "Deleted"})


@pytest.mark.parametrize(("release", "late", "fragments"), [
    (released("appeared", {"appeared": 0.3}), None, []),
    (released("settled"), None, [f"the claimant's {VIP}:80 did not appear within 1.6s after the owner was deleted; Cilium had processed the "
                                 "deletion 0.6s after it (owner's frontend gone, marker 10.96.0.9:80/TCP Done), then 1.0s more were watched; "
                                 "nor by a later look at -s (last seen: {'service': '', 'status': 'Deleted'})"]),
    (released("settled"), LateLook(2.7, False, {"service": OWNER, "status": "Deleted"}), ["nor by a later look at 2.7s (last seen: {'service': 'ns/vip-owner"]),
    (released("settled"), LateLook(2.7, True, {"service": CLAIMANT, "status": "Done"}),
     [f"the claimant's {VIP}:80 appeared after 2.7s, later than the settle window: not within 1.6s", "(--kpr-settle=1.0)"]),
    (released("timeout", {"owner_gone": 0.4}), None, ["the watch timed out before Cilium showed it had processed the deletion (seen: ['owner_gone'])"]),
])
def test_appeared_judgement(release: Release, late: LateLook | None, fragments: list[str]) -> None:
    problems = appeared_problems(VIP, release, late)
    assert len(problems) == min(1, len(fragments)) and all(f in problems[0] for f in fragments), problems


@pytest.mark.parametrize(("follow", "fragments"), [
    (FollowUp(True, 0.8, {"service": CLAIMANT, "status": "Done"}, 200), []),
    (FollowUp(False, None, {"service": "", "status": "Deleted"}, None),
     [f"after a follow-up update the claimant still does not own {VIP}:80: {{'service': '', 'status': 'Deleted'}}"]),
    (FollowUp(False, None, None, None), ["still does not own 198.18.10.80:80: None"]),
    (FollowUp(True, 0.8, {"service": CLAIMANT, "status": "Pending"}, 200), ["installed but status Pending, HTTP 200"]),
    (FollowUp(True, 0.8, {"service": CLAIMANT, "status": "Done"}, 503), ["installed but status Done, HTTP 503"]),
])
def test_follow_up_judgement(follow: FollowUp, fragments: list[str]) -> None:
    problems = follow_up_problems(VIP, follow)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


def test_the_evidence_forms_are_sharedvip_jsons() -> None:
    """Each type's part of sharedvip.json, whole: the suites and `kpr matrix` readers see the keys they saw as dicts."""
    c = claim()
    assert c.to_json() == {"frontends": {FE80: {"service": OWNER, "status": "Done", "error": ""},
                                         FE81: {"service": CLAIMANT, "status": "Done", "error": ""}},
                           "owner_of_vip": OWNER, "owner_http": 200,
                           "health": {"tally": {"stopped": 0, "degraded": 1, "ok": 40}, "degraded": 1, "error_seen": True,
                                      "reflector": [ROW], "shown_by": [], "verbose": {}}}
    assert Owned(FE80, OWNER, 1.2).to_json() == {"frontend": FE80, "owner": OWNER, "seconds_to_done": 1.2}
    assert released("settled").to_json() == {"appeared_by_itself": False, "ended_by": "settled", "settle_seconds": 1.0, "watched_seconds": 1.6,
                                             "observations": 9, "marks": {"owner_gone": 0.4, "marker_done": 0.6, "processed": 0.6},
                                             "marker": "10.96.0.9:80/TCP", "last": {"service": "", "status": "Deleted"}}
    assert released("appeared", {}).to_json()["appeared_by_itself"] is True
    assert LateLook(2.0, True, None).to_json() == {"seconds_after_deletion": 2.0, "appeared": True, "frontend": None}
    assert FollowUp(True, 0.5, None, 200).to_json() == {"installed": True, "seconds_to_done": 0.5, "frontend": None, "http": 200}
    assert Ordering(EVENTS, 3.2, "requeue", None, OWNER).to_json() == {"events": [dict(EVENTS[0])], "gap_ms": 3.2, "variant": "requeue",
                                                                        "predicted_owner": None, "observed_owner": OWNER}
    steps = tuple(SwapStep(f"s{i}", A, B if i == 1 else A) for i in range(5))
    swap = PortSwap(VIP, "cilium-1.18", (OWNER,), steps).to_json()
    assert swap["swapped"] == {"step": "s1", "model": {"owners": {FE80: OWNER}, "errors": []},
                               "agent": {"owners": {FE80: OWNER}, "errors": list(B.errors)}, "match": False}
    assert swap["recovered"]["step"] == "s4" and [s["match"] for s in swap["steps"]] == [True, False, True, True, True]
    assert swap["rejected_after_swap"] == [OWNER] and swap["vip"] == VIP and swap["variant"] == "cilium-1.18"
    assert [s.step for s in steps[PortSwap.SWAP]] == ["s0", "s1"] and [s.step for s in steps[PortSwap.HANDOFF]] == ["s2", "s3", "s4"]
    g = Generated(7, "cilium-1.18", (("upsert", "vip-s0", (90,)),), [GeneratedStep("upsert", "vip-s0", (90,), {FE80: OWNER}),
                                                                    GeneratedStep("delete", "vip-s0", (), {}, {FE80: OWNER})])
    assert g.to_json() == {"seed": 7, "variant": "cilium-1.18", "sequence": [["upsert", "vip-s0", [90]]],
                           "steps": [{"op": "upsert", "service": "vip-s0", "ports": [90], "model": {FE80: OWNER}},
                                     {"op": "delete", "service": "vip-s0", "ports": [], "model": {}, "cluster": {FE80: OWNER}}]}
