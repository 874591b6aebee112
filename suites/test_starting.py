"""Starting backends: an endpoint that is not ready, not serving and not terminating (a pod still starting) is a
maintenance backend and takes no slot of its Service's frontends, so no new connection can reach it
(pytest_kpr.rules.datapath SRC_STARTING_NO_SLOT).

Two web pods and a ClusterIP Service without a selector, in the suite's namespace; for each family, an EndpointSlice
written by the suite names both pods' addresses of that family: one ready, the other with the conditions Kubernetes
gives a pod that is still starting (ready, serving and terminating false). Once each agent's ``lb/maps-dump`` holds
the ready one in a slot of the family's ClusterIP frontend, the frontend's slots must be exactly that one: the starting
endpoint in none, neither among those a new connection picks nor among those kept after the count. Evidence:
starting.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.starting import StartingObservation, starting_problems
from pytest_kpr.suite import WEB_TARGET, Evidence, Lab, eventually_or_now, family_file, holds, hp

pytestmark = [
    pytest.mark.kpr(property="starting backends", evidence="starting.json", plane="control plane",
                    sources=["SRC_STARTING_NO_SLOT"]),
    pytest.mark.kpr_requires(cilium="1.18"),  # lb/maps-dump: the load-balancer control plane of 1.18+
]
NAME = "st"
STARTING = {"ready": False, "serving": False, "terminating": False}  # a pod whose readiness has not passed yet


def _no_selector(svc: dict[str, Any]) -> None:
    svc["spec"].pop("selector")


def _slice(view: Lab, ready: str, starting: str) -> dict[str, Any]:
    """The Service's EndpointSlice of the view's family, with one ready endpoint and one starting."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{NAME}-{str(view.family).lower()}", "namespace": view.ns, "labels": {"kubernetes.io/service-name": NAME}},
            "addressType": view.family, "ports": [{"name": "http", "port": WEB_TARGET, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ready], "conditions": {"ready": True}}, {"addresses": [starting], "conditions": STARTING}]}


@pytest.fixture(scope="module")
def seen(lab: Lab, family_views: dict[str, Lab], evidence: Evidence) -> dict[str, StartingObservation]:
    """The Service and a slice per family, then each agent's slots of the family's ClusterIP, once the ready endpoint
    holds one (or the wait ran out: what the agent shows then is judged)."""
    pods = [lab.wait_running(lab.create_web_pod(p, {"app": p}, lab.client_node)["metadata"]["name"]) for p in ("st-ready", "st-starting")]
    lab.create_service(NAME, {"app": "none"}, tweak=_no_selector)
    out = {}
    for f, v in family_views.items():
        ready, starting = (v.pod_ip(p) for p in pods)
        lab.create(_slice(v, ready, starting))
        fe, want = v.frontend(NAME), hp(ready, WEB_TARGET)
        slots = {}
        for agent in lab.all_agents():
            got = eventually_or_now(lambda: Lab.slot_view(agent, fe), until=lambda s: want in s.backends,
                                    timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {agent.node} to slot {want} ({f})",
                                    describe=lambda s: s.describe(), progress=lab.progress)
            slots[agent.node] = None if got.service_id is None else (got.backends, got.kept)
        out[f] = StartingObservation(f, f"{lab.ns}/{NAME}", want, hp(starting, WEB_TARGET), slots)
        evidence.write(family_file("starting.json", f), out[f].to_json())
    return out


def test_no_agent_gives_a_starting_endpoint_a_slot(seen: dict[str, StartingObservation], kpr_family: str) -> None:
    """Each agent's slots of the family's ClusterIP hold the ready endpoint and never the starting one."""
    holds(starting_problems(seen[kpr_family]), "starting backends")
