"""Terminating backends: an established connection to a backend that starts terminating keeps working while the pod terminates; new connections never pick a terminating backend while an active one exists; when only terminating backends remain, new connections use them (while enable-k8s-terminating-endpoint is on).

Kubernetes marks a deleted pod's endpoint ready false, serving true, terminating true while it runs its preStop hook;
Cilium keeps such an endpoint as a terminating backend (cilium/cilium pkg/k8s/endpoints.go, reflectors/conversions.go;
pytest_kpr.rules.datapath SRC_TERMINATING_STATE). The reconciler gives it a slot after the active ones and leaves it out
of the count new connections pick from, unless no active backend remains (bpf_reconciler.go updateFrontend, KEP-1669:
SRC_TERMINATING_SLOTS, SRC_TERMINATING_NEW); its established connections are left to finish (kubeproxy-free.rst,
Graceful Termination: SRC_TERMINATING_DRAIN). The option that governs it: enable-k8s-terminating-endpoint, on by default
(SRC_TERMINATING_OPTION); off, only-terminating means no backend at all. Two echo servers (``term-a``, ``term-b``,
``kpr probe echo-server``) with a preStop ``sleep HOLD_S`` behind the ClusterIP ``term``. A flow pod (``kpr probe
flow``) connects while ``term-a`` is the only backend; ``term-b`` joins; ``term-a`` is deleted: the flow must go on, and
``NEW`` connections (``kpr probe connect``, the socket's peer is the backend) must all reach ``term-b``; ``term-b`` is
deleted too: ``NEW`` connections must reach a terminating backend. The agent's view at each step (``service list -o
json`` backends with their states, ``bpf lb list`` slots) is recorded. The pods are removed at once afterwards (grace 0).
Needs socket LB in pod namespaces. Evidence: terminating.json.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from pytest_kpr.cluster.facts import ClusterFacts
from pytest_kpr.core.wait import eventually
from pytest_kpr.evidence import Evidence
from pytest_kpr.judge import holds
from pytest_kpr.judge.no_backend import socket_no_backend_problems
from pytest_kpr.judge.terminating import draining_flow_problems, new_connection_problems
from pytest_kpr.observe.lab import Lab, same_address
from pytest_kpr.observe.workloads import probe_pod
from pytest_kpr.parse import L3n4
from pytest_kpr.rules.datapath import TERMINATING_FILE, terminating_endpoints_kept

pytestmark = [
    pytest.mark.kpr(property="terminating backends", evidence="terminating.json", plane=["socket", "control plane"],
                    sources=["SRC_TERMINATING_STATE", "SRC_TERMINATING_SLOTS", "SRC_TERMINATING_NEW", "SRC_TERMINATING_DRAIN",
                             "SRC_TERMINATING_OPTION"]),
    pytest.mark.kpr_requires("socket-lb-pods"),
]
PORT, NEW, TIMEOUT = 7000, 20, 2.0
#: how long a deleted backend keeps terminating (its preStop sleep): longer than the suite's two agent waits
#: (DATAPATH_CONVERGENCE each) and its probes, so the flow is stopped while term-a still terminates
HOLD_S = 300
#: a gap in the flow (50 ms cadence) over this is an interruption: a lost segment's first retransmission comes after at
#: least 200 ms (TCP's minimum RTO), so a stalled connection shows up as one; 1 s leaves a loaded node room
FLOW_INTERVAL_MS, GAP_BOUND_MS = 50, 1000.0


def _echo(name: str, lab: Lab, node: str) -> dict[str, Any]:
    pod = probe_pod(name, lab.ns, lab.image, node=node, labels={"app": "term"}, command=lab.echo_server_command(PORT))
    ctr = pod["spec"]["containers"][0]
    ctr["ports"] = [{"containerPort": PORT, "name": "echo"}]
    ctr["readinessProbe"] = {"tcpSocket": {"port": PORT}, "periodSeconds": 1}
    ctr["lifecycle"] = {"preStop": {"exec": {"command": ["sleep", str(HOLD_S)]}}}
    pod["spec"]["terminationGracePeriodSeconds"] = HOLD_S + 60
    return pod


@pytest.fixture(scope="module")
def term(lab: Lab, probe: Lab, kpr_facts: ClusterFacts, evidence: Evidence, kpr_property: str) -> Iterator[dict[str, Any]]:
    client, other = lab.client_node, lab.remote_node()
    agent = lab.agent(client)
    opt = agent.exec(["cat", TERMINATING_FILE])
    setting = opt.stdout.strip() if opt.ok else None
    kept = terminating_endpoints_kept(setting)
    try:
        yield _run(lab, kpr_facts, evidence, kpr_property, client, other, setting, kept)
    finally:
        for pod in ("term-a", "term-b"):  # remove at once: their preStop would hold the namespace for HOLD_S
            lab.kube.delete("Pod", pod, lab.ns, grace_period_seconds=0)


def _run(lab: Lab, kpr_facts: ClusterFacts, evidence: Evidence, kpr_property: str, client: str, other: str, setting: str | None,
         kept: bool) -> dict[str, Any]:
    agent = lab.agent(client)
    lab.create(_echo("term-a", lab, other))
    lab.create_service("term", {"app": "term"}, tweak=lambda svc: svc["spec"].update(ports=[{"name": "echo", "port": PORT, "targetPort": PORT}]))
    addr = {"term-a": f"{sorted(lab.wait_ready_endpoints('term', 1))[0].rsplit(':', 1)[0]}:{PORT}"}
    fe = L3n4(lab.cluster_ip("term"), PORT, "TCP" if lab.minor >= (1, 17) else None)
    target = f"{fe.ip}:{PORT}"

    def view() -> dict[str, str]:
        """The client's agent: backend -> state, as `service list -o json` prints the frontend's backends."""
        svc = next((s for s in agent.services() if same_address(s.frontend, fe)), None)
        return {} if svc is None else {f"{b.address.ip}:{b.address.port}": b.state for b in svc.backends}

    def wait_view(until: Callable[[dict[str, str]], bool], what: str) -> dict[str, str]:
        return eventually(view, until=until, timeout=lab.t.DATAPATH_CONVERGENCE, what=what, describe=lambda v: str(v) or "absent",
                          progress=lab.progress, first_after=lab.t.LB_FIRST_LOOK).value

    steps: dict[str, Any] = {}
    steps["one"] = wait_view(lambda v: v.get(addr["term-a"]) == "active", f"the agent on {client} to serve term with term-a")
    flow_cmd = ["kpr", "probe", "flow", target, "--json", "--interval-ms", str(FLOW_INTERVAL_MS), "--duration", str(HOLD_S * 3)]
    flow = probe_pod("term-flow", lab.ns, lab.image, node=client, labels={"app": "term-flow"}, command=flow_cmd)
    flow["spec"]["restartPolicy"] = "Never"
    lab.create(flow)
    lab.wait_running("term-flow")
    lab.create(_echo("term-b", lab, client))
    addr["term-b"] = next(a for a in (f"{e.rsplit(':', 1)[0]}:{PORT}" for e in lab.wait_ready_endpoints("term", 2)) if a != addr["term-a"])
    steps["two"] = wait_view(lambda v: v.get(addr["term-b"]) == "active", f"the agent on {client} to serve term with term-b too")

    lab.kube.delete("Pod", "term-a", lab.ns)
    steps["a_terminating"] = wait_view(lambda v: v.get(addr["term-a"]) != "active" and v.get(addr["term-b"]) == "active",
                                       f"the agent on {client} to stop offering term-a (terminating) to new connections")
    peers_one = lab.socket_peers(target, NEW, TIMEOUT)
    slots_one = len(lab.slot_view(client, agent.lb_entries(), fe).backends)

    lab.kube.delete("Pod", "term-b", lab.ns)
    steps["only_terminating"] = wait_view(lambda v: v.get(addr["term-b"]) != "active" and "active" not in v.values(),
                                          f"the agent on {client} to see only terminating backends of term")
    only = lab.probe("connect", target, TIMEOUT)
    peers_only = lab.socket_peers(target, NEW, TIMEOUT) if kept else []
    slots_only = len(lab.slot_view(client, agent.lb_entries(), fe).backends)
    a_pod = lab.kube.get("Pod", "term-a", lab.ns) or {}
    a_still = bool(a_pod.get("metadata", {}).get("deletionTimestamp"))

    report = lab.stop_flow("term-flow")
    by_addr = {a: p for p, a in addr.items()}
    client_facts = kpr_facts.node(client)
    data = {"enable_k8s_terminating_endpoint": setting, "hold_s": HOLD_S, "backends": addr, "service": target,
            "agent": {"node": client, "states": steps, "slots": {"a_terminating": slots_one, "only_terminating": slots_only}},
            "new_connections": {"a_terminating": [by_addr.get(p or "", p) for p in peers_one],
                                "only_terminating": [by_addr.get(p or "", p) for p in peers_only]},
            "only_terminating_probe": {"verdict": only.verdict, "errno": only.errno_name, "elapsed_ms": only.elapsed_ms},
            "flow": {"backend": "term-a", "term_a_still_terminating_at_stop": a_still, "summary": report},
            "client_kernel": client_facts.kernel if client_facts else None, "no_backend_response": kpr_facts.no_backend_response}
    evidence.write("terminating.json", data)
    evidence.figure(kpr_property, f"flow through term-a's termination: {report.get('resets', '?')} resets, max gap {report.get('max_gap_ms', '?')} ms; "
                                  f"new: {sum(p == addr['term-b'] for p in peers_one)} of {len(peers_one)} to the active backend, "
                                  f"only terminating: {only.verdict}")
    return {**data, "addr": addr, "peers_one": peers_one, "peers_only": peers_only, "kept": kept}


def test_an_established_connection_keeps_working_while_its_backend_terminates(term: dict[str, Any]) -> None:
    """The flow reached term-a before it was deleted; it runs on until stopped, term-a still terminating (SRC_TERMINATING_DRAIN)."""
    f = term["flow"]
    assert f["term_a_still_terminating_at_stop"], (f"terminating backends (draining): term-a was gone before the flow was stopped "
                                                   f"(its preStop holds it {HOLD_S} s); nothing can be said of its connection")
    holds(draining_flow_problems(f["summary"], "term-a", GAP_BOUND_MS), "terminating backends (established connection)")


def test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists(term: dict[str, Any]) -> None:
    a = term["addr"]
    holds(new_connection_problems(term["peers_one"], {a["term-b"]: "term-b"}, {a["term-a"]: "term-a"}, "while term-a terminates"),
          "terminating backends (new connections)")


def test_when_only_terminating_backends_remain_new_connections_follow_the_rule(term: dict[str, Any], kpr_facts: ClusterFacts) -> None:
    """enable-k8s-terminating-endpoint on (the default): they reach a terminating backend (KEP-1669); off: the Service has no
    backend, and the socket plane's no-backend rule applies."""
    a = term["addr"]
    if term["kept"]:
        holds(new_connection_problems(term["peers_only"], {a["term-a"]: "term-a", a["term-b"]: "term-b"}, {}, "with only terminating backends"),
              "terminating backends (only terminating)")
        return
    p = term["only_terminating_probe"]
    path = f"pod connect() to {term['service']}, whose backends all terminate (enable-k8s-terminating-endpoint false)"
    holds(socket_no_backend_problems(path, "connect", p["verdict"], p["elapsed_ms"], p["errno"], kpr_facts.no_backend_response,
                                     term["client_kernel"]), "terminating backends (only terminating, option off)")
