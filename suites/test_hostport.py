"""hostPort without portmap: a pod's hostPort answers on its node's InternalIP with no listening socket and no
iptables/nftables rule naming the port, the agent lists a HostPort frontend for it, and a second pod asking for the
same hostPort on the same node is not admitted there.

``hp-a`` (the web server, hostPort 18780 -> 8080) is bound by its nodeSelector to the client node; the host-network
probe on that node connects to <node InternalIP>:18780. KPR serves a hostPort as a HostPort frontend on the pod's node
(cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go, bpf/bpf_sock.c sock4_skip_xlate; pytest_kpr.rules.datapath
SRC_HOSTPORT), where the CNI portmap plugin would add DNAT rules. ``hp-b`` asks for the same hostPort on the same node:
the scheduler's NodePorts filter keeps it off that node (kubernetes pkg/scheduler/framework/plugins/nodeports;
SRC_HOSTPORT_SCHED); what Kubernetes did is recorded. Evidence: hostport.json.

A pod with an address of each family gets a HostPort frontend per family (SRC_HOSTPORT_FAMILIES): the answer on the
node's address and the agent's frontend are checked once per family of --kpr-ip-families (evidence
``hostport-ipv6.json``); the pods, the rule views, the listeners and the second pod's admission once.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import eventually, eventually_or_now, Evidence, family_file, holds, hp, Lab
from pytest_kpr.judge.hostport import hostport_admission_problems, hostport_frontend_problems
from pytest_kpr.judge.iptables import rule_line_problems, rule_view_problems
from pytest_kpr.judge.nodeport import nodeport_listener_problems

pytestmark = [
    pytest.mark.kpr(property="hostPort", evidence="hostport.json",
                    plane=["socket", "node rules"],
                    sources=["SRC_HOSTPORT", "SRC_HOSTPORT_FAMILIES", "SRC_SOCK_WILDCARD", "SRC_HOSTPORT_SCHED"]),
    pytest.mark.kpr_requires("host-port"),
]
HOST_PORT = 18780


@pytest.fixture(scope="module")
def hostport(lab: Lab) -> dict[str, Any]:
    """hp-a on the client node, the node's rule views and listeners, and the scheduler's decision on hp-b: the same for
    every family."""
    node = lab.client_node
    lab.create_web_pod("hp-a", {"app": "hp-a"}, node, host_port=HOST_PORT)
    lab.deploy_host_probe()
    eventually(lambda: lab.kube.get("Pod", "hp-a", lab.ns) or {}, until=lambda p: (p.get("status") or {}).get("phase") == "Running" and
               any(c.get("type") == "Ready" and c.get("status") == "True" for c in p["status"].get("conditions") or []),
               timeout=lab.t.PODS_READY, what="hp-a Running and Ready", describe=lambda p: (p.get("status") or {}).get("phase", "absent"),
               progress=lab.progress)
    rules, listeners = lab.node(node).rules_and_listeners(HOST_PORT)
    lab.create_web_pod("hp-b", {"app": "hp-b"}, node, host_port=HOST_PORT)
    second = eventually_or_now(lambda: lab.kube.get("Pod", "hp-b", lab.ns) or {}, until=_decided, timeout=lab.t.PODS_READY,
                               what="the scheduler's decision on hp-b", describe=lambda p: _pod_view(p)["phase"], progress=lab.progress)
    data = {"node": node, "host_port": HOST_PORT, "listen_sockets": len([s for s in listeners if s.local_port == HOST_PORT]),
            "rule_lines": {view: d.count_token(str(HOST_PORT)) if d is not None else "unreadable" for view, d in rules.items()},
            "second_pod": _pod_view(second)}
    return {"data": data, "rules": {node: rules}, "listeners": listeners}


@pytest.fixture(scope="module")
def hostport_reach(hostport: dict[str, Any], family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str) -> dict[str, Any]:
    """This family's answer on the node's address and the agent's HostPort frontends."""
    lab, node = family_lab, hostport["data"]["node"]
    node_ip = lab.node_ip(node)
    agent = lab.agent(node)
    # whether it lists the frontend is a test's to judge, not a precondition: wait for it, then take what is there
    services = eventually_or_now(agent.services, until=lambda ss: not hostport_frontend_problems(ss, HOST_PORT, kpr_family),
                                 timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {node} to list a {kpr_family} HostPort frontend",
                                 progress=lab.progress, first_after=lab.t.LB_FIRST_LOOK)
    target = hp(node_ip, HOST_PORT)
    connect = lab.probe("connect", target, 2.0, pod="hostprobe")
    http = lab.curl(f"http://{target}/", 5.0, pod="hostprobe")
    fes = [s for s in services if s.frontend.port == HOST_PORT]
    data = {**hostport["data"], "family": kpr_family, "node_ip": node_ip, "connect": connect.verdict, "http_code": http.http_code,
            "curl_exit": http.exit_code, "frontends": [{"frontend": str(s.frontend), "type": s.type, "id": s.id} for s in fes]}
    evidence.write(family_file("hostport.json", kpr_family), data)
    evidence.figure(kpr_property, f"HTTP {data['http_code']} on {target}, {data['listen_sockets']} listeners, "
                                  f"{len(fes)} HostPort frontends; second pod {data['second_pod']['phase']}", kpr_family)
    return {"data": data, "services": services, "family": kpr_family}


def _pod_view(p: dict[str, Any]) -> dict[str, Any]:
    st = p.get("status") or {}
    sched = next((c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    return {"phase": st.get("phase", "absent"), "node": (p.get("spec") or {}).get("nodeName"), "scheduled": sched.get("status"),
            "reason": sched.get("reason"), "message": sched.get("message")}


def _decided(p: dict[str, Any]) -> bool:
    v = _pod_view(p)
    return v["phase"] in ("Running", "Failed") or v["reason"] == "Unschedulable"


def test_the_host_port_answers_on_the_nodes_address(hostport_reach: dict[str, Any]) -> None:
    d = hostport_reach["data"]
    assert d["connect"] == "connected" and d["http_code"] == 200, \
        f"hostPort: {hp(d['node_ip'], d['host_port'])} from the node: connect {d['connect']}, HTTP {d['http_code']} (curl exit {d['curl_exit']})"


def test_nobody_listens_on_the_host_port(hostport: dict[str, Any]) -> None:
    problems = nodeport_listener_problems(hostport["listeners"], HOST_PORT)
    holds(problems, "hostPort")


def test_no_rule_names_the_host_port(hostport: dict[str, Any]) -> None:
    problems = rule_view_problems(hostport["rules"]) + rule_line_problems(hostport["rules"], str(HOST_PORT), "the hostPort")
    holds(problems, "hostPort: rules name the port, so portmap (not BPF) serves it")


def test_the_agent_lists_a_host_port_frontend(hostport_reach: dict[str, Any]) -> None:
    problems = hostport_frontend_problems(hostport_reach["services"], HOST_PORT, hostport_reach["family"])
    holds(problems, f"hostPort: on {hostport_reach['data']['node']}")


def test_a_second_pod_is_not_admitted_on_the_same_host_port(hostport: dict[str, Any]) -> None:
    d = hostport["data"]
    problems = hostport_admission_problems(d["second_pod"], d["node"])
    holds(problems, "hostPort")
