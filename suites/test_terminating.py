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
json`` backends with their states, ``lb/maps-dump`` slots: those in the count, those kept after it) is recorded. The pods are removed at once afterwards (grace 0).
Needs socket LB in pod namespaces. Evidence: terminating.json.

The scenario deletes its backends, so it runs once and observes every family of --kpr-ip-families inside it: a flow
per family (``term-flow``, ``term-flow-ipv6``), the agent's view of each family's frontend and new connections to each
family's ClusterIP at each step; the tests are judged per family (evidence ``terminating-ipv6.json``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from pytest_kpr.suite import (ClusterFacts, eventually, Evidence, family_file, holds, hp, L3n4, Lab, probe_pod,
                              same_address)
from pytest_kpr.judge.no_backend import known_regression, socket_no_backend_problems
from pytest_kpr.judge.terminating import draining_flow_problems, flow_outlived_problems, new_connection_problems
from pytest_kpr.model.probe import ProbeAnswer
from pytest_kpr.judge.terminating import SlotsSeen, TerminatingObservation
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
def term(lab: Lab, probe: Lab, kpr_facts: ClusterFacts, evidence: Evidence, kpr_property: str,
         family_views: dict[str, Lab]) -> Iterator[dict[str, TerminatingObservation]]:
    """The scenario, run once: family -> what was seen in it."""
    client, other = lab.client_node, lab.remote_node()
    agent = lab.agent(client)
    opt = agent.exec(["cat", TERMINATING_FILE])
    setting = opt.stdout.strip() if opt.ok else None
    kept = terminating_endpoints_kept(setting)
    try:
        yield _run(lab, kpr_facts, evidence, kpr_property, client, other, setting, kept, family_views)
    finally:
        for pod in ("term-a", "term-b"):  # remove at once: their preStop would hold the namespace for HOLD_S
            lab.kube.delete("Pod", pod, lab.ns, grace_period_seconds=0)


def _flow_pod(family: str) -> str:
    return "term-flow" if family == "IPv4" else f"term-flow-{family.lower()}"


def _run(lab: Lab, kpr_facts: ClusterFacts, evidence: Evidence, kpr_property: str, client: str, other: str, setting: str | None,
         kept: bool, views: dict[str, Lab]) -> dict[str, TerminatingObservation]:
    agent = lab.agent(client)
    families = list(views)
    lab.create(_echo("term-a", lab, other))
    lab.create_service("term", {"app": "term"}, tweak=lambda svc: svc["spec"].update(ports=[{"name": "echo", "port": PORT, "targetPort": PORT}]))
    addr = {f: {"term-a": sorted(v.wait_ready_endpoints("term", 1))[0]} for f, v in views.items()}
    fes = {f: L3n4(v.cluster_ip("term"), PORT, "TCP" if lab.minor >= (1, 17) else None) for f, v in views.items()}
    targets = {f: fe.host_port() for f, fe in fes.items()}

    def view(family: str) -> dict[str, str]:
        """The client's agent: backend -> state, as `service list -o json` prints the family's frontend's backends."""
        svc = next((s for s in agent.services() if same_address(s.frontend, fes[family])), None)
        return {} if svc is None else {hp(b.address.ip, b.address.port): b.state for b in svc.backends}

    def wait_views(until: Callable[[str, dict[str, str]], bool], what: str) -> dict[str, dict[str, str]]:
        return {f: eventually(lambda f=f: view(f), until=lambda v, f=f: until(f, v), timeout=lab.t.DATAPATH_CONVERGENCE,
                              what=f"{what} ({f})", describe=lambda v: str(v) or "absent", progress=lab.progress,
                              first_after=lab.t.LB_FIRST_LOOK).value for f in families}

    steps: dict[str, dict[str, dict[str, str]]] = {}
    steps["one"] = wait_views(lambda f, v: v.get(addr[f]["term-a"]) == "active", f"the agent on {client} to serve term with term-a")
    # a flow per family, each to term-a (the only backend yet)
    lab.start_flows({_flow_pod(f): targets[f] for f in families}, client, "term-flow", interval_ms=FLOW_INTERVAL_MS, duration_s=HOLD_S * 3)
    lab.create(_echo("term-b", lab, client))
    for f, v in views.items():
        addr[f]["term-b"] = next(a for a in sorted(v.wait_ready_endpoints("term", 2)) if a != addr[f]["term-a"])
    steps["two"] = wait_views(lambda f, v: v.get(addr[f]["term-b"]) == "active", f"the agent on {client} to serve term with term-b too")

    lab.kube.delete("Pod", "term-a", lab.ns)
    steps["a_terminating"] = wait_views(lambda f, v: v.get(addr[f]["term-a"]) != "active" and v.get(addr[f]["term-b"]) == "active",
                                        f"the agent on {client} to stop offering term-a (terminating) to new connections")
    peers_one = {f: lab.socket_peers(targets[f], NEW, TIMEOUT) for f in families}
    slots_one = {f: lab.slot_view(agent, fes[f]) for f in families}

    lab.kube.delete("Pod", "term-b", lab.ns)
    steps["only_terminating"] = wait_views(lambda f, v: v.get(addr[f]["term-b"]) != "active" and "active" not in v.values(),
                                           f"the agent on {client} to see only terminating backends of term")
    only = {f: lab.probe("connect", targets[f], TIMEOUT) for f in families}
    peers_only = {f: lab.socket_peers(targets[f], NEW, TIMEOUT) if kept else [] for f in families}
    slots_only = {f: lab.slot_view(agent, fes[f]) for f in families}
    a_pod = lab.kube.get("Pod", "term-a", lab.ns) or {}
    a_still = bool(a_pod.get("metadata", {}).get("deletionTimestamp"))

    reports = {f: lab.stop_flow(_flow_pod(f)) for f in families}
    client_facts = kpr_facts.node(client)
    out: dict[str, TerminatingObservation] = {}
    for f in families:
        a, report = addr[f], reports[f]
        obs = TerminatingObservation(
            f, setting, kept, HOLD_S, a, targets[f], client, {step: v[f] for step, v in steps.items()},
            {step: SlotsSeen(tuple(v[f].backends), tuple(v[f].kept)) for step, v in (("a_terminating", slots_one), ("only_terminating", slots_only))},
            tuple(peers_one[f]), tuple(peers_only[f]), ProbeAnswer(targets[f], only[f].verdict, only[f].errno_name, only[f].elapsed_ms),
            _flow_pod(f), a_still, report, client_facts.kernel if client_facts else None, kpr_facts.no_backend_response)
        evidence.write(family_file("terminating.json", f), obs.to_json())
        evidence.figure(kpr_property, f"flow through term-a's termination: {report.get('resets', '?')} resets, max gap "
                                      f"{report.get('max_gap_ms', '?')} ms; new: {sum(p == a['term-b'] for p in peers_one[f])} of "
                                      f"{len(peers_one[f])} to the active backend, only terminating: {only[f].verdict}", f)
        out[f] = obs
    return out


@pytest.fixture(scope="module")
def term_family(term: dict[str, TerminatingObservation], kpr_family: str) -> TerminatingObservation:
    """What the scenario saw in this test's family."""
    return term[kpr_family]


def test_an_established_connection_keeps_working_while_its_backend_terminates(term_family: TerminatingObservation) -> None:
    """The flow reached term-a before it was deleted; it runs on until stopped, term-a still terminating (SRC_TERMINATING_DRAIN)."""
    t = term_family
    holds(flow_outlived_problems(t.flow_outlived, "term-a", t.hold_s) or draining_flow_problems(t.flow, "term-a", GAP_BOUND_MS),
          "terminating backends (established connection)")


def test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists(term_family: TerminatingObservation) -> None:
    a = term_family.backends
    holds(new_connection_problems(term_family.peers_a_terminating, {a["term-b"]: "term-b"}, {a["term-a"]: "term-a"}, "while term-a terminates"),
          "terminating backends (new connections)")


def test_when_only_terminating_backends_remain_new_connections_follow_the_rule(term_family: TerminatingObservation,
                                                                               kpr_facts: ClusterFacts) -> None:
    """enable-k8s-terminating-endpoint on (the default): they reach a terminating backend (KEP-1669); off: the Service has no
    backend, and the socket plane's no-backend rule applies."""
    t, a = term_family, term_family.backends
    if t.kept:
        holds(new_connection_problems(t.peers_only_terminating, {a["term-a"]: "term-a", a["term-b"]: "term-b"}, {}, "with only terminating backends"),
              "terminating backends (only terminating)")
        return
    p = t.only_terminating_probe
    path = f"pod connect() to {t.service}, whose backends all terminate (enable-k8s-terminating-endpoint false)"
    problems = socket_no_backend_problems(path, "connect", p.verdict, p.elapsed_ms, p.errno, kpr_facts.no_backend_response, t.client_kernel)
    if why := known_regression(problems, kpr_facts.cilium_version):
        pytest.xfail(why)
    holds(problems, "terminating backends (only terminating, option off)")
