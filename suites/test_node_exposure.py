"""Selective node exposure: a Service annotated ``service.cilium.io/node-selector: <label selector>`` is installed only by
the agents on the nodes the selector matches; one annotated ``service.cilium.io/node: <value>`` only where the node's label
``service.cilium.io/node`` has that value (pytest_kpr.rules.datapath SRC_NODE_EXPOSURE). Nothing on the nodes is changed:
``nx-here`` selects the client node by its ``kubernetes.io/hostname`` label, ``nx-nowhere`` names a value of the run's own
that no node carries, and ``nx-control`` has neither annotation. Each agent's ``db/show frontends`` must list nx-here
exactly on the client node, nx-nowhere nowhere, the control everywhere; a pod on the client node reaches nx-here.
Evidence: node-exposure.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.node_exposure import ExposureObservation, exposure_problems
from pytest_kpr.rules.datapath import NODE_EXPOSURE, NODE_SELECTOR_EXPOSURE, service_exposed_on
from pytest_kpr.suite import Evidence, holds, hp, Lab, Tweak

pytestmark = [
    pytest.mark.kpr(property="node exposure", evidence="node-exposure.json", plane="control plane", sources=["SRC_NODE_EXPOSURE"]),
    pytest.mark.kpr_requires(cilium="1.18"),  # db/show frontends, and the 1.18 control plane's exposure (PR #39551)
]
CONTROL = "nx-control"


def _annotated(annotations: dict[str, str]) -> Tweak:
    return lambda svc: svc["metadata"].setdefault("annotations", {}).update(annotations)


@pytest.fixture(scope="module")
def annotated(lab: Lab, probe: Lab) -> dict[str, dict[str, str]]:
    """The Services (created once) and their annotations."""
    wanted = {"nx-here": {NODE_SELECTOR_EXPOSURE: f"kubernetes.io/hostname={lab.client_node}"},
              "nx-nowhere": {NODE_EXPOSURE: f"kpr-{lab.run_id}"}}
    lab.create_web_pod("nx-web", {"app": "nx"}, lab.client_node)
    for name, annotations in wanted.items():
        lab.create_service(name, {"app": "nx"}, tweak=_annotated(annotations))
    lab.create_service(CONTROL, {"app": "nx"})
    return wanted


@pytest.fixture(scope="module")
def seen(annotated: dict[str, dict[str, str]], lab: Lab, evidence: Evidence, kpr_property: str) -> dict[str, Any]:
    """Each agent's frontends of each Service, read once the control is programmed on every agent (the annotated ones were
    created first), and a pod's connection to nx-here."""
    nodes = [a.node for a in lab.all_agents()]
    lab.wait_programmed_on(nodes, [CONTROL])
    counts: dict[str, dict[str, int]] = {n: {} for n in nodes}
    for node in nodes:
        for fe in lab.agent(node).frontends():
            if (fe.service or "").startswith(f"{lab.ns}/"):
                name = (fe.service or "").split("/", 1)[1]
                counts[node][name] = counts[node].get(name, 0) + 1
    labels = {n: ((lab.kube.get("Node", n) or {}).get("metadata", {}).get("labels") or {}) for n in nodes}
    obs = {name: ExposureObservation(f"{lab.ns}/{name}", a, tuple(n for n in nodes if service_exposed_on(a, labels[n])),
                                     {n: counts[n].get(name, 0) for n in nodes}, f"{lab.ns}/{CONTROL}",
                                     {n: counts[n].get(CONTROL, 0) for n in nodes})
           for name, a in annotated.items()}
    reach = lab.probe("connect", hp(lab.cluster_ip("nx-here"), 80), 2.0)
    verdict = str(getattr(reach.verdict, "value", reach.verdict))
    evidence.write("node-exposure.json", {"services": {n: o.to_json() for n, o in obs.items()}, "client_node": lab.client_node,
                                          "pod_to_nx_here": verdict, "problems": {n: exposure_problems(o) for n, o in obs.items()}})
    evidence.figure(kpr_property, f"nx-here on {sum(1 for c in obs['nx-here'].listed.values() if c)} of {len(nodes)} agents "
                                  f"(selects {lab.client_node}); nx-nowhere on {sum(1 for c in obs['nx-nowhere'].listed.values() if c)}")
    return {"obs": obs, "pod_to_nx_here": verdict}


def test_a_node_selector_annotation_installs_the_service_only_on_the_nodes_it_selects(seen: dict[str, Any]) -> None:
    """Listed exactly where the selector matches, and served there: a pod on the client node reaches it."""
    verdict = seen["pod_to_nx_here"]
    reached = [] if verdict == "connected" else [f"a pod on the selected node could not reach nx-here: {verdict}"]
    holds(exposure_problems(seen["obs"]["nx-here"]) + reached, f"node exposure ({NODE_SELECTOR_EXPOSURE})")


def test_a_node_annotation_no_node_carries_installs_the_service_nowhere(seen: dict[str, Any]) -> None:
    holds(exposure_problems(seen["obs"]["nx-nowhere"]), f"node exposure ({NODE_EXPOSURE})")
