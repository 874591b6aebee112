"""Maglev: consistent backend selection for traffic from outside, the same on every node.

Four backend pods (``mag-0`` .. ``mag-3``, on the workers) behind the NodePort Service ``mag``. With
loadBalancer.algorithm=maglev the agents build one lookup table per frontend that is reachable from outside, indexed by
a hash of the client's address, ports and protocol and never the destination, so the same flow sent to any node's
NodePort reaches the same backend (cilium/cilium bpf/lib/hash.h, bpf/lib/lb.h; pytest_kpr.rules.datapath MAGLEV_RULES).
Checked: every agent resolves the same hash seed (/tmp/cilium/config-map, written by ``cilium-dbg build-config``); every
agent has a table for its NodePort frontend over exactly the backends, balanced (``lb/maps-dump`` MAGLEV lines, backend
IDs translated to addresses; the dump shows slot counts, not the slots); the ClusterIP frontend has no table (in-cluster traffic is picked by socket LB); 24 flows from the runner
(fixed source ports, HTTP, the backend named by its log) reach the same backend through two nodes; after one backend
is deleted the flows on the others stay (at most 10% move; a random pick would move about 2/3), sent through a third
node so that no conntrack entry of the first rounds answers for Maglev. Runs only where the agent reports Maglev (the
profile ``maglev``). Evidence: maglev.json.

Each family's frontends have their own tables (the lb6 Maglev map for IPv6) and an IPv6 flow is hashed the same way,
over its source and never its destination (datapath.SRC_MAGLEV_FAMILY). The scenario deletes a backend, so it runs once
and observes every family of --kpr-ip-families inside it: the tables of each family's NodePort and ClusterIP frontends,
the flows to each family's node addresses, and after the one deletion the flows of each family again; the tests other
than the seed's are judged per family (evidence ``maglev-ipv6.json``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import (ClusterFacts, ClusterHandle, eventually, Evidence, family_file, holds, hp, Lab,
                              no_outside_view, WEB_PORT, token)
from pytest_kpr.judge.maglev import (
    MAGLEV_FLOWS,
    maglev_flow_problems,
    maglev_remap_problems,
    maglev_scope_problems,
    maglev_seed_problems,
    maglev_table,
    maglev_table_problems,
)
from pytest_kpr.judge.maglev import MaglevObservation, MaglevRemap
from pytest_kpr.rules.datapath import MAGLEV_DEFAULT_SEED, MAGLEV_SEED_FILE

pytestmark = [
    pytest.mark.kpr(property="Maglev", evidence="maglev.json",
                    plane="per-packet",
                    sources=["SRC_MAGLEV_HASH", "SRC_MAGLEV_SCOPE", "SRC_MAGLEV_SEED", "SRC_MAGLEV_REMAP", "SRC_MAGLEV_DUMP",
                             "SRC_MAGLEV_FAMILY"]),
    pytest.mark.kpr_requires("nodeport", "lb-statedb"),
]
BACKENDS = 4
FIRST_PORT = 42000


def _flows(lab: Lab, outside: Any, node: str, port: int, round_: str) -> dict[int, str]:
    """One HTTP GET per flow (source port) to ``node``'s NodePort (on the view's family's address); source port -> token."""
    ip, salt = lab.node_ip(node), token(3)
    tokens = {}
    for i in range(MAGLEV_FLOWS):
        sport = FIRST_PORT + i
        tokens[sport] = f"{round_}{i}x{salt}"
        outside.http(f"http://{hp(ip, port)}/?kpr={tokens[sport]}", 3.0, source_port=sport)
    return tokens


def _served(lab: Lab, pods: list[str], tokens: dict[int, str]) -> dict[int, str | None]:
    seen = lab.who_served_many(pods, list(tokens.values()))
    return {sport: (seen[t][0] if t in seen else None) for sport, t in tokens.items()}


def _wait_backends(lab: Lab, n: int) -> None:
    """Until every agent serves the view's family's frontend of mag with ``n`` backends."""
    fe = lab.frontend("mag")
    for i, node in enumerate(x.name for x in lab.facts.nodes):
        agent = lab.agent(node)
        eventually(lambda agent=agent: lab.service_entry(agent, fe), until=lambda s: s is not None and len(s.backends) == n,
                   timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {node} to serve mag ({fe.ip}) with {n} backends",
                   describe=lambda s: "absent" if s is None else f"{len(s.backends)} backends", progress=lab.progress,
                   first_after=lab.t.LB_FIRST_LOOK if i == 0 else 0.0)


@pytest.fixture(scope="module")
def maglev(lab: Lab, evidence: Evidence, kpr_property: str, kpr_facts: ClusterFacts, kpr_cluster: ClusterHandle,
           family_views: dict[str, Lab]) -> dict[str, MaglevObservation]:
    """The scenario, run once (it deletes a backend, so it cannot run per family): family -> what was seen in it."""
    if kpr_facts.lb_algorithm.lower() != "maglev":
        pytest.skip(f"the agent reports backend selection {kpr_facts.lb_algorithm or 'unknown'}, not Maglev (profile maglev sets it)")
    views = family_views
    workers = [n.name for n in kpr_facts.workers]
    pods = [f"mag-{i}" for i in range(BACKENDS)]
    for i, name in enumerate(pods):
        lab.create_web_pod(name, {"app": "mag"}, workers[i % len(workers)])
    lab.create_service("mag", {"app": "mag"}, "NodePort")
    lab.wait_ready_endpoints("mag", BACKENDS)
    for v in views.values():
        _wait_backends(v, BACKENDS)
    port = lab.allocated_node_port("mag")
    nodes = [n.name for n in kpr_facts.nodes]
    seeds: dict[str, str | None] = {}
    dumps = {}
    for node in nodes:
        agent = lab.agent(node)
        r = agent.exec(["cat", MAGLEV_SEED_FILE])
        seeds[node] = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None
        (dumps[node],) = agent.read("maps_dump")
    # each family's frontends have their own tables (datapath.SRC_MAGLEV_FAMILY)
    tables = {f: {n: maglev_table(dumps[n], f"{hp(v.node_ip(n), port)}/TCP") for n in nodes} for f, v in views.items()}
    cluster_ip_tables = {f: {n: maglev_table(dumps[n], f"{hp(v.cluster_ip('mag'), WEB_PORT)}/TCP") is not None for n in nodes}
                         for f, v in views.items()}
    backends = {f: tuple(sorted(v.endpointslice_ready("mag"))) for f, v in views.items()}
    outside = kpr_cluster.outside

    def reached(v: Lab, some: list[str]) -> bool:
        return outside is not None and all(outside.reaches(v.node_ip(n)) for n in some)

    flowing = [f for f, v in views.items() if len(nodes) >= 2 and reached(v, nodes[:2])]
    flows: dict[str, dict[str, dict[int, str | None]]] = {}
    for f in flowing:
        flows[f] = {node: _served(views[f], pods, _flows(views[f], outside, node, port, f"r{k}")) for k, node in enumerate(nodes[:2])}
    remaps: dict[str, MaglevRemap] = {}
    remapping = [f for f in flowing if len(nodes) >= 3 and reached(views[f], nodes[2:3])]
    if remapping:
        # the backend with the most of the first family's flows; deleted once, the flows of every family then sent again
        before = {f: dict(flows[f][nodes[0]]) for f in remapping}
        counts = {p: sum(1 for b in before[remapping[0]].values() if b == p) for p in pods}
        removed = max(pods, key=lambda p: (counts[p], p))
        lab.kube.delete("Pod", removed, lab.ns)
        lab.wait_ready_endpoints("mag", BACKENDS - 1)  # the removed pod gone from mag's endpoints
        for v in views.values():
            _wait_backends(v, BACKENDS - 1)
        for f in remapping:
            after = _served(views[f], [p for p in pods if p != removed], _flows(views[f], outside, nodes[2], port, "after"))
            remaps[f] = MaglevRemap(removed, nodes[2], before[f], after)
    out: dict[str, MaglevObservation] = {}
    for f in views:
        m = MaglevObservation(f, port, backends[f], tuple(pods), seeds, tables[f], cluster_ip_tables[f], flows.get(f), remaps.get(f))
        evidence.write(family_file("maglev.json", f), m.to_json())
        moved = "no outside view"
        if m.remap:
            r = m.remap
            own = sum(1 for b in r.before.values() if b == r.removed)
            others = sum(1 for p, b in r.before.items() if b != r.removed and r.after.get(p) != b)
            moved = f"removing {r.removed} moved its {own} flows and {others} of the other {MAGLEV_FLOWS - own}"
        evidence.figure(kpr_property, f"{len({s or MAGLEV_DEFAULT_SEED for s in seeds.values()})} seed on {len(nodes)} agents; {moved}", f)
        out[f] = m
    return out


@pytest.fixture(scope="module")
def maglev_family(maglev: dict[str, MaglevObservation], kpr_family: str) -> MaglevObservation:
    """What the scenario saw in this test's family."""
    return maglev[kpr_family]


def test_every_agent_uses_the_same_hash_seed(maglev: dict[str, MaglevObservation]) -> None:
    problems = maglev_seed_problems(next(iter(maglev.values())).seeds, MAGLEV_DEFAULT_SEED)  # one seed for every family
    holds(problems, f"Maglev ({MAGLEV_SEED_FILE})")


def test_every_agent_has_a_balanced_table_over_the_backends(maglev_family: MaglevObservation) -> None:
    problems = maglev_table_problems(maglev_family.tables, list(maglev_family.backends))
    holds(problems, f"Maglev (lb/maps-dump tables, {maglev_family.family})")


def test_cluster_ip_traffic_is_not_maglevd(maglev_family: MaglevObservation) -> None:
    problems = maglev_scope_problems(maglev_family.cluster_ip_tables)
    holds(problems, f"Maglev (ClusterIP, {maglev_family.family})")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_flow_reaches_the_same_backend_through_every_node(maglev_family: MaglevObservation) -> None:
    if maglev_family.flows is None and len(maglev_family.tables) < 2:
        pytest.skip("needs two nodes to send the same flow through")
    if maglev_family.flows is None:
        no_outside_view("the test runner has no specific route to the nodes; flows from outside need one")
    through = {node: dict(f) for node, f in maglev_family.flows.items()}
    problems = maglev_flow_problems(through)
    holds(problems, f"Maglev (the same {maglev_family.family} flow through different nodes)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_removing_a_backend_moves_only_its_flows(maglev_family: MaglevObservation) -> None:
    r = maglev_family.remap
    if r is None:
        pytest.skip("needs three nodes the runner reaches (two for the flows, a third after the removal)")
    problems = maglev_remap_problems(dict(r.before), dict(r.after), r.removed, len(maglev_family.pods))
    holds(problems, f"Maglev (after deleting {r.removed}, {maglev_family.family} flows sent through {r.through})")
