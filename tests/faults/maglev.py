"""The fault rows of the Maglev property: each of its faults (pytest_kpr.testing, property='Maglev') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

MAG = "test_maglev.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("maglev-ignored", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_ignored=True)",
     {MAG + "test_a_flow_reaches_the_same_backend_through_every_node", MAG + "test_removing_a_backend_moves_only_its_flows"},
     ["*Maglev (the same IPv4 flow through different nodes): * of 24 flows did not reach one backend through fake-control-plane and fake-worker*",
      "*Maglev (after deleting mag-*, IPv4 flows sent through fake-worker2): * of * flows on the surviving backends moved (*; allowed 1)*"]),
    ("maglev-seed-per-node", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_seed_per_node=True)",
     {MAG + "test_every_agent_uses_the_same_hash_seed", MAG + "test_a_flow_reaches_the_same_backend_through_every_node",
      MAG + "test_removing_a_backend_moves_only_its_flows"},
     ["*Maglev (/tmp/cilium/config-map/bpf-lb-maglev-hash-seed): the agents use 3 different hash seeds: *"]),
    ("maglev-no-table", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_no_table=True)",
     {MAG + "test_every_agent_has_a_balanced_table_over_the_backends", MAG + "test_a_flow_reaches_the_same_backend_through_every_node",
      MAG + "test_removing_a_backend_moves_only_its_flows"},
     ["*Maglev (lb/maps-dump tables, IPv4): fake-control-plane has no Maglev table for its NodePort frontend*"]),
    ("maglev-cluster-ip", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_cluster_ip=True)", {MAG + "test_cluster_ip_traffic_is_not_maglevd"},
     ["*Maglev (ClusterIP, IPv4): the ClusterIP frontend has a Maglev table on fake-control-plane, fake-worker, fake-worker2*"]),
    ("ipv6-maglev-no-table", ("maglev",), "ip_families=('IPv4', 'IPv6'), lb_algorithm='Maglev', faults=Faults(maglev_no_table='IPv6')",
     {MAG + "test_every_agent_has_a_balanced_table_over_the_backends[IPv6]", MAG + "test_a_flow_reaches_the_same_backend_through_every_node[IPv6]",
      MAG + "test_removing_a_backend_moves_only_its_flows[IPv6]"},
     ["*Maglev (lb/maps-dump tables, IPv6): fake-control-plane has no Maglev table for its NodePort frontend*",
      "*Maglev (the same IPv6 flow through different nodes): * of 24 flows did not reach one backend through fake-control-plane and fake-worker*"]),
]
