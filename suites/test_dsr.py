"""NodePort forwarding mode (SNAT or DSR): the address a backend sees for a request from outside that arrives at a
node without the backend.

One backend pod (``dsr-backend``) on a node other than the client node, behind the NodePort Service ``dsr``
(externalTrafficPolicy Cluster). The runner sends an HTTP GET to the client node's InternalIP:NodePort, so the
request is forwarded to the other node; the backend's http.server log names the address it saw. The expectation
comes from the mode and routing the agent reports (status -o json: NodePort mode, routing.inter-host-routing-mode):
DSR (and hybrid, for TCP) keeps the client's address; SNAT shows the receiving node's CiliumInternalIP (its cilium_host
address) in tunnel routing and its InternalIP in native routing (cilium/cilium bpf/lib/nodeport.h
tail_nodeport_nat_egress_ipv4; pytest_kpr.rules.datapath SOURCE_RULES, SRC_SNAT_ADDRESS). Needs the runner to reach the nodes
(kind: the docker network); the profile ``dsr`` sets loadBalancer.mode=dsr. Evidence: dsr.json.

IPv6 has its own NAT path with the same shape (tail_nodeport_nat_egress_ipv6: IPV6_DIRECT_ROUTING, ROUTER_IP in tunnel
routing, the node's IPv6 CiliumInternalIP: SRC_SNAT_ADDRESS6): the request runs once per family of --kpr-ip-families,
to the node's InternalIP of that family (evidence ``dsr-ipv6.json``); the backend and its Service are created once.
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import ClusterFacts, ClusterHandle, Evidence, family_file, holds, hp, Lab, no_outside_view, token
from pytest_kpr.judge.dsr import dsr_problems
from pytest_kpr.judge.dsr import DsrObservation
from pytest_kpr.rules.datapath import backend_sees

pytestmark = [
    pytest.mark.kpr(property="DSR/SNAT", evidence="dsr.json",
                    plane="per-packet",
                    sources=["SRC_SNAT_DSR", "SRC_SNAT_ADDRESS", "SRC_SNAT_ADDRESS6", "SRC_HOST_NODEPORT"]),
    pytest.mark.kpr_requires("nodeport"),
]


@pytest.fixture(scope="module")
def dsr_backend(lab: Lab) -> tuple[str, str]:
    """The backend on another node than the receiving one, behind the NodePort Service dsr (created once for every
    family): (receiving node, backend node)."""
    receiving, backend_node = lab.client_node, lab.remote_node()
    lab.create_web_pod("dsr-backend", {"app": "dsr-backend"}, backend_node)
    lab.create_service("dsr", {"app": "dsr-backend"}, "NodePort")
    lab.wait_ready_endpoints("dsr", 1)
    return receiving, backend_node


@pytest.fixture(scope="module")
def dsr(family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_cluster: ClusterHandle, kpr_facts: ClusterFacts,
        kpr_family: str, request: pytest.FixtureRequest) -> DsrObservation:
    lab = family_lab
    ip = lab.node_ip(lab.client_node)  # the receiving node's InternalIP of this family
    outside = kpr_cluster.outside
    if outside is None or not outside.reaches(ip):
        no_outside_view(f"the test runner has no specific route to {ip}; the backend's view of an outside client needs one")
    receiving, backend_node = request.getfixturevalue("dsr_backend")  # only with an outside view: no pods for a skip
    lab.wait_programmed(receiving, lab.frontend("dsr"), f"the agent on {receiving} to program dsr")
    port = lab.allocated_node_port("dsr")
    mark = token()
    r = outside.http(f"http://{hp(ip, port)}/?kpr={mark}", 5.0)
    served = lab.who_served(["dsr-backend"], mark)
    rule = backend_sees(kpr_facts.nodeport_mode, False, False, kpr_facts.routing_mode)
    facts = kpr_facts.node(receiving)
    d = DsrObservation(kpr_family, kpr_facts.nodeport_mode, kpr_facts.routing_mode, receiving, ip,
                       facts.cilium_internal_ip_of(kpr_family) if facts else "", backend_node, port, outside.source_address(ip),
                       r.http_code, served[1] if served else None, rule.sees, rule.why, rule.source)
    evidence.write(family_file("dsr.json", kpr_family), d.to_json())
    evidence.figure(kpr_property, f"{d.mode}: the backend saw {d.seen} (client {d.client}, node {ip})", kpr_family)
    return d


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_the_backend_sees_the_address_the_nodeport_mode_promises(dsr: DsrObservation) -> None:
    holds(dsr_problems(dsr), f"DSR/SNAT (the agent reports NodePort mode {dsr.mode}, routing {dsr.routing or '?'})")
