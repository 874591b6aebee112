"""Headless Services: a Service Kubernetes marks headless gets no frontend. Cilium's load-balancer control plane returns
before building any frontend of a Service labelled ``service.kubernetes.io/headless`` (or with ``clusterIP: None``),
even when its spec holds a ClusterIP and NodePorts (pytest_kpr.rules.datapath SRC_HEADLESS). Two Services carry the
label, a ClusterIP one and a NodePort one, beside a control: the same NodePort Service without the label, with the same
backend. Each agent's ``db/show frontends`` must list the control and nothing of the labelled two. Evidence: headless.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.headless import HeadlessObservation, headless_problems
from pytest_kpr.rules.datapath import HEADLESS_LABEL
from pytest_kpr.suite import Evidence, holds, Lab

pytestmark = [
    pytest.mark.kpr(property="headless", evidence="headless.json", plane="control plane", sources=["SRC_HEADLESS"]),
    pytest.mark.kpr_requires(cilium="1.18"),  # db/show frontends and convertService: the load-balancer control plane of 1.18+
]
CONTROL = "hl-control"
LABELLED = {"ClusterIP": "hl-clusterip", "NodePort": "hl-nodeport"}


def _headless(svc: dict[str, Any]) -> None:
    svc["metadata"].setdefault("labels", {})[HEADLESS_LABEL] = ""


@pytest.fixture(scope="module")
def seen(lab: Lab, evidence: Evidence, kpr_property: str) -> dict[str, HeadlessObservation]:
    """What each agent lists for each labelled Service and the control, by what the labelled Service asks for, read once the
    control is programmed on every agent (the labelled Services were created first)."""
    lab.create_web_pod("hl-web", {"app": "hl"}, lab.client_node)
    for type_, name in LABELLED.items():
        lab.create_service(name, {"app": "hl"}, type_, tweak=_headless)
    lab.create_service(CONTROL, {"app": "hl"}, "NodePort")
    nodes = [a.node for a in lab.all_agents()]
    lab.wait_programmed_on(nodes, [CONTROL])
    seen: dict[str, dict[str, list[str]]] = {}
    for node in nodes:
        for fe in lab.agent(node).frontends():
            seen.setdefault(node, {}).setdefault(fe.service or "", []).append(f"{fe.address} {fe.type}")
    mine = {n: {s: fes for s, fes in by.items() if s.startswith(f"{lab.ns}/")} for n, by in seen.items()}
    evidence.write("headless.json", {"namespace": lab.ns, "label": HEADLESS_LABEL, "frontends": mine})
    listed = sum(len(fes) for by in mine.values() for s, fes in by.items() if s != f"{lab.ns}/{CONTROL}")
    evidence.figure(kpr_property, f"{listed} frontends for the 2 labelled Services on {len(nodes)} agents; the control listed on "
                                  f"{sum(1 for by in mine.values() if by.get(f'{lab.ns}/{CONTROL}'))}")
    by_node = {n: {s.split("/", 1)[1]: fes for s, fes in mine.get(n, {}).items()} for n in nodes}
    return {asks_for: HeadlessObservation(f"{lab.ns}/{name}", asks_for, {n: tuple(by.get(name, ())) for n, by in by_node.items()},
                                          f"{lab.ns}/{CONTROL}", {n: len(by.get(CONTROL, ())) for n, by in by_node.items()})
            for asks_for, name in LABELLED.items()}


def test_a_clusterip_service_labelled_headless_gets_no_frontend(seen: dict[str, HeadlessObservation]) -> None:
    """Its ClusterIP is allocated, yet no agent programs it (SRC_HEADLESS)."""
    holds(headless_problems(seen["ClusterIP"]), "headless (ClusterIP)")


def test_a_nodeport_service_labelled_headless_gets_no_nodeport(seen: dict[str, HeadlessObservation]) -> None:
    """Its NodePort is allocated, yet no agent programs the NodePort (nor the ClusterIP) frontend (SRC_HEADLESS)."""
    holds(headless_problems(seen["NodePort"]), "headless (NodePort)")
