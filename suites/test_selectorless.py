"""Selectorless Services: a Service without a selector is served from the EndpointSlices that name it in their
``kubernetes.io/service-name`` label, whoever wrote them (pytest_kpr.rules.datapath SRC_ENDPOINTSLICE_SERVICE).

One web pod and a ClusterIP Service without a selector, in the suite's namespace; for each family, an EndpointSlice
written by the suite (not by Kubernetes' EndpointSlice controller, which writes none for a Service without a selector)
names the pod's address of that family. Each agent's ``db/show frontends`` must list the Service's ClusterIP of the
family with exactly that backend. Evidence: selectorless.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.selectorless import SelectorlessObservation, selectorless_problems
from pytest_kpr.suite import WEB_TARGET, Evidence, Lab, family_file, holds, hp

pytestmark = [
    pytest.mark.kpr(property="selectorless", evidence="selectorless.json", plane="control plane",
                    sources=["SRC_ENDPOINTSLICE_SERVICE"]),
    pytest.mark.kpr_requires(cilium="1.18"),  # db/show frontends: the load-balancer control plane of 1.18+
]
NAME = "sl"


def _no_selector(svc: dict[str, Any]) -> None:
    svc["spec"].pop("selector")


def _slice(view: Lab, ip: str) -> dict[str, Any]:
    """An EndpointSlice of the Service, as a user or another controller writes one: the label names the Service."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{NAME}-{str(view.family).lower()}", "namespace": view.ns, "labels": {"kubernetes.io/service-name": NAME}},
            "addressType": view.family, "ports": [{"name": "http", "port": WEB_TARGET, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}]}


@pytest.fixture(scope="module")
def seen(lab: Lab, family_views: dict[str, Lab], evidence: Evidence) -> dict[str, SelectorlessObservation]:
    """The Service and a hand-written slice per family, then each agent's backends of the family's ClusterIP frontend,
    once the Service is programmed on every agent."""
    pod = lab.wait_running(lab.create_web_pod("sl-web", {"app": "sl-web"}, lab.client_node)["metadata"]["name"])
    lab.create_service(NAME, {"app": "none"}, tweak=_no_selector)
    addresses = {f: v.pod_ip(pod) for f, v in family_views.items()}
    for f, v in family_views.items():
        lab.create(_slice(v, addresses[f]))
    nodes = [a.node for a in lab.all_agents()]
    lab.wait_programmed_on(nodes, [NAME])
    frontends = {n: [fe for fe in lab.agent(n).frontends() if fe.service == f"{lab.ns}/{NAME}" and fe.type == "ClusterIP"] for n in nodes}
    out = {}
    for f in family_views:
        listed: dict[str, tuple[str, ...] | None] = {}
        for n in nodes:
            fe = next((x for x in frontends[n] if x.address.is_v6 == (f == "IPv6")), None)
            listed[n] = None if fe is None else tuple(str(b) for b in fe.backends or ())
        out[f] = SelectorlessObservation(f, f"{lab.ns}/{NAME}", f"{hp(addresses[f], WEB_TARGET)}/TCP", listed)
        evidence.write(family_file("selectorless.json", f), out[f].to_json())
    return out


def test_every_agent_serves_the_selectorless_service_from_its_endpointslice(seen: dict[str, SelectorlessObservation],
                                                                            kpr_family: str) -> None:
    """Each agent lists the family's ClusterIP with the backend the hand-written slice names, and no other."""
    holds(selectorless_problems(seen[kpr_family]), "selectorless")
