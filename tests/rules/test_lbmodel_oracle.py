"""An oracle for the shared-VIP model that does not come from the model: each ordering's outcome is written
down by hand from Cilium's source, with the reasoning next to it, and both the model
(pytest_kpr.rules.lbmodel) and the fake cluster's load-balancer control plane (driven through its Kubernetes
API at the event times) must reach it.

What the outcomes rest on (cilium/cilium, read with the search look-ups; docs/explanation/shared-vip.md):
- pkg/loadbalancer/writer/writer.go: UpsertServiceAndFrontends validates every frontend before writing
  anything; a frontend owned by another service fails the whole upsert with ErrFrontendConflict and the
  service keeps what it had. DeleteServiceAndFrontends removes the frontends and re-queues nobody.
- pkg/loadbalancer/reflectors/k8s.go: events are buffered (stream.Buffer: 500 events or 500 ms) into a
  map keyed by service; a later event for a service replaces the value but keeps the key's first-arrival
  position; errors only feed the reflector's health (Degraded while any remains) and are not retried.
- "requeue" is what a fixed Cilium would do: when frontends are released, rejected services are retried.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_kpr.observe.agent import Agent
from pytest_kpr.rules.lbmodel import Event, Op, Variant, replay
from pytest_kpr.testing import FakeCluster, FakeConfig

VIP = "198.18.10.80"
NS = "demo"


def fe(port: int) -> str:
    return f"{VIP}:{port}/TCP"


def up(at: float, svc: str, *ports: int) -> Event:
    return Event(at, Op.UPSERT, f"{NS}/{svc}", tuple(fe(p) for p in ports))


def rm(at: float, svc: str) -> Event:
    return Event(at, Op.DELETE, f"{NS}/{svc}")


@dataclass(frozen=True)
class Expected:
    owners: dict[str, str]  # frontend -> service name (VIP frontends only)
    rejected: frozenset[str]  # service names whose latest upsert stands rejected
    degraded: bool


@dataclass(frozen=True)
class Case:
    name: str
    events: tuple[Event, ...]
    cilium_118: Expected
    requeue: Expected
    why: str


def same(e: Expected) -> tuple[Expected, Expected]:
    return e, e


CASES = [
    Case("owner-updated-then-claim-then-owner-deleted-in-one-window",
         (up(0, "owner", 80), up(1000, "owner", 80, 81), up(1100, "claimant", 80), rm(1200, "owner")),
         *same(Expected({fe(80): "claimant"}, frozenset(), False)),
         "1000-1200 is one window. The owner's key arrived first (1000) and keeps that position with its latest value, the "
         "delete; the claimant's upsert comes after it. So the owner's frontends are removed first and the claim then finds "
         ":80 free. (Coalescing by last arrival would process the claim first and reject it.)"),
    Case("claim-then-release-in-one-window",
         (up(0, "owner", 80), up(1000, "claimant", 80), rm(1100, "owner")),
         Expected({}, frozenset({"claimant"}), True),
         Expected({fe(80): "claimant"}, frozenset(), False),
         "The claim arrives first in the window, is validated while the owner still holds :80 and is rejected whole; the "
         "delete then frees :80 and re-queues nobody, so the claimant stays missing and the reflector degraded. A re-queueing "
         "control plane retries the claim after the release."),
    Case("release-then-claim-in-one-window",
         (up(0, "owner", 80), rm(1000, "owner"), up(1100, "claimant", 80)),
         *same(Expected({fe(80): "claimant"}, frozenset(), False)),
         "The delete arrives first, frees :80, and the claim is then written: the supported release-first handoff."),
    Case("delete-of-a-rejected-service",
         (up(0, "owner", 80), up(1000, "claimant", 80), rm(2000, "claimant")),
         *same(Expected({fe(80): "owner"}, frozenset(), False)),
         "The claim is rejected (degraded). Deleting the claimant removes its service and its error from the reflector's "
         "map, so health recovers while the owner keeps :80. (Keeping the deleted service's rejection would leave it degraded.)"),
    Case("owner-deleted-in-a-later-window",
         (up(0, "owner", 80), up(1000, "claimant", 80), rm(2000, "owner")),
         Expected({}, frozenset({"claimant"}), True),
         Expected({fe(80): "claimant"}, frozenset(), False),
         "The rejected claim is never retried: after the owner's delete :80 has no owner (the known gap). A re-queue installs it."),
    Case("a-follow-up-claimant-event-installs-it",
         (up(0, "owner", 80), up(1000, "claimant", 80), rm(2000, "owner"), up(3000, "claimant", 80)),
         *same(Expected({fe(80): "claimant"}, frozenset(), False)),
         "The claimant's own next event (an annotation bump is one) is validated again after the release and written."),
    Case("port-swap",
         (up(0, "s0", 80), up(100, "s1", 81), up(1000, "s0", 81), up(1100, "s1", 80)),
         *same(Expected({fe(80): "s0", fe(81): "s1"}, frozenset({"s0", "s1"}), True)),
         "Each swap upsert is validated while the other service still holds the port it wants, so both are rejected and "
         "each keeps its old frontend. Nothing is released, so even a re-queue has nothing to retry."),
]


def expected(case: Case, variant: Variant) -> Expected:
    return case.cilium_118 if variant is Variant.CILIUM_1_18 else case.requeue


@pytest.mark.parametrize("variant", list(Variant), ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_model_reaches_the_oracle(case: Case, variant: Variant) -> None:
    m = replay(case.events, variant)
    want = expected(case, variant)
    got = Expected({a: f.owner.split("/")[1] for a, f in m.frontends.items()}, frozenset(s.split("/")[1] for s in m.rejected), m.degraded)
    assert got == want, f"{case.name} ({variant}): {case.why}"


# -- the fake cluster, driven through its API at the event times -------------------------------------

MS_PER_TICK = 100  # one API call or exec is one tick of the fake's clock (pytest_kpr.testing.lb)


def drive(case: Case, variant: Variant) -> Expected:
    c = FakeCluster(FakeConfig(pod_ready_ticks=0, lb_variant=variant.value, lb_window_ticks=5))
    c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    start = c.tick + 10
    live: set[str] = set()
    for ev in sorted(case.events, key=lambda e: e.at_ms):
        target = start + int(ev.at_ms) // MS_PER_TICK
        while c.tick + 1 < target:  # the next call advances the clock to the event's time
            c.server_version()
        assert c.tick + 1 == target, f"two events of {case.name} share a tick"
        name = ev.service.split("/")[1]
        if ev.op is Op.DELETE:
            c.delete("Service", name, NS)
            live.discard(name)
            continue
        ports = [{"name": f"p{a.split(':')[1].split('/')[0]}", "port": int(a.split(":")[1].split("/")[0]), "protocol": "TCP"} for a in ev.frontends]
        body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
                "spec": {"selector": {"app": "none"}, "externalIPs": [VIP], "ports": ports}}
        if name in live:
            c.patch("Service", name, NS, {"spec": {"ports": ports}})
        else:
            c.create(body)
            live.add(name)
    for _ in range(20):  # let every window close
        c.server_version()
    # only what the agent shows: owners from db/show frontends, degraded from db/show health (the error names
    # the frontend and its owner, not the rejected service, so "rejected" is not observable on its own)
    agent = Agent.on_node(c, "fake-worker")
    owners = {str(f.address): f.service.split("/")[1] for f in agent.frontends() if f.address.ip == VIP and f.status == "Done" and f.service}
    health = [s for s in agent.health() if s.module.endswith("loadbalancer-reflectors")]
    return Expected(owners, frozenset(), any(s.level == "Degraded" for s in health))


@pytest.mark.parametrize("variant", list(Variant), ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_fake_reaches_the_oracle(case: Case, variant: Variant) -> None:
    got = drive(case, variant)
    want = expected(case, variant)
    assert (got.owners, got.degraded) == (want.owners, want.degraded), f"{case.name} ({variant}): {case.why}; the fake shows {got}"


def test_the_oracle_tells_the_variants_and_the_coalescing_rules_apart() -> None:
    """The cases are worth having only if they separate the behaviours they are about."""
    assert any(c.cilium_118 != c.requeue for c in CASES), "some case tells cilium-1.18 from requeue"
    # the first case with the claimant's key arriving before the owner's: the claim is then processed first and rejected
    claim_first = replay([up(0, "owner", 80), up(1000, "claimant", 80), up(1100, "owner", 80, 81), rm(1200, "owner")])
    assert claim_first.owner(fe(80)) is None and claim_first.degraded, "the key's first arrival decides the order, so the case tells the rules apart"
