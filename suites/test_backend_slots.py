"""Backend slots: the agent's BPF LB map holds exactly the service's ready endpoints, and follows a scale.

Evidence: svc.json (service_id, frontend, backends, backend_pods) and scale.json (backends,
new_backends, endpointslice, convergence_seconds, and timing: when each new backend first showed in the
EndpointSlice and in each agent, read every 250 ms, the per-agent lag and the slowest agent).
Convergence is polled, never slept for.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge import holds
from pytest_kpr.judge.backend_slots import convergence_problems
from pytest_kpr.evidence import Evidence
from pytest_kpr.observe.lab import Lab

pytestmark = pytest.mark.kpr(property="backend slots", evidence=["svc.json", "scale.json"],
                             plane="control plane",
                             sources="SRC_BACKEND_SLOTS")


def test_web_slots_hold_exactly_its_ready_endpoints(lab: Lab, web: Any, evidence: Evidence) -> None:
    conv = lab.convergence(2)
    fe = lab.frontend("web")
    agent = lab.agent(lab.client_node)
    svc = lab.service_entry(agent, fe, "ClusterIP")
    assert svc is not None, f"backend slots: the agent on {agent.node} lists no ClusterIP service {fe}"
    mine = next(v for v in conv.slots if v.node == agent.node)
    evidence.write("svc.json", {
        "service_id": svc.id,
        "frontend": fe.host_port(),
        "backends": list(mine.backends),
        "backend_pods": [lab.pod_by_ip(b.rsplit(":", 1)[0]) for b in mine.backends],
    })
    listed = sorted(b.address.host_port() for b in svc.backends)
    problems = convergence_problems(conv)
    holds(problems, "backend slots: web's slots are not its ready endpoints", then=f" ({conv.describe()})")
    assert listed == sorted(mine.backends), f"backend slots: service list {listed} vs bpf lb list {sorted(mine.backends)}"
    assert mine.service_id == svc.id, f"backend slots: slot 0 carries RevNAT {mine.service_id}, service list ID {svc.id}"


def test_slots_converge_to_the_endpointslice_after_scaling_to_four(lab: Lab, web: Any, evidence: Evidence, kpr_property: str) -> None:
    before = set((evidence.read("svc.json") or {}).get("backends") or next(v for v in lab.slots() if v.node == lab.client_node).backends)
    obs = lab.scale_web(4)
    mine = next(v for v in obs.value.slots if v.node == lab.client_node)
    timing = obs.value.timing
    evidence.write("scale.json", {
        "backends": list(mine.backends),
        "new_backends": sorted(set(mine.backends) - before),
        "endpointslice": sorted(obs.value.endpointslice),
        "convergence_seconds": round(obs.elapsed, 3),
        "timing": timing.to_json() if timing else None,
    })
    slowest = timing.slowest() if timing else None
    lag = "" if slowest is None else (f"; slowest agent {slowest[0]} never caught up" if slowest[1] is None else
                                      f"; slowest agent {slowest[0]} +{slowest[1]:.2f}s after the EndpointSlice")
    evidence.figure(kpr_property, f"4 slots on {len(obs.value.slots)} agents in {obs.elapsed:.1f}s{lag}")
    problems = convergence_problems(obs.value)
    holds(problems, f"backend slots did not converge after scaling web to 4 (waited {obs.elapsed:.1f}s)")
    assert len(set(mine.backends) - before) == 2, f"backend slots: expected 2 new backends, got {sorted(set(mine.backends) - before)}"


def test_slots_follow_a_scale_down(lab: Lab, web: Any) -> None:
    if len(lab.pods("app=web")) != 4:  # run on its own: start from 4 replicas
        lab.scale_web(4)
    obs = lab.scale_web(2)
    problems = convergence_problems(obs.value)
    holds(problems, f"backend slots did not follow web scaling down to 2 (waited {obs.elapsed:.1f}s)")
