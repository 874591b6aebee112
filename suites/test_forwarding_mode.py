"""Per-Service forwarding mode: with the agents' ``bpf-lb-mode-annotation`` on (Helm bpf.lbModeAnnotation; the ``dsr``
profile sets it), a NodePort Service annotated ``service.cilium.io/forwarding-mode: dsr`` is forwarded in DSR and one
annotated ``snat`` is SNATed, whatever the agent's own NodePort mode (pytest_kpr.rules.datapath
SRC_FORWARDING_MODE_ANNOTATION). So the backend behind another node sees the outside client's address (DSR) or the
receiving node's (SNAT: its InternalIP in native routing, its CiliumInternalIP in tunnel routing: SRC_SNAT_ADDRESS).

One backend pod (``fm-backend``) on a node other than the client node, behind ``fm-dsr`` and ``fm-snat`` (NodePort,
externalTrafficPolicy Cluster). The runner sends an HTTP GET to each Service's NodePort on the client node; the backend's
log names the address it saw. Skipped, saying so, where the agents do not resolve bpf-lb-mode-annotation true (the
annotation is then ignored by design). Per family of --kpr-ip-families (evidence ``forwarding-mode-ipv6.json``).
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import ClusterFacts, ClusterHandle, Evidence, family_file, holds, hp, Lab, no_outside_view, token, Tweak
from pytest_kpr.judge.forwarding_mode import AnnotatedRequest, forwarding_mode_problems
from pytest_kpr.rules.datapath import FORWARDING_MODE_ANNOTATION, MODE_ANNOTATION_FILE, backend_sees, service_forwarding_mode

pytestmark = [
    pytest.mark.kpr(property="forwarding mode", evidence="forwarding-mode.json", plane="per-packet",
                    sources=["SRC_FORWARDING_MODE_ANNOTATION", "SRC_SNAT_DSR", "SRC_SNAT_ADDRESS", "SRC_HOST_NODEPORT"]),
    pytest.mark.kpr_requires("nodeport"),
]
#: Service -> its service.cilium.io/forwarding-mode
SERVICES = {"fm-dsr": "dsr", "fm-snat": "snat"}


def _annotated(mode: str) -> Tweak:
    return lambda svc: svc["metadata"].setdefault("annotations", {}).update({FORWARDING_MODE_ANNOTATION: mode})


@pytest.fixture(scope="module")
def fm_backend(lab: Lab) -> str:
    """The backend on another node than the receiving one, behind both Services (created once for every family)."""
    if lab.agent(lab.client_node).config_file(MODE_ANNOTATION_FILE) != "true":
        pytest.skip("the agents ignore service.cilium.io/forwarding-mode: bpf-lb-mode-annotation is not true (Helm bpf.lbModeAnnotation; "
                    "--kpr-profile=dsr sets it)")
    node = lab.remote_node()
    lab.create_web_pod("fm-backend", {"app": "fm-backend"}, node)
    for name, mode in SERVICES.items():
        lab.create_service(name, {"app": "fm-backend"}, "NodePort", tweak=_annotated(mode))
    lab.wait_ready_endpoints("fm-dsr", 1)
    return node


@pytest.fixture(scope="module")
def seen(fm_backend: str, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_cluster: ClusterHandle, kpr_facts: ClusterFacts,
         kpr_family: str) -> dict[str, AnnotatedRequest]:
    lab = family_lab
    receiving = lab.client_node
    ip = lab.node_ip(receiving)
    outside = kpr_cluster.outside
    if outside is None or not outside.reaches(ip):
        no_outside_view(f"the test runner has no specific route to {ip}; the backend's view of an outside client needs one")
    node_facts = kpr_facts.node(receiving)
    out: dict[str, AnnotatedRequest] = {}
    for name, annotation in SERVICES.items():
        lab.wait_programmed(receiving, lab.frontend(name), f"the agent on {receiving} to program {name}")
        port = lab.allocated_node_port(name)
        mark = token()
        r = outside.http(f"http://{hp(ip, port)}/?kpr={mark}", 5.0)
        served = lab.who_served(["fm-backend"], mark)
        mode = service_forwarding_mode(kpr_facts.nodeport_mode, True, annotation)
        rule = backend_sees(mode, False, False, kpr_facts.routing_mode)
        out[name] = AnnotatedRequest(name, annotation, mode, ip, port, node_facts.cilium_internal_ip_of(kpr_family) if node_facts else "",
                                     outside.source_address(ip), r.http_code, served[1] if served else None, rule.sees, rule.why)
    evidence.write(family_file("forwarding-mode.json", kpr_family),
                   {"agent_mode": kpr_facts.nodeport_mode, "routing": kpr_facts.routing_mode, "receiving_node": receiving,
                    "backend_node": fm_backend, "requests": {n: r.to_json() for n, r in out.items()},
                    "problems": {n: forwarding_mode_problems(r) for n, r in out.items()}})
    evidence.figure(kpr_property, "; ".join(f"{r.annotation}: the backend saw {r.seen}" for r in out.values()), kpr_family)
    return out


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_service_annotated_dsr_keeps_the_clients_address(seen: dict[str, AnnotatedRequest]) -> None:
    holds(forwarding_mode_problems(seen["fm-dsr"]), "forwarding mode (service.cilium.io/forwarding-mode: dsr)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_service_annotated_snat_is_source_natted(seen: dict[str, AnnotatedRequest]) -> None:
    holds(forwarding_mode_problems(seen["fm-snat"]), "forwarding mode (service.cilium.io/forwarding-mode: snat)")
