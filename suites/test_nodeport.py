"""NodePort without a listener: the node answers HTTP 200 on the NodePort while no socket listens on
it and no iptables line names it; the agent lists the 0.0.0.0:<port> NodePort frontend.

Evidence: nodeport.json (node_ip, node_port, http_code, iptables_lines, listen_sockets, service_id).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.cluster.provider import ClusterHandle
from pytest_kpr.evidence import Evidence
from pytest_kpr.lab import Lab, iptables_lines
from pytest_kpr.parse import L3n4

pytestmark = [pytest.mark.kpr, pytest.mark.kpr_requires("nodeport")]
PROPERTY = "NodePort"


@pytest.fixture(scope="module")
def nodeport(web_np: int, lab: Lab, evidence: Evidence) -> dict[str, Any]:
    node = lab.node(lab.client_node)
    node_ip = lab.node_ip(lab.client_node)
    http = node.http_get(f"http://{node_ip}:{web_np}/", max_time=5)
    fe = L3n4("0.0.0.0", web_np, "TCP" if lab.minor >= (1, 17) else None)
    svc = lab.service_entry(lab.agent(lab.client_node), fe, "NodePort")
    data = {
        "node_ip": node_ip,
        "node_port": web_np,
        "http_code": http.http_code,
        "iptables_lines": iptables_lines(node, str(web_np)),
        "listen_sockets": len(node.listening(web_np)),
        "service_id": svc.id if svc else None,
        "curl_exit": http.exit_code,
    }
    evidence.write("nodeport.json", data)
    evidence.figure(PROPERTY, f"HTTP {data['http_code']} on {node_ip}:{web_np}, {data['listen_sockets']} listeners, {data['iptables_lines']} iptables lines")
    return data


def test_nodeport_answers_http_200_on_the_node(nodeport: dict[str, Any]) -> None:
    assert nodeport["http_code"] == 200, f"NodePort: {nodeport['node_ip']}:{nodeport['node_port']} answered {nodeport['http_code']} (curl exit {nodeport['curl_exit']})"


def test_nodeport_answers_from_outside_the_cluster(nodeport: dict[str, Any], kpr_cluster: ClusterHandle) -> None:
    outside = kpr_cluster.outside
    if outside is None or not outside.reaches(nodeport["node_ip"]):
        pytest.skip(f"the test runner has no specific route to {nodeport['node_ip']}; no outside view")
    r = outside.http(f"http://{nodeport['node_ip']}:{nodeport['node_port']}/", 5.0)
    assert r.http_code == 200, f"NodePort from outside: {r.explain()}"


def test_nobody_listens_on_the_nodeport(nodeport: dict[str, Any]) -> None:
    assert nodeport["listen_sockets"] == 0, (
        f"NodePort: {nodeport['listen_sockets']} sockets listen on :{nodeport['node_port']} on the node; the answer must come from BPF, not a process"
    )


def test_no_iptables_line_names_the_nodeport(nodeport: dict[str, Any]) -> None:
    assert nodeport["iptables_lines"] == 0, f"NodePort: {nodeport['iptables_lines']} iptables lines name :{nodeport['node_port']}"


def test_agent_lists_the_wildcard_nodeport_frontend(nodeport: dict[str, Any]) -> None:
    assert nodeport["service_id"] is not None, f"NodePort: the agent lists no 0.0.0.0:{nodeport['node_port']} NodePort frontend"
