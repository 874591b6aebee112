"""NodePort without a listener: the node answers HTTP 200 on the NodePort while no socket listens on
it and no rule in any view (iptables-nft, iptables-legacy, nft) names it; the agent lists the
0.0.0.0:<port> NodePort frontend (that port, not another).

Evidence: nodeport.json (node_ip, node_port, http_code, iptables_lines, rule_lines, listen_sockets, service_id).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge import holds
from pytest_kpr.judge.iptables import rule_line_problems, rule_view_problems
from pytest_kpr.judge.nodeport import nodeport_frontend_problems, nodeport_listener_problems
from pytest_kpr.cluster.provider import ClusterHandle
from pytest_kpr.evidence import Evidence
from pytest_kpr.observe.lab import Lab, same_address
from pytest_kpr.plugin.outcomes import no_outside_view
from pytest_kpr.parse import L3n4

pytestmark = [
    pytest.mark.kpr(property="NodePort", evidence="nodeport.json",
                    plane=["socket", "per-packet", "node rules"],
                    sources=["SRC_SOCK_WILDCARD", "SRC_HOST_NODEPORT", "SRC_NO_KUBE_PROXY_RULES"]),
    pytest.mark.kpr_requires("nodeport"),
]


@pytest.fixture(scope="module")
def nodeport(web_np: int, lab: Lab, evidence: Evidence, kpr_property: str) -> dict[str, Any]:
    node = lab.node(lab.client_node)
    node_ip = lab.node_ip(lab.client_node)
    http = node.http_get(f"http://{node_ip}:{web_np}/", max_time=5)
    services = lab.agent(lab.client_node).services()
    fe = L3n4("0.0.0.0", web_np, "TCP" if lab.minor >= (1, 17) else None)
    svc = next((s for s in services if same_address(s.frontend, fe) and s.type == "NodePort"), None)
    rules, listeners = node.rules_and_listeners(web_np)  # one exec
    dumps = {lab.client_node: rules}
    data = {
        "node_ip": node_ip,
        "node_port": web_np,
        "http_code": http.http_code,
        "curl_exit": http.exit_code,
        "iptables_lines": sum(d.count_token(str(web_np)) for d in dumps[lab.client_node].values() if d is not None),
        "rule_lines": {view: d.count_token(str(web_np)) if d is not None else "unreadable" for view, d in dumps[lab.client_node].items()},
        "listen_sockets": len([s for s in listeners if s.local_port == web_np]),
        "service_id": svc.id if svc else None,
    }
    evidence.write("nodeport.json", data)
    evidence.figure(kpr_property, f"HTTP {data['http_code']} on {node_ip}:{web_np}, {data['listen_sockets']} listeners, {data['iptables_lines']} iptables lines")
    return {"data": data, "dumps": dumps, "listeners": listeners, "services": services}


def test_nodeport_answers_http_200_on_the_node(nodeport: dict[str, Any]) -> None:
    d = nodeport["data"]
    assert d["http_code"] == 200, f"NodePort: {d['node_ip']}:{d['node_port']} answered {d['http_code']} (curl exit {d['curl_exit']})"


def test_nodeport_answers_from_outside_the_cluster(nodeport: dict[str, Any], kpr_cluster: ClusterHandle) -> None:
    d = nodeport["data"]
    outside = kpr_cluster.outside
    if outside is None or not outside.reaches(d["node_ip"]):
        no_outside_view(f"the test runner has no specific route to {d['node_ip']}")
    r = outside.http(f"http://{d['node_ip']}:{d['node_port']}/", 5.0)
    assert r.http_code == 200, f"NodePort from outside: {r.explain()}"


def test_nobody_listens_on_the_nodeport(nodeport: dict[str, Any]) -> None:
    problems = nodeport_listener_problems(nodeport["listeners"], nodeport["data"]["node_port"])
    holds(problems, "NodePort")


def test_no_rule_names_the_nodeport(nodeport: dict[str, Any]) -> None:
    port = str(nodeport["data"]["node_port"])
    problems = rule_view_problems(nodeport["dumps"]) + rule_line_problems(nodeport["dumps"], port, "the NodePort")
    holds(problems, "NodePort: rules name the port, so something other than BPF serves it")


def test_agent_lists_the_wildcard_nodeport_frontend(nodeport: dict[str, Any]) -> None:
    problems = nodeport_frontend_problems(nodeport["services"], nodeport["data"]["node_port"])
    holds(problems, "NodePort")
