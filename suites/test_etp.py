"""externalTrafficPolicy=Local: only a node with a local backend serves the Service from outside, the backend sees the
client's own address, in-cluster access is unaffected, and the agent's health-check NodePort tells load balancers
which nodes have a backend.

One backend pod (``etp-backend``, on a node other than the client node) behind two Services: ``etp-local`` (type
LoadBalancer, externalTrafficPolicy Local, so Kubernetes allocates a healthCheckNodePort) and ``etp-cluster``
(NodePort, Cluster). Traffic from outside looks up a frontend's external scope, which for Local holds only the node's
own backends; east-west lookups use the internal scope (cilium/cilium bpf/lib/lb.h lb4_lookup_service;
pytest_kpr.rules.datapath SRC_ETP_SCOPES, SRC_ETP_NO_LOCAL). Outside is a raw SYN from a host-network pod on the client node
to the other nodes' InternalIPs (it leaves through the native device), and an HTTP GET from the runner where it has a
route to the nodes. The health server: pytest_kpr.rules.datapath SRC_HEALTHSERVER. Evidence: etp.json.

The external scope is looked up per family (lb4_lookup_service / lb6_lookup_service), and the health server listens on
every address of both families (SRC_HEALTHSERVER): the observations run once per family of --kpr-ip-families, against
the nodes' InternalIPs and the ClusterIP of that family (evidence ``etp-ipv6.json``); the workloads are created once.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_kpr.suite import ClusterFacts, ClusterHandle, Evidence, family_file, holds, hp, Lab, no_outside_view, token
from pytest_kpr.judge.etp import (
    client_address_problems,
    cluster_ip_problems,
    etp_reach_problems,
    health_check_problems,
    outside_answer_problems,
)
from pytest_kpr.judge.etp import EtpObservation, OutsideRequest
from pytest_kpr.rules.datapath import backend_sees, local_endpoint_count

pytestmark = [
    pytest.mark.kpr(property="eTP=Local", evidence="etp.json",
                    plane=["per-packet", "socket"],
                    sources=["SRC_ETP_SCOPES", "SRC_ETP_NO_LOCAL", "SRC_HEALTHSERVER"]),
    pytest.mark.kpr_requires("nodeport"),
]
PROBE_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def etp_workloads(lab: Lab) -> tuple[str, str, list[str]]:
    """The backend and the two Services, created once for every family: the client node, the node with the backend, the others."""
    client, with_backend = lab.client_node, lab.remote_node()
    others = [n.name for n in lab.facts.nodes if n.name not in (client, with_backend)]
    lab.create_web_pod("etp-backend", {"app": "etp-backend"}, with_backend)
    lab.create_service("etp-local", {"app": "etp-backend"}, "LoadBalancer", tweak=lambda svc: svc["spec"].update(externalTrafficPolicy="Local"))
    lab.create_service("etp-cluster", {"app": "etp-backend"}, "NodePort")
    lab.deploy_host_probe()
    lab.deploy_probe()
    lab.wait_ready_endpoints("etp-local", 1)
    return client, with_backend, others


@pytest.fixture(scope="module")
def etp(etp_workloads: tuple[str, str, list[str]], family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_cluster: ClusterHandle,
        kpr_family: str) -> EtpObservation:
    lab = family_lab
    client, with_backend, others = etp_workloads
    lab.wait_programmed_on([client, with_backend, *others], ["etp-local", "etp-cluster"])  # this family's frontends
    ports = {name: lab.allocated_node_port(name) for name in ("etp-local", "etp-cluster")}
    outside_nodes = [with_backend, *others]  # a raw SYN from the client node to its own address would not leave it
    raw: dict[str, dict[str, str]] = {name: {} for name in ports}
    for name, port in ports.items():
        for node in outside_nodes:
            raw[name][node] = lab.probe("syn", hp(lab.node_ip(node), port), PROBE_TIMEOUT, pod="hostprobe").verdict
    cluster_ip = lab.probe("connect", hp(lab.cluster_ip("etp-local"), 80), PROBE_TIMEOUT).verdict
    svc = lab.kube.get("Service", "etp-local", lab.ns) or {}
    hc_port = int(svc["spec"].get("healthCheckNodePort") or 0)
    health: dict[str, tuple[int | None, Any]] = {}
    # what each node's health server counts: one per active backend address and port on the node, every family's
    slices = lab.kube.list("EndpointSlice", lab.ns, "kubernetes.io/service-name=etp-local")
    expected = {node: local_endpoint_count(slices, node) for node in [client, with_backend, *others]}
    for node in [client, with_backend, *others]:
        code, body = lab.http_body(f"http://{hp(lab.node_ip(node), hc_port)}/", 5.0)
        try:
            health[node] = (code, json.loads(body) if body.strip() else None)
        except ValueError:
            health[node] = (code, None)
    outside: OutsideRequest | None = None
    ip = lab.node_ip(with_backend)
    if kpr_cluster.outside is not None and kpr_cluster.outside.reaches(ip):
        mark = token()
        r = kpr_cluster.outside.http(f"http://{hp(ip, ports['etp-local'])}/?kpr={mark}", 5.0)
        served = lab.who_served(["etp-backend"], mark)
        outside = OutsideRequest(kpr_cluster.outside.source_address(ip), ip, r.http_code, served[0] if served else None,
                                 served[1] if served else None)
    obs = EtpObservation(kpr_family, client, with_backend, tuple(others), ports, raw, cluster_ip, hc_port, health, expected, outside)
    evidence.write(family_file("etp.json", kpr_family), obs.to_json())
    seen = f"backend saw {outside.seen}" if outside else "no outside view"
    evidence.figure(kpr_property, f"served by {sum(v == 'accepted' for v in raw['etp-local'].values())} of {len(outside_nodes)} nodes from outside "
                              f"(Cluster: {sum(v == 'accepted' for v in raw['etp-cluster'].values())}); {seen}", kpr_family)
    return obs


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_only_the_node_with_a_local_backend_serves_it_from_outside(etp: EtpObservation) -> None:
    if not etp.without_backend:
        pytest.skip("needs a third node (neither the client node nor the backend's) to send to from outside")
    holds(etp_reach_problems(etp.raw_syn["etp-local"], etp.raw_syn["etp-cluster"], etp.with_backend), "eTP=Local (from outside)")


def test_the_backend_sees_the_clients_own_address(etp: EtpObservation, kpr_facts: ClusterFacts) -> None:
    o = etp.outside
    if o is None:
        no_outside_view("the test runner has no specific route to the nodes")
    holds(outside_answer_problems(o.http_code, o.node_ip), "eTP=Local from outside")
    rule = backend_sees(kpr_facts.nodeport_mode, True, True, kpr_facts.routing_mode)
    holds(client_address_problems(o.seen, o.client, o.node_ip, rule.sees, rule.why), "eTP=Local (client address)")


def test_in_cluster_cluster_ip_access_is_unaffected(etp: EtpObservation) -> None:
    holds(cluster_ip_problems(etp.cluster_ip_connect), f"eTP=Local (ClusterIP from a pod on {etp.client}, which has no local backend)")


def test_the_health_check_node_port_reports_each_nodes_local_endpoints(etp: EtpObservation, lab: Lab) -> None:
    """Each node answers its own count: one per active backend address and port on it (a dual-stack pod counts twice)."""
    problems = health_check_problems(etp.health, etp.health_expected, (lab.ns, "etp-local"))
    holds(problems, f"eTP=Local (health-check NodePort {etp.health_check_node_port})")
