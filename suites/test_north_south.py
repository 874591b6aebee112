"""North-south: a LoadBalancer VIP and an externalIPs address answer from outside the cluster through every node;
externalTrafficPolicy Local on a VIP is served only through the node with the backend, which sees the client's own
address; and the VIP's health frontend, ``<VIP>:<healthCheckNodePort>``, says which nodes have a backend.

The suite's own LB-IPAM pool (a block per family the run tests, selecting the suite's namespace) gives two LoadBalancer
Services their VIPs: ``ns-lb`` (two backends, ``ns-web``) and ``ns-local`` (externalTrafficPolicy Local, one backend pod
on a node other than the client node). ``ns-eip`` is a ClusterIP Service with an externalIPs address of each family from
outside the pool. The runner reaches each address through one node at a time, by a route through that node, as Cilium's
own LB test on kind does (rules.datapath.SRC_VIA_NODE; not L2 announcements, which are incompatible with
externalTrafficPolicy Local and have IPv6 only from 1.19: SRC_L2_LIMITS); each request's backend is the pod that logged its token. The VIP's health
frontend needs the agents' enable-health-check-loadbalancer-ip (Helm nodePort.enableHealthCheckLoadBalancerIP, which the
kind values set; off by default: SRC_HEALTH_LB_IP): off, that test is skipped with the reason.

Each family has its own VIPs and frontends (lb4/lb6 lookups): the requests run once per family of --kpr-ip-families
(evidence ``north-south-ipv6.json``); the workloads and the pool are created once. Without a route from the runner to
the nodes, or without CAP_NET_ADMIN to route a VIP through a node, the tests are skipped (a failure where the outside
view is required).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import ClusterHandle, Evidence, family_file, holds, L3n4, Lab, no_outside_view, Settings
from pytest_kpr.judge.north_south import etp_local_problems, health_problems, served_problems
from pytest_kpr.judge.north_south import NorthSouthObservation, OutsideHttp
from pytest_kpr.rules.datapath import local_endpoint_count
from pytest_kpr.scenarios.vips import Vips, request, suite_blocks

pytestmark = [
    pytest.mark.kpr(property="north-south", evidence="north-south.json", plane="per-packet",
                    sources=["SRC_VIP_OUTSIDE", "SRC_VIA_NODE", "SRC_L2_LIMITS", "SRC_LBIPAM_FAMILIES", "SRC_LBIPAM_SELECTOR",
                             "SRC_ETP_SCOPES", "SRC_HEALTH_LB_IP"]),
    pytest.mark.kpr_requires("nodeport"),
]
#: the suite's addresses: its pool's blocks and the externalIPs address, per family (benchmarking ranges: scenarios.vips)
#: this suite's addresses: the first of --kpr-outside-vip-base's blocks (scenarios.vips.suite_blocks)
BLOCK_INDEX = 0
TIMEOUT = 3.0


@pytest.fixture(scope="module")
def ns_workloads(lab: Lab, kpr_settings: Settings) -> Vips:
    """The pool, the backends and the three Services, created once for every family."""
    vips = Vips(lab, lab.run_labels, lab.track_cluster_object,
                suite_blocks(kpr_settings.outside_vip_base, BLOCK_INDEX),
                f"kpr-ns-{lab.run_id}")
    vips.create_pool()
    lab.create_deployment("ns-web", 2)
    lab.create_web_pod("ns-local-backend", {"app": "ns-local-backend"}, lab.remote_node())
    lab.create_service("ns-lb", {"app": "ns-web"}, "LoadBalancer")
    lab.create_service("ns-local", {"app": "ns-local-backend"}, "LoadBalancer",
                       tweak=lambda svc: svc["spec"].update(externalTrafficPolicy="Local"))
    eips = [vips.blocks.spare(f) for f in lab.ip_families]
    lab.create_service("ns-eip", {"app": "ns-web"}, tweak=lambda svc: svc["spec"].update(externalIPs=eips))
    lab.wait_ready_endpoints("ns-lb", 2)
    lab.wait_ready_endpoints("ns-local", 1)
    return vips


@pytest.fixture(scope="module")
def seen(ns_workloads: Vips, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str,
         kpr_cluster: ClusterHandle) -> NorthSouthObservation:
    lab, vips = family_lab, ns_workloads
    nodes = [n.name for n in lab.facts.nodes]
    vip, local_vip, eip = vips.vip(lab, "ns-lb"), vips.vip(lab, "ns-local"), vips.blocks.spare(kpr_family)
    for i, node in enumerate(nodes):  # this family's frontends, on every node the requests go through
        for ip in (vip, local_vip, eip):
            lab.wait_programmed(node, L3n4(ip, 80, "TCP"), f"the agent on {node} to program {ip}:80", first_look=i == 0 and ip == vip)
    web = sorted(p["metadata"]["name"] for p in lab.kube.list("Pod", lab.ns, "app=ns-web"))
    svc: Any = lab.kube.get("Service", "ns-local", lab.ns) or {}
    hc_port = int(svc["spec"].get("healthCheckNodePort") or 0)
    with_backend = lab.remote_node()
    slices = lab.kube.list("EndpointSlice", lab.ns, "kubernetes.io/service-name=ns-local")
    expected = {n: local_endpoint_count(slices, n) for n in nodes}
    flag = lab.agent(lab.client_node).config().get("EnableHealthCheckLoadBalancerIP")
    health_on = None if flag is None else flag.strip().lower() in ("true", "enabled")
    outside = kpr_cluster.outside
    client, no_view = "", None
    requests: dict[str, list[OutsideHttp]] = {"vip": [], "eip": [], "local": [], "health": []}
    if outside is None:
        no_view = "the provider has no outside client"
    for node in nodes if outside is not None else []:
        node_ip = lab.node_ip(node)
        with outside.via(node_ip, [vip, local_vip, eip]) as why:
            if why is not None:
                no_view = why
                break
            client = outside.source_address(node_ip) or ""
            requests["vip"].append(request(lab, outside, vip, 80, node, web, TIMEOUT))
            requests["eip"].append(request(lab, outside, eip, 80, node, web, TIMEOUT))
            requests["local"].append(request(lab, outside, local_vip, 80, node, ["ns-local-backend"], TIMEOUT))
            if health_on:
                requests["health"].append(request(lab, outside, local_vip, hc_port, node, [], TIMEOUT))
    obs = NorthSouthObservation(kpr_family, client, tuple(web), vip, tuple(requests["vip"]), eip, tuple(requests["eip"]), local_vip,
                                "ns-local-backend", with_backend, tuple(requests["local"]), hc_port, health_on,
                                tuple(requests["health"]), expected, no_view)
    evidence.write(family_file("north-south.json", kpr_family), {**obs.to_json(), "problems": None if no_view else {
        "vip": served_problems(obs.vip_requests, obs.backends, "VIP"),
        "external_ip": served_problems(obs.eip_requests, obs.backends, "externalIPs address"),
        "etp_local": etp_local_problems(obs.local_requests, with_backend, obs.local_backend, client),
        "health": health_problems(obs.health, expected, hc_port) if health_on else None}})
    answered = sum(r.http_code == 200 for r in obs.vip_requests)
    evidence.figure(kpr_property, f"no outside view: {no_view}" if no_view else
                    f"VIP {vip} served through {answered} of {len(nodes)} nodes; eTP=Local VIP through "
                    f"{sum(r.http_code == 200 for r in obs.local_requests)} (the backend's node: {with_backend})", kpr_family)
    return obs


def _outside(seen: NorthSouthObservation) -> None:
    if seen.no_view:
        no_outside_view(seen.no_view)


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_loadbalancer_vip_answers_from_outside_through_every_node(seen: NorthSouthObservation) -> None:
    _outside(seen)
    holds(served_problems(seen.vip_requests, seen.backends, "VIP"), f"north-south (LoadBalancer VIP {seen.vip} from outside)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_an_external_ip_answers_from_outside_through_every_node(seen: NorthSouthObservation) -> None:
    _outside(seen)
    holds(served_problems(seen.eip_requests, seen.backends, "externalIPs address"),
          f"north-south (externalIPs {seen.external_ip} from outside)")


def test_etp_local_on_a_vip_is_served_only_where_the_backend_is(seen: NorthSouthObservation) -> None:
    _outside(seen)
    holds(etp_local_problems(seen.local_requests, seen.with_backend, seen.local_backend, seen.client),
          f"north-south (externalTrafficPolicy Local on VIP {seen.local_vip})")


def test_the_vip_health_frontend_says_which_nodes_have_a_backend(seen: NorthSouthObservation) -> None:
    _outside(seen)
    if not seen.health_on_vip:
        pytest.skip("the agents' enable-health-check-loadbalancer-ip is "
                    f"{'off' if seen.health_on_vip is False else 'not reported'} (Helm nodePort.enableHealthCheckLoadBalancerIP): "
                    "the VIP has no health frontend")
    holds(health_problems(seen.health, seen.health_expected, seen.health_port),
          f"north-south (health frontend {seen.local_vip}:{seen.health_port})")
