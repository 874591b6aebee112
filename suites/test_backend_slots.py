"""Backend slots: the agent's BPF LB map holds exactly the service's ready endpoints, and follows a scale.

Evidence: svc.json (service_id, frontend, backends, backend_pods) and scale.json (backends,
new_backends, endpointslice, convergence_seconds, and timing: when each new backend first showed in the
EndpointSlice and in each agent, read every 250 ms, the per-agent lag and the slowest agent).
Convergence is polled, never slept for. An agent's slots are the ones a new connection picks: the master entry's COUNT
in ``lb/maps-dump`` (``bpf lb list`` prints no count, and a backend that is still terminating keeps its slot after the
count: SRC_TERMINATING_SLOTS), so a scale-down converges when the removed pods leave the count, however long they take
to exit; a pod that is terminating is not one of the replicas either.

Each family's frontend of web takes the backends of its own family only (SRC_BACKEND_SLOTS_FAMILY), which Kubernetes
lists in that family's EndpointSlice. The scale changes web, so it runs once: the first family of --kpr-ip-families is
timed as it converges, every other family is then waited for to converge as well (its ``convergence_seconds`` counts
from the first family's convergence, and it has no timing). The slots at 2 replicas, after the scale to 4 and after the
scale back to 2 are each observed for every family, and the tests are judged per family (evidence ``svc-ipv6.json``,
``scale-ipv6.json``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import Evidence, family_file, holds, Lab, Observation
from pytest_kpr.judge.backend_slots import Convergence, SlotsListed, SlotView, convergence_problems, listing_problems, new_backend_problems

pytestmark = pytest.mark.kpr(property="backend slots", evidence=["svc.json", "scale.json"],
                             plane="control plane",
                             sources=["SRC_BACKEND_SLOTS", "SRC_BACKEND_SLOTS_FAMILY"])


def _scale(views: dict[str, Lab], replicas: int) -> dict[str, Observation[Convergence]]:
    """Scale web once, timed in the first family; then each other family until it converged too."""
    first, *rest = views
    out = {first: views[first].scale_web(replicas)}
    for f in rest:
        out[f] = views[f].observe_converged(replicas)
    return out


@pytest.fixture(scope="module")
def at_two(web: Any, family_views: dict[str, Lab], evidence: Evidence) -> dict[str, SlotsListed]:
    """Each family's slots of web at 2 replicas (before any scale), with the client agent's service-list entry."""
    out: dict[str, SlotsListed] = {}
    for f, v in family_views.items():
        conv = v.observe_converged(2).value
        fe = v.frontend("web")
        agent = v.agent(v.client_node)
        svc = v.service_entry(agent, fe, "ClusterIP")
        mine = next(s for s in conv.slots if s.node == agent.node)
        evidence.write(family_file("svc.json", f), {
            "family": f,
            "service_id": svc.id if svc is not None else None,
            "frontend": fe.host_port(),
            "backends": list(mine.backends),
            "backend_pods": [v.pod_by_ip(b.rsplit(":", 1)[0].strip("[]")) for b in mine.backends],
        })
        evidence.report_value("web_backends", len(mine.backends))  # report.txt: web at 2 replicas, the first family's
        out[f] = SlotsListed(conv, fe, agent.node, svc, mine)
    return out


@pytest.fixture(scope="module")
def scaled_up(at_two: dict[str, SlotsListed], family_views: dict[str, Lab], evidence: Evidence,
              kpr_property: str) -> dict[str, tuple[Observation[Convergence], frozenset[str], SlotView]]:
    """web scaled to 4 replicas: each family's convergence, the client agent's backends before it, and its slots after."""
    obs = _scale(family_views, 4)
    out: dict[str, tuple[Observation[Convergence], frozenset[str], SlotView]] = {}
    for f, o in obs.items():
        client = family_views[f].client_node
        before = frozenset(at_two[f].mine.backends)
        mine = next(v for v in o.value.slots if v.node == client)
        timing = o.value.timing
        evidence.write(family_file("scale.json", f), {
            "family": f,
            "backends": list(mine.backends),
            "new_backends": sorted(set(mine.backends) - before),
            "endpointslice": sorted(o.value.endpointslice),
            "convergence_seconds": round(o.elapsed, 3),
            "convergence_from": "the scale" if f == next(iter(obs)) else f"{next(iter(obs))}'s convergence",
            "timing": timing.to_json() if timing else None,
        })
        slowest = timing.slowest() if timing else None
        lag = "" if slowest is None else (f"; slowest agent {slowest[0]} never caught up" if slowest[1] is None else
                                          f"; slowest agent {slowest[0]} +{slowest[1]:.2f}s after the EndpointSlice")
        evidence.figure(kpr_property, f"4 slots on {len(o.value.slots)} agents in {o.elapsed:.1f}s{lag}", f)
        out[f] = (o, before, mine)
    return out


@pytest.fixture(scope="module")
def scaled_down(scaled_up: dict[str, tuple[Observation[Convergence], frozenset[str], SlotView]], family_views: dict[str, Lab]) -> dict[str, Observation[Convergence]]:
    """web scaled back to 2 replicas, always after the scale to 4."""
    return _scale(family_views, 2)


@pytest.fixture(scope="module")
def family_at_two(at_two: dict[str, SlotsListed], kpr_family: str) -> SlotsListed:
    return at_two[kpr_family]


def test_web_slots_hold_exactly_its_ready_endpoints(family_at_two: SlotsListed, kpr_family: str) -> None:
    d = family_at_two
    holds(convergence_problems(d.convergence), f"backend slots: web's {kpr_family} slots are not its ready endpoints",
          then=f" ({d.convergence.describe()})")
    holds(listing_problems(d), f"backend slots ({kpr_family})")


def test_slots_converge_to_the_endpointslice_after_scaling_to_four(scaled_up: dict[str, tuple[Observation[Convergence], frozenset[str], SlotView]],
                                                                   kpr_family: str) -> None:
    obs, before, mine = scaled_up[kpr_family]
    holds(convergence_problems(obs.value), f"backend slots did not converge after scaling web to 4 ({kpr_family}, waited {obs.elapsed:.1f}s)")
    holds(new_backend_problems(before, mine, 2), f"backend slots ({kpr_family})")


def test_slots_follow_a_scale_down(scaled_down: dict[str, Observation[Convergence]], kpr_family: str) -> None:
    obs = scaled_down[kpr_family]
    problems = convergence_problems(obs.value)
    holds(problems, f"backend slots did not follow web scaling down to 2 ({kpr_family}, waited {obs.elapsed:.1f}s)")
