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
from pytest_kpr.judge.hostport import (
    HostPortNode,
    HostPortReach,
    hostport_admission_problems,
    hostport_frontend_problems,
    hostport_reach_problems,
    hostport_rule_problems,
)
from pytest_kpr.judge.nodeport import nodeport_listener_problems

pytestmark = [
    pytest.mark.kpr(property="hostPort", evidence="hostport.json",
                    plane=["socket", "node rules"],
                    sources=["SRC_HOSTPORT", "SRC_HOSTPORT_FAMILIES", "SRC_SOCK_WILDCARD", "SRC_HOSTPORT_SCHED"]),
    pytest.mark.kpr_requires("host-port"),
]
HOST_PORT = 18780


@pytest.fixture(scope="module")
def hostport(lab: Lab) -> HostPortNode:
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
    return HostPortNode(node, HOST_PORT, rules, tuple(listeners), _pod_view(second))


@pytest.fixture(scope="module")
def hostport_reach(hostport: HostPortNode, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str) -> HostPortReach:
    """This family's answer on the node's address and the agent's HostPort frontends."""
    lab, node = family_lab, hostport.node
    node_ip = lab.node_ip(node)
    agent = lab.agent(node)
    # whether it lists the frontend is a test's to judge, not a precondition: wait for it, then take what is there
    services = eventually_or_now(agent.services, until=lambda ss: not hostport_frontend_problems(ss, HOST_PORT, kpr_family),
                                 timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {node} to list a {kpr_family} HostPort frontend",
                                 progress=lab.progress, first_after=lab.t.LB_FIRST_LOOK)
    target = hp(node_ip, HOST_PORT)
    connect = lab.probe("connect", target, 2.0, pod="hostprobe")
    http = lab.curl(f"http://{target}/", 5.0, pod="hostprobe")
    r = HostPortReach(hostport, kpr_family, node_ip, str(connect.verdict), http.http_code, http.exit_code, tuple(services))
    data = r.to_json()
    evidence.write(family_file("hostport.json", kpr_family), data)
    evidence.figure(kpr_property, f"HTTP {data['http_code']} on {target}, {data['listen_sockets']} listeners, "
                                  f"{len(data['frontends'])} HostPort frontends; second pod {data['second_pod']['phase']}", kpr_family)
    return r


def _pod_view(p: dict[str, Any]) -> dict[str, Any]:
    st = p.get("status") or {}
    sched = next((c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    return {"phase": st.get("phase", "absent"), "node": (p.get("spec") or {}).get("nodeName"), "scheduled": sched.get("status"),
            "reason": sched.get("reason"), "message": sched.get("message")}


def _decided(p: dict[str, Any]) -> bool:
    v = _pod_view(p)
    return v["phase"] in ("Running", "Failed") or v["reason"] == "Unschedulable"


def test_the_host_port_answers_on_the_nodes_address(hostport_reach: HostPortReach) -> None:
    holds(hostport_reach_problems(hostport_reach), "hostPort")


def test_nobody_listens_on_the_host_port(hostport: HostPortNode) -> None:
    holds(nodeport_listener_problems(hostport.listeners, HOST_PORT), "hostPort")


def test_no_rule_names_the_host_port(hostport: HostPortNode) -> None:
    holds(hostport_rule_problems(hostport), "hostPort: rules name the port, so portmap (not BPF) serves it")


def test_the_agent_lists_a_host_port_frontend(hostport_reach: HostPortReach) -> None:
    holds(hostport_frontend_problems(hostport_reach.services, HOST_PORT, hostport_reach.family), f"hostPort: on {hostport_reach.on.node}")


def test_a_second_pod_is_not_admitted_on_the_same_host_port(hostport: HostPortNode) -> None:
    holds(hostport_admission_problems(hostport.second_pod, hostport.node), "hostPort")
