"""NodePort without a listener: the node answers HTTP 200 on the NodePort while no socket listens on
it and no rule in any view (iptables-nft, iptables-legacy, ip6tables-nft, ip6tables-legacy, nft) names it; the agent
lists the wildcard NodePort frontend of the family (0.0.0.0:<port>, [::]:<port>; that port, not another).

Evidence: nodeport.json (node_ip, node_port, http_code, iptables_lines, rule_lines, listen_sockets, service_id).

A NodePort Service gets one wildcard frontend per IP family it has (SRC_NODEPORT_WILDCARD), and the native device's
per-packet plane handles each family on its own path (nodeport_lb4/nodeport_lb6 in bpf/lib/nodeport.h): the tests run
once per family of --kpr-ip-families, against the node's InternalIP of that family (evidence ``nodeport-ipv6.json``).
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import ClusterHandle, Evidence, family_file, holds, hp, L3n4, Lab, no_outside_view, same_address
from pytest_kpr.judge.nodeport import (
    NodePortObservation,
    nodeport_frontend_problems,
    nodeport_http_problems,
    nodeport_listener_problems,
    nodeport_rule_problems,
)
from pytest_kpr.rules.datapath import NODEPORT_WILDCARD

pytestmark = [
    pytest.mark.kpr(property="NodePort", evidence="nodeport.json",
                    plane=["socket", "per-packet", "node rules"],
                    sources=["SRC_SOCK_WILDCARD", "SRC_HOST_NODEPORT", "SRC_NO_KUBE_PROXY_RULES", "SRC_NODEPORT_WILDCARD"]),
    pytest.mark.kpr_requires("nodeport"),
]


@pytest.fixture(scope="module")
def nodeport(web_np: int, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str) -> NodePortObservation:
    lab = family_lab
    node = lab.node(lab.client_node)
    node_ip = lab.node_ip(lab.client_node)  # this family's InternalIP
    target = hp(node_ip, web_np)
    http = node.http_get(f"http://{target}/", max_time=5)
    services = lab.agent(lab.client_node).services()
    fe = L3n4(NODEPORT_WILDCARD[kpr_family], web_np, "TCP" if lab.minor >= (1, 17) else None)
    svc = next((s for s in services if same_address(s.frontend, fe) and s.type == "NodePort"), None)
    rules, listeners = node.rules_and_listeners(web_np)  # one exec
    n = NodePortObservation(kpr_family, lab.client_node, node_ip, web_np, http.http_code, http.exit_code, rules, tuple(listeners),
                            tuple(services), svc.id if svc else None)
    data = n.to_json()
    evidence.write(family_file("nodeport.json", kpr_family), data)
    evidence.report_value("nodeport_iptables_lines", data["iptables_lines"])  # report.txt: the first family's
    evidence.figure(kpr_property, f"HTTP {data['http_code']} on {target}, {data['listen_sockets']} listeners, "
                                  f"{data['iptables_lines']} iptables lines", kpr_family)
    return n


def test_nodeport_answers_http_200_on_the_node(nodeport: NodePortObservation) -> None:
    holds(nodeport_http_problems(nodeport), "NodePort")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_nodeport_answers_from_outside_the_cluster(nodeport: NodePortObservation, kpr_cluster: ClusterHandle) -> None:
    outside = kpr_cluster.outside
    if outside is None or not outside.reaches(nodeport.node_ip):
        no_outside_view(f"the test runner has no specific route to {nodeport.node_ip}")
    r = outside.http(f"http://{hp(nodeport.node_ip, nodeport.node_port)}/", 5.0)
    holds([] if r.http_code == 200 else [r.explain()], "NodePort from outside")


def test_nobody_listens_on_the_nodeport(nodeport: NodePortObservation) -> None:
    holds(nodeport_listener_problems(nodeport.listeners, nodeport.node_port), "NodePort")


def test_no_rule_names_the_nodeport(nodeport: NodePortObservation) -> None:
    holds(nodeport_rule_problems(nodeport), "NodePort: rules name the port, so something other than BPF serves it")


def test_agent_lists_the_wildcard_nodeport_frontend(nodeport: NodePortObservation) -> None:
    holds(nodeport_frontend_problems(nodeport.services, nodeport.node_port, nodeport.family), "NodePort")
