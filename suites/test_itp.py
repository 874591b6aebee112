"""internalTrafficPolicy=Local: a pod's connections to the ClusterIP go to backends on its own node only; a pod on a node without one gets its plane's no-backend answer; traffic from outside through a NodePort is unaffected.

For a ClusterIP the agent writes one scope, and with internalTrafficPolicy=Local it holds only the node's own backends
(cilium/cilium pkg/loadbalancer/writer/writer.go shouldUseLocalBackends; pytest_kpr.rules.datapath SRC_ITP_CLUSTER_IP):
on a node with none the frontend has no backend, and the socket plane fails connect() at once (SRC_ITP_NO_LOCAL).
Traffic from outside reads a NodePort's external scope, which internalTrafficPolicy does not narrow (SRC_ITP_EXTERNAL).
Two web pods, ``itp-near`` on the client node and ``itp-far`` on another node, behind ``itp`` (NodePort,
internalTrafficPolicy Local); ``itp-far-only`` (the same, ``itp-far`` alone). A probe pod on each of the two nodes
connects to ``itp``'s ClusterIP ``CONNECTIONS`` times (``kpr probe connect``: the socket's peer is the backend the socket
LB chose); the client node's probe connects to ``itp-far-only`` (no local backend); a host-network probe on the far node
sends a raw SYN to the client node's InternalIP at ``itp-far-only``'s NodePort (it arrives at that node's bpf_host from
outside). The agents' slots for the ClusterIPs are recorded per node. Before Cilium 1.19 honoured only while the agent's
enable-internal-traffic-policy is true (SRC_ITP_ENABLED; else the tests skip, naming it); from 1.19 always, the option
being gone (SRC_ITP_ALWAYS). Needs socket LB in pod
namespaces and NodePort. Evidence: itp.json.

A ClusterIP of each family is its own frontend with its own scope: the connections and the raw SYN run once per family
of --kpr-ip-families, to that family's ClusterIPs and node address (evidence ``itp-ipv6.json``); the pods and Services
are created once.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import ClusterFacts, Evidence, family_file, holds, hp, Lab, probe_pod, WEB_TARGET
from pytest_kpr.judge.itp import external_problems, local_only_problems
from pytest_kpr.judge.no_backend import known_regression, socket_no_backend_problems
from pytest_kpr.judge.itp import ItpObservation
from pytest_kpr.model.probe import ProbeAnswer
from pytest_kpr.rules.datapath import ITP_FILE, itp_enabled

pytestmark = [
    pytest.mark.kpr(property="iTP=Local", evidence="itp.json", plane=["socket", "per-packet"],
                    sources=["SRC_ITP_CLUSTER_IP", "SRC_ITP_NO_LOCAL", "SRC_ITP_EXTERNAL", "SRC_ITP_ENABLED", "SRC_ITP_ALWAYS", "SRC_SOCK_RETVAL"]),
    pytest.mark.kpr_requires("socket-lb-pods", "nodeport"),
]
#: connections per probe pod: with two backends, a Cluster policy keeps all of them local by chance with 2^-12 per node
CONNECTIONS, TIMEOUT, WEB_PORT = 12, 2.0, 80


def _local(svc: dict[str, Any]) -> None:
    svc["spec"]["internalTrafficPolicy"] = "Local"


@pytest.fixture(scope="module")
def itp_workloads(lab: Lab, probe: Lab, kpr_facts: ClusterFacts) -> tuple[str, str, str | None]:
    """The two web pods, the two Services and the far node's probes, created once for every family (skipped, naming the
    setting, when the agent ignores internalTrafficPolicy): (near node, far node, the agent's setting)."""
    near, far = lab.client_node, lab.remote_node()
    enabled = lab.agent(near).exec(["cat", ITP_FILE])
    setting = enabled.stdout.strip() if enabled.ok else None
    if not itp_enabled(setting, kpr_facts.cilium_version):  # from 1.19 the option is gone: always honoured (SRC_ITP_ALWAYS)
        pytest.skip(f"the agent's enable-internal-traffic-policy is {setting} (Cilium {kpr_facts.cilium_version}): Cilium ignores "
                    "internalTrafficPolicy (writer.go isIntLocal returns false), so there is no Local behaviour to check")
    lab.create_web_pod("itp-near", {"app": "itp", "side": "near"}, near)
    lab.create_web_pod("itp-far", {"app": "itp", "side": "far"}, far)
    lab.create_service("itp", {"app": "itp"}, "NodePort", tweak=_local)
    lab.create_service("itp-far-only", {"app": "itp", "side": "far"}, "NodePort", tweak=_local)
    lab.create(probe_pod("probe-far", lab.ns, lab.image, node=far, labels={"app": "probe-far"}))
    lab.create(probe_pod("hostprobe-far", lab.ns, lab.image, node=far, labels={"app": "hostprobe-far"}, host_network=True))
    for pod in ("probe-far", "hostprobe-far"):
        lab.wait_running(pod)
    lab.wait_ready_endpoints("itp", 2)
    lab.wait_ready_endpoints("itp-far-only", 1)
    return near, far, setting


@pytest.fixture(scope="module")
def itp(itp_workloads: tuple[str, str, str | None], family_lab: Lab, kpr_facts: ClusterFacts, evidence: Evidence, kpr_property: str,
        kpr_family: str) -> ItpObservation:
    lab = family_lab
    near, far, setting = itp_workloads
    # a precondition, not the property: each agent lists both Services (how many slots each holds is recorded below)
    lab.wait_programmed_on([near, far], ["itp", "itp-far-only"])
    pods = {p["metadata"]["name"]: p for p in lab.pods("app=itp")}
    backend_node = {hp(lab.pod_ip(p), WEB_TARGET): p["spec"]["nodeName"] for p in pods.values()}  # this family's addresses
    backend_pod = {hp(lab.pod_ip(p), WEB_TARGET): name for name, p in pods.items()}
    target = hp(lab.cluster_ip("itp"), WEB_PORT)
    peers = {near: lab.socket_peers(target, CONNECTIONS, TIMEOUT), far: lab.socket_peers(target, CONNECTIONS, TIMEOUT, pod="probe-far")}
    ghost_target = hp(lab.cluster_ip("itp-far-only"), WEB_PORT)
    no_local = lab.probe("connect", ghost_target, TIMEOUT)
    node_port = lab.allocated_node_port("itp-far-only")
    outside = lab.probe("syn", hp(lab.node_ip(near), node_port), TIMEOUT, pod="hostprobe-far")
    entries = {node: {name: lab.service_entry(lab.agent(node), lab.frontend(name)) for name in ("itp", "itp-far-only")} for node in (near, far)}
    slots = {node: {name: None if e is None else len(e.backends) for name, e in es.items()} for node, es in entries.items()}
    client = kpr_facts.node(near)
    obs = ItpObservation(
        kpr_family, setting, near, far, {backend_pod[a]: (a, n) for a, n in backend_node.items()}, target,
        {n: tuple(backend_pod.get(p, p) if p else None for p in ps) for n, ps in peers.items()},
        ProbeAnswer(ghost_target, no_local.verdict, no_local.errno_name, no_local.elapsed_ms),
        ProbeAnswer(hp(lab.node_ip(near), node_port), outside.verdict), slots, client.kernel if client else None,
        kpr_facts.no_backend_response)
    evidence.write(family_file("itp.json", kpr_family), obs.to_json())
    local = sum(backend_node.get(p or "") == n for n, ps in peers.items() for p in ps)
    evidence.figure(kpr_property, f"{local} of {sum(len(ps) for ps in peers.values())} connections served by a backend on the pod's own node; "
                                  f"no local backend: {no_local.verdict}{' ' + no_local.errno_name if no_local.errno_name else ''}; "
                                  f"from outside: {outside.verdict}", kpr_family)
    return obs


def test_a_pod_reaches_only_the_backends_on_its_own_node(itp: ItpObservation) -> None:
    """From each of two nodes, every connection to the ClusterIP goes to that node's own backend (SRC_ITP_CLUSTER_IP)."""
    holds(local_only_problems(itp.connections, itp.backend_node), "iTP=Local (local backends only)")


def test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer(itp: ItpObservation, kpr_facts: ClusterFacts) -> None:
    """The ClusterIP has backends, none on this node: connect() fails as for a Service with no backend (SRC_ITP_NO_LOCAL)."""
    nl = itp.no_local
    path = f"pod connect() on {itp.near} to {nl.target}, whose only backend is on {itp.far}"
    problems = socket_no_backend_problems(path, "connect", nl.verdict, nl.elapsed_ms, nl.errno, kpr_facts.no_backend_response,
                                          itp.client_kernel)
    if why := known_regression(problems, kpr_facts.cilium_version):
        pytest.xfail(why)
    holds(problems, "iTP=Local (no local backend)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_traffic_from_outside_is_unaffected(itp: ItpObservation) -> None:
    """A raw SYN from outside to the node without a local backend is served by the other node's backend (SRC_ITP_EXTERNAL)."""
    holds(external_problems(itp.outside.verdict, itp.outside.target, itp.far), "iTP=Local (from outside)")
