"""Shared VIP: two Services claim the same (VIP, port, protocol).

Cilium's load-balancer control plane (1.18+) rejects the claimant whole while the owner keeps the
frontend and keeps serving; the conflict shows in the agent's health. When the owner is deleted,
released Cilium does not re-queue the claimant (a known gap, declared per version in
clusters/known-gaps.yaml: that test is xfail(strict=True) there, so a fix is reported); a follow-up
claimant update installs the frontend, Status Done, serving. The model in pytest_kpr.rules.lbmodel predicts
the ordering case and a generated sequence of upserts and deletes. Evidence: sharedvip.json.

Both ways (externalIPs, LB-IPAM) are made up to the claim first, then their owners are deleted and the
claimants watched together, one settle window for all. The "appears by itself" and follow-up tests come
last: a late look (a settle window after the watch) is made before any follow-up update, and the
module's other tests run in between, so it seldom costs waiting.

The property does not depend on the address family, so the suite runs once (with IPv4 VIPs) in a dual-stack run too:
the conflict check looks a frontend up by its address, whatever its family (writer.go validateFrontends,
``w.fes.Get(txn, loadbalancer.FrontendByAddress(params.Address))``: SRC_FRONTEND_CONFLICT), and the model predicts the
control plane's tables, not a datapath.
"""

from __future__ import annotations

import random
from typing import Iterator

import pytest

from pytest_kpr.suite import ClusterFacts, eventually, Evidence, holds, Lab, load_known_gaps, Settings, WaitTimeout
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st

from pytest_kpr.judge.shared_vip import (appeared_problems, claim_problems, follow_up_problems, health_problems, ordering_problems,
                                         owner_serving_problems, swap_problems)
from pytest_kpr.judge.shared_vip import Generated, GeneratedStep, PortSwap
from pytest_kpr.rules.lbmodel import Event, LbModel, Op, Variant
from pytest_kpr.scenarios.sharedvip import Record, SharedVip, SharedVipEvidence, Skip, frontend_key

pytestmark = [
    pytest.mark.kpr(property="shared VIP", evidence="sharedvip.json",
                    plane="control plane",
                    sources=["SRC_FRONTEND_CONFLICT", "SRC_SKIP_XLATE", "SRC_SKIP_XLATE_LB"]),
    pytest.mark.kpr_requires(cilium="1.18"),
]
GAP = "frontend-conflict-requeue"


@pytest.fixture(scope="module")
def shared(lab: Lab, probe: Lab, kpr_settings: Settings) -> SharedVip:
    vip = SharedVip(lab, kpr_settings, lab.run_id, lab.track_cluster_object)
    vip.deploy_backends()
    return vip


@pytest.fixture(scope="module")
def report(evidence: Evidence) -> Iterator[SharedVipEvidence]:
    data = SharedVipEvidence()
    yield data
    evidence.write("sharedvip.json", data.to_json())


WAYS = ["external-ips", "lb-ipam"]


def _selected_ways(request: pytest.FixtureRequest) -> list[str]:
    """The ways some selected test of this module asks for (``-k external-ips`` makes only that one)."""
    asked = {i.callspec.params.get("way") for i in request.session.items
             if i.module is request.module and hasattr(i, "callspec")}  # type: ignore[attr-defined]
    return [w for w in WAYS if w in asked]


@pytest.fixture(scope="module")
def scenarios(request: pytest.FixtureRequest, shared: SharedVip, report: SharedVipEvidence, evidence: Evidence, kpr_property: str) -> Iterator[dict[str, Record | str]]:
    """Every selected way up to the claim, then all the owners deleted and their claimants watched together
    (one settle window for all). A way that cannot be made here maps to the reason."""
    out = report.ways
    for way in _selected_ways(request):
        try:
            out[way] = shared.prepare(way)
        except Skip as e:
            out[way] = str(e)
    recs = [r for r in out.values() if isinstance(r, Record)]
    if recs:
        shared.release(recs)
    yield out
    for rec in recs:
        late = rec.late
        appeared = f"after {late.seconds_after_deletion} s (late)" if late and late.appeared else rec.release.appeared_by_itself
        evidence.figure(kpr_property, f"claimant rejected, owner HTTP {rec.claim.owner_http}; appeared by itself: {appeared}")


@pytest.fixture(params=WAYS)
def way(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def scenario(scenarios: dict[str, Record | str], way: str) -> Record:
    rec = scenarios[way]
    if isinstance(rec, str):
        pytest.skip(f"{way}: {rec}")
    return rec


@pytest.fixture
def looked_late(scenario: Record, scenarios: dict[str, Record | str], shared: SharedVip) -> Record:
    """The scenario after :meth:`SharedVip.late_look` (made for every way at once, before any follow-up)."""
    shared.late_look([r for r in scenarios.values() if isinstance(r, Record)])
    return scenario


def test_claimant_is_rejected_while_the_owner_holds_the_vip(scenario: Record) -> None:
    holds(claim_problems(scenario.claim, scenario.fe(80), scenario.fe(81)), f"shared VIP ({scenario.way})")


def test_the_conflict_is_visible_in_the_agents_health(scenario: Record) -> None:
    holds(health_problems(scenario.claim.health), f"shared VIP ({scenario.way}): the rejected claim is not visible in the agent's health")


def test_the_owner_keeps_serving_during_the_conflict(scenario: Record) -> None:
    holds(owner_serving_problems(scenario.claim, scenario.vip), f"shared VIP ({scenario.way})")


def model_variant(kpr_settings: Settings, cilium_version: str) -> Variant:
    """What the cluster should do: Cilium 1.18's behaviour where the known gap applies, a fixed one otherwise."""
    assert kpr_settings.clusters_dir is not None
    gap = load_known_gaps(kpr_settings.clusters_dir / "known-gaps.yaml")[GAP]
    return Variant.CILIUM_1_18 if gap.applies(cilium_version) else Variant.REQUEUE


def test_claim_before_release_in_one_window_ends_as_the_model_predicts(shared: SharedVip, kpr_settings: Settings, kpr_facts: ClusterFacts,
                                                                      report: SharedVipEvidence) -> None:
    report.ordering = shared.claim_before_release(model_variant(kpr_settings, kpr_facts.cilium_version))
    holds(ordering_problems(report.ordering), "shared VIP ordering")


@pytest.fixture(scope="module")
def port_swap(shared: SharedVip, kpr_settings: Settings, kpr_facts: ClusterFacts, report: SharedVipEvidence) -> PortSwap:
    report.port_swap = shared.port_swap(model_variant(kpr_settings, kpr_facts.cilium_version))
    return report.port_swap


def test_a_port_swap_ends_as_the_model_predicts(port_swap: PortSwap) -> None:
    """Two services swapping ports on one VIP: each upsert is rejected while the other holds the port it
    wants, so both keep their old frontend (both variants: no release, nothing to re-queue)."""
    holds(swap_problems(port_swap.steps[PortSwap.SWAP]), f"shared VIP port swap ({port_swap.variant}, VIP {port_swap.vip})")


def test_the_release_first_handoff_recovers_a_port_swap(port_swap: PortSwap) -> None:
    """Release first, then claim: s0 moves to a free port, s1 gets a follow-up event and takes s0's old
    port, s0 takes s1's old port; every frontend ends Done with the right owner and no conflict left."""
    holds(swap_problems(port_swap.steps[PortSwap.HANDOFF]), f"shared VIP port swap recovery ({port_swap.variant}, VIP {port_swap.vip})")


PORTS = [90, 91, 92]
SERVICES = ["vip-s0", "vip-s1", "vip-s2"]
event_strategy = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from(SERVICES), st.sets(st.sampled_from(PORTS), min_size=1, max_size=2).map(sorted)),
    st.tuples(st.just("delete"), st.sampled_from(SERVICES), st.just([])),
)


def model_of(events: list[tuple[str, str, list[int]]], vip: str, ns: str, variant: Variant) -> list[LbModel]:
    """The model after each event, one coalescing window apart (as the test applies them)."""
    m, out, live = LbModel(variant=variant), [], set()
    for i, (op, name, ports) in enumerate(events):
        if op == "upsert":
            live.add(name)
            m.push(Event(float(i * 1000), Op.UPSERT, f"{ns}/{name}", tuple(frontend_key(vip, p) for p in ports)))
        elif name in live:
            live.discard(name)
            m.push(Event(float(i * 1000), Op.DELETE, f"{ns}/{name}"))
        m.advance()
        out.append(LbModel(variant=m.variant, services=dict(m.services), frontends={a: type(f)(f.owner, f.status) for a, f in m.frontends.items()},
                           rejected=dict(m.rejected)))
    return out


def interesting(events: list[tuple[str, str, list[int]]]) -> bool:
    """A conflict is rejected and later the rejected frontend's owner is deleted: the case that matters."""
    states = model_of(events, "198.18.10.80", "ns", Variant.CILIUM_1_18)
    for i, st_ in enumerate(states):
        for _, (_, rej) in st_.rejected.items():
            owner = rej.error.rsplit(" is owned by ", 1)[1]
            if any(op == "delete" and f"ns/{name}" == owner for op, name, _ in events[i + 1:]):
                return True
    return False


def test_generated_upserts_and_deletes_end_as_the_model_predicts(shared: SharedVip, kpr_settings: Settings, kpr_facts: ClusterFacts,
                                                                 report: SharedVipEvidence) -> None:
    """A Hypothesis-generated sequence (seeded by --kpr-seed, printed, replayable) that contains a rejected
    claim whose owner is later deleted. Each event is applied, then the agent is polled until it matches
    the model's prediction for the sequence so far (which also keeps events in separate windows)."""
    lab, s = shared.lab, kpr_settings
    variant = model_variant(kpr_settings, kpr_facts.cilium_version)
    vip = s.shared_vip
    addrs = [frontend_key(vip, p) for p in PORTS]
    events = find(st.lists(event_strategy, min_size=4, max_size=8), interesting,
                  settings=settings(database=None, phases=[Phase.generate], max_examples=2000, suppress_health_check=list(HealthCheck)),
                  random=random.Random(s.seed))
    predictions = model_of(events, vip, lab.ns, variant)
    report.generated = run = Generated(s.seed, variant.value, tuple((op, name, tuple(ports)) for op, name, ports in events))
    live: set[str] = set()
    for i, ((op, name, ports), m) in enumerate(zip(events, predictions, strict=True)):
        if op == "upsert":
            body = shared.service(name, "external-ips", vip, ports)
            if name in live:
                lab.kube.patch("Service", name, lab.ns, {"spec": {"ports": body["spec"]["ports"]}})
            else:
                lab.kube.create(body)
                live.add(name)
        elif name in live:
            lab.kube.delete("Service", name, lab.ns)
            live.discard(name)
        want = {a: m.owner(a) for a in addrs if m.owner(a)}
        run.steps.append(GeneratedStep(op, name, tuple(ports), want))

        def observe() -> dict[str, str]:
            return {a: f.service for a, f in shared.frontends(addrs).items() if f.status == "Done"}

        try:
            eventually(observe, until=lambda got, want=want: got == want, timeout=lab.t.DATAPATH_CONVERGENCE, first_after=lab.t.LB_FIRST_LOOK,
                       what=f"the agent's owners of {vip}:{PORTS} to match the model after event {i}")
        except WaitTimeout as e:
            seen = observe()
            run.steps[-1] = GeneratedStep(op, name, tuple(ports), want, seen)
            pytest.fail(
                f"shared VIP model vs cluster (seed {s.seed}, --kpr-seed={s.seed} replays it): sequence {events}; after event {i} "
                f"the model ({variant.value}) says {want}, the agent {seen} ({e})", pytrace=False)
    for name in sorted(live):
        lab.kube.delete("Service", name, lab.ns)


@pytest.mark.kpr_known_gap(GAP)
def test_claimant_frontend_appears_after_the_owner_is_deleted(looked_late: Record) -> None:
    """Runs after the module's other tests: a late look is made (a settle window after the watch) before
    any follow-up update, so a claimant that appears after the settle window is told from one that never does."""
    holds(appeared_problems(looked_late.vip, looked_late.release, looked_late.late), f"shared VIP ({looked_late.way})")


def test_a_follow_up_claimant_update_installs_the_frontend_done_and_serving(looked_late: Record, shared: SharedVip) -> None:
    shared.follow_up(looked_late)
    holds(follow_up_problems(looked_late.vip, looked_late.follow_up), f"shared VIP ({looked_late.way})")
