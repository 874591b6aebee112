"""trafficDistribution: with service topology on (the ``topology`` profile, Helm loadBalancer.serviceTopology), a client
pod on a node with a backend of a ``PreferSameNode`` Service only ever reaches that backend; on a node without one it
reaches all; and with ``PreferClose`` it stays in its zone.

Three Services in the suite's namespace: ``td-same-node`` (PreferSameNode) and ``td-close`` (PreferClose) over two
backends, one on the client node and one on another worker (a node of another zone on kind: clusters/kind/*.yaml label
the first worker zone-a, the second zone-b); ``td-away`` (PreferSameNode) over two backends on that other worker. The
probe pod on the client node makes 20 connections to each (``kpr probe connect --count 20``); each connection's backend is
the kernel socket's peer, which socket LB sets at connect(). The agent selects a frontend's backends by the Service's
trafficDistribution (rules.datapath.SRC_PREFER_SAME_NODE, SRC_PREFER_CLOSE; PreferClose through the EndpointSlice
controller's zone hints). Needs the agents' enable-service-topology (read back from their config map; skipped with the
reason when off, as in every profile but ``topology``) and socket LB in pod namespaces. PreferSameNode is honoured from Cilium
1.20 (SRC_PREFER_SAME_SINCE: cilium/cilium#44771); on 1.18 and 1.19 its two tests skip with that reason and the evidence
still shows where the connections went. Evidence: traffic-distribution.json, per family of --kpr-ip-families.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import ClusterFacts, Evidence, family_file, holds, hp, Lab, WEB_PORT, WEB_TARGET
from pytest_kpr.judge.traffic_distribution import fallback_problems, same_node_problems, zone_problems
from pytest_kpr.judge.traffic_distribution import Placed, Reached, TopologyObservation
from pytest_kpr.rules.datapath import ZONE_LABEL, prefer_same_honoured

pytestmark = [
    pytest.mark.kpr(property="trafficDistribution", evidence="traffic-distribution.json", plane="socket",
                    sources=["SRC_TOPOLOGY_ENABLE", "SRC_PREFER_SAME_NODE", "SRC_PREFER_SAME_SINCE", "SRC_PREFER_CLOSE",
                             "SRC_PREFER_CLOSE_FALLBACK"]),
    pytest.mark.kpr_requires("socket-lb-pods"),
]
CONNECTIONS = 20
SERVICES = {"td-same-node": ("PreferSameNode", "td-pair"), "td-close": ("PreferClose", "td-pair"), "td-away": ("PreferSameNode", "td-away")}


def _distribution(value: str) -> Any:
    return lambda svc: svc["spec"].update(trafficDistribution=value)


@pytest.fixture(scope="module")
def td_workloads(lab: Lab, probe: Lab, kpr_facts: ClusterFacts) -> str:
    """The backends and the three Services, created once for every family; the other worker's name."""
    if not kpr_facts.service_topology:
        pytest.skip("the agents do not honour trafficDistribution: enable-service-topology is off (Helm loadBalancer.serviceTopology; "
                    "--kpr-profile=topology)")
    other = lab.remote_node()
    lab.create_web_pod("td-near", {"tier": "td-pair"}, lab.client_node)
    lab.create_web_pod("td-far", {"tier": "td-pair"}, other)
    lab.create_web_pod("td-away-1", {"tier": "td-away"}, other)
    lab.create_web_pod("td-away-2", {"tier": "td-away"}, other)
    for name, (dist, tier) in SERVICES.items():
        lab.create_service(name, {"tier": tier}, tweak=_distribution(dist))
    lab.wait_ready_endpoints("td-same-node", 2)
    lab.wait_ready_endpoints("td-away", 2)
    return other


def _zone(lab: Lab, node: str) -> str | None:
    return (((lab.kube.get("Node", node) or {}).get("metadata") or {}).get("labels") or {}).get(ZONE_LABEL)


@pytest.fixture(scope="module")
def seen(td_workloads: str, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str,
         kpr_facts: ClusterFacts) -> TopologyObservation:
    lab = family_lab
    client = lab.client_node
    lab.wait_programmed_on([client], list(SERVICES))
    reached: dict[str, Reached] = {}
    for name, (dist, tier) in SERVICES.items():
        pods = lab.kube.list("Pod", lab.ns, f"tier={tier}")
        backends = {hp(lab.pod_ip(p), WEB_TARGET): Placed(p["metadata"]["name"], p["spec"]["nodeName"], _zone(lab, p["spec"]["nodeName"]))
                    for p in pods}
        peers = lab.socket_peers(hp(lab.cluster_ip(name), WEB_PORT), CONNECTIONS, 3.0)
        reached[name] = Reached(name, dist, backends, tuple(peers))
    obs = TopologyObservation(kpr_family, client, _zone(lab, client), reached["td-same-node"], reached["td-away"], reached["td-close"])
    evidence.write(family_file("traffic-distribution.json", kpr_family), {**obs.to_json(), "problems": {
        "same_node": same_node_problems(obs.same_node, client), "fallback": fallback_problems(obs.away, client),
        "close": zone_problems(obs.close, obs.client_zone)}})
    near = sum(1 for p in obs.same_node.peers if p in obs.same_node.backends and obs.same_node.backends[p].node == client)
    judged = "" if prefer_same_honoured(kpr_facts.cilium_version) else f" (not judged on {kpr_facts.cilium_version}: from 1.20)"
    evidence.figure(kpr_property, f"PreferSameNode: {near} of {CONNECTIONS} on the client's node; without a local backend "
                                  f"{len({p for p in obs.away.peers if p})} of {len(obs.away.backends)} backends{judged}; PreferClose: "
                                  f"{sum(1 for p in obs.close.peers if p in obs.close.backends and obs.close.backends[p].zone == obs.client_zone)} "
                                  f"of {CONNECTIONS} in {obs.client_zone}", kpr_family)
    return obs


#: PreferSameNode is honoured from Cilium 1.20 (SRC_PREFER_SAME_SINCE): before, the Service spreads over every backend
PREFER_SAME_NODE = pytest.mark.kpr_requires(cilium="1.20")


@PREFER_SAME_NODE
def test_prefer_same_node_keeps_a_client_on_its_nodes_backend(seen: TopologyObservation) -> None:
    holds(same_node_problems(seen.same_node, seen.client_node), "trafficDistribution (PreferSameNode)")


@PREFER_SAME_NODE
def test_prefer_same_node_without_a_local_backend_reaches_every_backend(seen: TopologyObservation) -> None:
    holds(fallback_problems(seen.away, seen.client_node), "trafficDistribution (PreferSameNode, no local backend)")


def test_prefer_close_keeps_a_client_in_its_zone(seen: TopologyObservation) -> None:
    if seen.client_zone is None:
        pytest.skip(f"the client node {seen.client_node} has no {ZONE_LABEL} label: no zone to prefer")
    holds(zone_problems(seen.close, seen.client_zone), "trafficDistribution (PreferClose)")
