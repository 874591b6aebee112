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
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from pytest_kpr.judge import holds
from pytest_kpr.judge.maglev import (
    MAGLEV_FLOWS,
    maglev_flow_problems,
    maglev_remap_problems,
    maglev_scope_problems,
    maglev_seed_problems,
    maglev_table,
    maglev_table_problems,
)
from pytest_kpr.cluster.facts import ClusterFacts
from pytest_kpr.cluster.provider import ClusterHandle
from pytest_kpr.rules.datapath import MAGLEV_DEFAULT_SEED, MAGLEV_SEED_FILE
from pytest_kpr.evidence import Evidence
from pytest_kpr.observe.lab import WEB_PORT, Lab
from pytest_kpr.plugin.outcomes import no_outside_view
from pytest_kpr.core.wait import eventually

pytestmark = [
    pytest.mark.kpr(property="Maglev", evidence="maglev.json",
                    plane="per-packet",
                    sources=["SRC_MAGLEV_HASH", "SRC_MAGLEV_SCOPE", "SRC_MAGLEV_SEED", "SRC_MAGLEV_REMAP", "SRC_MAGLEV_DUMP"]),
    pytest.mark.kpr_requires("nodeport", "lb-statedb"),
]
BACKENDS = 4
FIRST_PORT = 42000


def _flows(lab: Lab, outside: Any, node: str, port: int, round_: str) -> dict[int, str]:
    """One HTTP GET per flow (source port) to ``node``'s NodePort; source port -> token."""
    ip, salt = lab.node_ip(node), secrets.token_hex(3)
    tokens = {}
    for i in range(MAGLEV_FLOWS):
        sport = FIRST_PORT + i
        tokens[sport] = f"{round_}{i}x{salt}"
        outside.http(f"http://{ip}:{port}/?kpr={tokens[sport]}", 3.0, source_port=sport)
    return tokens


def _served(lab: Lab, pods: list[str], tokens: dict[int, str]) -> dict[int, str | None]:
    seen = lab.who_served_many(pods, list(tokens.values()))
    return {sport: (seen[t][0] if t in seen else None) for sport, t in tokens.items()}


def _wait_backends(lab: Lab, n: int) -> None:
    fe = lab.frontend("mag")
    for i, node in enumerate(x.name for x in lab.facts.nodes):
        agent = lab.agent(node)
        eventually(lambda agent=agent: lab.service_entry(agent, fe), until=lambda s: s is not None and len(s.backends) == n,
                   timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {node} to serve mag with {n} backends",
                   describe=lambda s: "absent" if s is None else f"{len(s.backends)} backends", progress=lab.progress,
                   first_after=lab.t.LB_FIRST_LOOK if i == 0 else 0.0)


@pytest.fixture(scope="module")
def maglev(lab: Lab, evidence: Evidence, kpr_property: str, kpr_facts: ClusterFacts, kpr_cluster: ClusterHandle) -> dict[str, Any]:
    if kpr_facts.lb_algorithm.lower() != "maglev":
        pytest.skip(f"the agent reports backend selection {kpr_facts.lb_algorithm or 'unknown'}, not Maglev (profile maglev sets it)")
    workers = [n.name for n in kpr_facts.workers]
    pods = [f"mag-{i}" for i in range(BACKENDS)]
    for i, name in enumerate(pods):
        lab.create_web_pod(name, {"app": "mag"}, workers[i % len(workers)])
    lab.create_service("mag", {"app": "mag"}, "NodePort")
    lab.wait_ready_endpoints("mag", BACKENDS)
    _wait_backends(lab, BACKENDS)
    port = lab.allocated_node_port("mag")
    cluster_ip = lab.cluster_ip("mag")
    backends = sorted(lab.endpointslice_ready("mag"))
    nodes = [n.name for n in kpr_facts.nodes]
    seeds: dict[str, str | None] = {}
    tables: dict[str, dict[str, int] | None] = {}
    cluster_ip_tables: dict[str, bool] = {}
    for node in nodes:
        agent = lab.agent(node)
        r = agent.exec(["cat", MAGLEV_SEED_FILE])
        seeds[node] = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None
        (dump,) = agent.read("maps_dump")
        tables[node] = maglev_table(dump, f"{lab.node_ip(node)}:{port}/TCP")
        cluster_ip_tables[node] = maglev_table(dump, f"{cluster_ip}:{WEB_PORT}/TCP") is not None
    data: dict[str, Any] = {"node_port": port, "backends": backends, "seeds": seeds, "tables": tables,
                            "cluster_ip_tables": cluster_ip_tables, "flows": None, "remap": None}
    outside = kpr_cluster.outside
    if outside is not None and all(outside.reaches(lab.node_ip(n)) for n in nodes[:2]) and len(nodes) >= 2:
        through = {node: _served(lab, pods, _flows(lab, outside, node, port, f"r{k}")) for k, node in enumerate(nodes[:2])}
        data["flows"] = {node: {str(p): b for p, b in f.items()} for node, f in through.items()}
        if len(nodes) >= 3 and outside.reaches(lab.node_ip(nodes[2])):
            before = through[nodes[0]]
            counts = {p: sum(1 for b in before.values() if b == p) for p in pods}
            removed = max(pods, key=lambda p: (counts[p], p))
            lab.kube.delete("Pod", removed, lab.ns)
            lab.wait_ready_endpoints("mag", BACKENDS - 1)  # the removed pod gone from mag's endpoints
            _wait_backends(lab, BACKENDS - 1)
            after = _served(lab, [p for p in pods if p != removed], _flows(lab, outside, nodes[2], port, "after"))
            data["remap"] = {"removed": removed, "through": nodes[2], "before": {str(p): b for p, b in before.items()},
                             "after": {str(p): b for p, b in after.items()}}
    evidence.write("maglev.json", data)
    moved = "no outside view"
    if data["remap"]:
        r = data["remap"]
        own = sum(1 for b in r["before"].values() if b == r["removed"])
        others = sum(1 for p, b in r["before"].items() if b != r["removed"] and r["after"].get(p) != b)
        moved = f"removing {r['removed']} moved its {own} flows and {others} of the other {MAGLEV_FLOWS - own}"
    evidence.figure(kpr_property, f"{len({s or MAGLEV_DEFAULT_SEED for s in seeds.values()})} seed on {len(nodes)} agents; {moved}")
    return {**data, "through": data["flows"], "pods": pods}


def test_every_agent_uses_the_same_hash_seed(maglev: dict[str, Any]) -> None:
    problems = maglev_seed_problems(maglev["seeds"], MAGLEV_DEFAULT_SEED)
    holds(problems, f"Maglev ({MAGLEV_SEED_FILE})")


def test_every_agent_has_a_balanced_table_over_the_backends(maglev: dict[str, Any]) -> None:
    problems = maglev_table_problems(maglev["tables"], maglev["backends"])
    holds(problems, "Maglev (lb/maps-dump tables)")


def test_cluster_ip_traffic_is_not_maglevd(maglev: dict[str, Any]) -> None:
    problems = maglev_scope_problems(maglev["cluster_ip_tables"])
    holds(problems, "Maglev (ClusterIP)")


def test_a_flow_reaches_the_same_backend_through_every_node(maglev: dict[str, Any]) -> None:
    if maglev["flows"] is None and len(maglev["tables"]) < 2:
        pytest.skip("needs two nodes to send the same flow through")
    if maglev["flows"] is None:
        no_outside_view("the test runner has no specific route to the nodes; flows from outside need one")
    through = {node: {int(p): b for p, b in f.items()} for node, f in maglev["flows"].items()}
    problems = maglev_flow_problems(through)
    holds(problems, "Maglev (the same flow through different nodes)")


def test_removing_a_backend_moves_only_its_flows(maglev: dict[str, Any]) -> None:
    r = maglev["remap"]
    if r is None:
        pytest.skip("needs three nodes the runner reaches (two for the flows, a third after the removal)")
    before = {int(p): b for p, b in r["before"].items()}
    after = {int(p): b for p, b in r["after"].items()}
    problems = maglev_remap_problems(before, after, r["removed"], len(maglev["pods"]))
    holds(problems, f"Maglev (after deleting {r['removed']}, flows sent through {r['through']})")
