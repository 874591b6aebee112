"""Session affinity: sessionAffinity ClientIP keeps a client on one backend; without it connections spread.

Four backends (`aff`, the web server) behind two ClusterIP Services: `aff-sticky` (sessionAffinity ClientIP) and
`aff-plain`. The probe pod connects 20 times to each (`kpr probe connect --count 20`); each connection's backend is
the kernel socket's peer, which socket LB sets at connect() (getpeername() still shows the Service). Socket LB picks
the backend remembered for the client's network namespace for an affinity Service, a random slot otherwise
(cilium/cilium bpf/bpf_sock.c ``__sock4_xlate_fwd``, ``lb4_affinity_backend_id_by_netns``, ``sock_select_slot``).
A third Service, ``aff-timeout`` (timeoutSeconds 1), gets 10 connections 2.5 s apart: each finds its affinity expired
(bpf/lib/lb.h ``__lb4_affinity_backend_id``: used while now < last_used + timeout) and picks anew. Needs socket LB in pod
namespaces (Full coverage): under Hostns-only the client cannot see the backend. Evidence: affinity.json.

Each family has its own affinity map (LB4_AFFINITY_MAP, LB6_AFFINITY_MAP; ``lb6_affinity_backend_id_by_netns`` for
connect6): the connections run once per family of --kpr-ip-families, to the ClusterIPs of that family (evidence
``affinity-ipv6.json``); the backends and Services are created once.

The per-packet plane, from outside: two NodePort Services over the same backends, ``aff-np-sticky`` (sessionAffinity
ClientIP) and ``aff-np-plain``. The runner sends 12 HTTP requests to each through one node's NodePort; each request's
backend is the pod that logged its token. A node keys its affinity by the client's address (datapath.SRC_AFFINITY_OUTSIDE:
"If a request is sent from outside the cluster to the service, the request's source IP address is used for determining
the endpoint affinity"), so every request to the sticky Service reaches one backend, and without affinity they spread.
The node's own record is read too: its per-packet affinity map (``bpftool map dump pinned
/sys/fs/bpf/tc/globals/cilium_lb4_affinity -j`` in the agent container, SRC_AFFINITY_MAP) must hold an entry keyed by the
runner's address and the NodePort frontend's rev NAT ID (lb/maps-dump), naming the backend that served every request.
Without a route from the runner to the nodes these three tests are skipped (a failure where the outside view is required).
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import (ClusterHandle, eventually, Evidence, family_file, holds, hp, Lab, no_outside_view, Tweak, WEB_PORT,
                              WEB_TARGET, token)
from pytest_kpr.judge.affinity import (
    AFFINITY_BACKENDS,
    AFFINITY_CONNECTIONS,
    AFFINITY_IDLE_S,
    AFFINITY_TIMEOUT_ROUNDS,
    AFFINITY_TIMEOUT_S,
    OUTSIDE_REQUESTS,
    affinity_map_problems,
    outside_spread_problems,
    outside_sticky_problems,
    spread_problems,
    sticky_problems,
    timeout_problems,
)
from pytest_kpr.judge.affinity import AffinityObservation, OutsideAffinity

pytestmark = [
    pytest.mark.kpr(property="affinity", evidence="affinity.json",
                    plane=["socket", "per-packet"],
                    sources=["SRC_AFFINITY_TIMEOUT", "SRC_AFFINITY_OUTSIDE", "SRC_AFFINITY_MAP", "SRC_REV_NAT_ORDER", "SRC_BPFTOOL_DUMP"]),
    pytest.mark.kpr_requires("socket-lb-pods", "session-affinity"),
]


def _client_ip(timeout: int) -> Tweak:
    """sessionAffinity ClientIP with this timeout."""
    return lambda svc: svc["spec"].update(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": timeout}})


@pytest.fixture(scope="module")
def aff_workloads(lab: Lab, probe: Lab) -> list[str]:
    """The backends and the three Services, created once for every family; the pods Ready."""
    lab.create_deployment("aff", AFFINITY_BACKENDS)
    lab.create_service("aff-sticky", {"app": "aff"}, tweak=_client_ip(10800))
    lab.create_service("aff-plain", {"app": "aff"})
    lab.create_service("aff-timeout", {"app": "aff"}, tweak=_client_ip(AFFINITY_TIMEOUT_S))
    lab.create_service("aff-np-sticky", {"app": "aff"}, "NodePort", tweak=_client_ip(10800))
    lab.create_service("aff-np-plain", {"app": "aff"}, "NodePort")
    lab.wait_ready_endpoints("aff-sticky", AFFINITY_BACKENDS)
    return ["aff-sticky", "aff-plain", "aff-timeout"]


def _from_outside(lab: Lab, cluster: ClusterHandle) -> OutsideAffinity | None:
    """OUTSIDE_REQUESTS HTTP requests from the runner to each NodePort Service through one node (this family's address),
    each backend read from the pods' logs; None when the runner has no route to the nodes."""
    node = lab.client_node
    ip = lab.node_ip(node)
    outside = cluster.outside
    if outside is None or not outside.reaches(ip):
        return None
    lab.wait_programmed_on([node], ["aff-np-sticky", "aff-np-plain"])
    pods = tuple(sorted(p["metadata"]["name"] for p in lab.kube.list("Pod", lab.ns, "app=aff")))
    served: dict[str, list[str]] = {}
    for name in ("aff-np-sticky", "aff-np-plain"):
        port = int((lab.kube.get("Service", name, lab.ns) or {})["spec"]["ports"][0]["nodePort"])
        served[name] = [token() for _ in range(OUTSIDE_REQUESTS)]
        for mark in served[name]:
            outside.http(f"http://{hp(ip, port)}/?kpr={mark}", 5.0)
    seen = lab.who_served_many(list(pods), [t for tokens in served.values() for t in tokens])
    who = {name: tuple(seen[t][0] if t in seen else None for t in tokens) for name, tokens in served.items()}
    # the node's own record of it: its affinity map's entry for the client and the sticky NodePort frontend
    entries, unread = lab.affinity_map(node)
    svcs, bes = lab.lb_ids(node)
    port = int((lab.kube.get("Service", "aff-np-sticky", lab.ns) or {})["spec"]["ports"][0]["nodePort"])
    pod_ips = {p["metadata"]["name"]: lab.pod_ip(p) for p in lab.kube.list("Pod", lab.ns, "app=aff")}
    return OutsideAffinity(node, outside.source_address(ip) or "", pods, who["aff-np-sticky"], who["aff-np-plain"],
                           None if entries is None else tuple((e.client, e.rev_nat_id, e.netns_cookie, e.backend_id) for e in entries),
                           unread, svcs.get(f"{hp(ip, port)}/TCP"),
                           {pod: bes[f"{hp(pip, WEB_TARGET)}/TCP"] for pod, pip in pod_ips.items() if f"{hp(pip, WEB_TARGET)}/TCP" in bes})


@pytest.fixture(scope="module")
def seen(aff_workloads: list[str], family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str,
         kpr_cluster: ClusterHandle) -> AffinityObservation:
    lab = family_lab
    # the client's agent serving each Service's frontend of this family (how many slots it programs is the backend-slots
    # suite's property, not a precondition here)
    agent = lab.agent(lab.client_node)
    for name in aff_workloads:
        fe = lab.frontend(name)
        eventually(lambda fe=fe: lab.service_entry(agent, fe), until=lambda s: s is not None and len(s.backends) >= 2,
                   timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {agent.node} to serve {name} with backends",
                   describe=lambda s: "absent" if s is None else f"{len(s.backends)} backends", progress=lab.progress,
                   first_after=lab.t.LB_FIRST_LOOK)
    backends = sorted(lab.endpointslice_ready("aff-sticky"))
    peers: dict[str, list[str | None]] = {}
    for name, count, interval in (("aff-sticky", AFFINITY_CONNECTIONS, 0.0), ("aff-plain", AFFINITY_CONNECTIONS, 0.0),
                                  ("aff-timeout", AFFINITY_TIMEOUT_ROUNDS, AFFINITY_IDLE_S)):
        peers[name] = lab.socket_peers(hp(lab.cluster_ip(name), WEB_PORT), count, 3.0, interval=interval)
    outside = _from_outside(lab, kpr_cluster)
    obs = AffinityObservation(kpr_family, tuple(backends), tuple(peers["aff-sticky"]), tuple(peers["aff-plain"]),
                              tuple(peers["aff-timeout"]), AFFINITY_TIMEOUT_S, AFFINITY_IDLE_S, outside)
    evidence.write(family_file("affinity.json", kpr_family), {**obs.to_json(), "problems": {
        "sticky": sticky_problems(obs), "spread": spread_problems(obs), "timeout": timeout_problems(obs),
        **({"outside_sticky": outside_sticky_problems(outside), "outside_spread": outside_spread_problems(outside),
            "affinity_map": affinity_map_problems(outside)} if outside else {})}})
    evidence.figure(kpr_property, f"ClientIP: {len({p for p in peers['aff-sticky'] if p})} backend for {AFFINITY_CONNECTIONS} connections; "
                              f"none: {len({p for p in peers['aff-plain'] if p})} of {len(backends)} backends; "
                              f"{AFFINITY_TIMEOUT_S} s timeout: {len({p for p in peers['aff-timeout'] if p})} backends in {AFFINITY_TIMEOUT_ROUNDS}"
                              + (f"; from outside: {len({p for p in outside.sticky if p})} backend for {OUTSIDE_REQUESTS} requests"
                                 if outside else ""),
                    kpr_family)
    return obs


def test_a_client_stays_on_one_backend_with_session_affinity(seen: AffinityObservation) -> None:
    holds(sticky_problems(seen), "affinity (sessionAffinity ClientIP)")


def test_without_affinity_connections_spread_over_the_backends(seen: AffinityObservation) -> None:
    holds(spread_problems(seen), "affinity (none)")


def test_the_affinity_expires_after_its_timeout(seen: AffinityObservation) -> None:
    holds(timeout_problems(seen), f"affinity (timeoutSeconds {seen.timeout_s})")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_client_from_outside_stays_on_one_backend_with_session_affinity(seen: AffinityObservation) -> None:
    """Per packet, through a NodePort: the node keys the affinity by the client's address (SRC_AFFINITY_OUTSIDE)."""
    if seen.outside is None:
        no_outside_view("the test runner has no route to the nodes")
    holds(outside_sticky_problems(seen.outside), "affinity from outside (NodePort, sessionAffinity ClientIP)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_the_nodes_affinity_map_holds_the_clients_entry(seen: AffinityObservation) -> None:
    """The node keeps the pick in its per-packet affinity map (``bpftool map dump``, SRC_AFFINITY_MAP): an entry keyed by the
    runner's address and the NodePort frontend's rev NAT ID, naming the backend that served every request."""
    if seen.outside is None:
        no_outside_view("the test runner has no route to the nodes")
    holds(affinity_map_problems(seen.outside), "affinity from outside (the node's affinity map)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_from_outside_without_affinity_requests_spread_over_the_backends(seen: AffinityObservation) -> None:
    if seen.outside is None:
        no_outside_view("the test runner has no route to the nodes")
    holds(outside_spread_problems(seen.outside), "affinity from outside (NodePort, none)")
