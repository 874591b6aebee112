"""The fault rows of the trafficDistribution property: each of its faults (pytest_kpr.testing, property='trafficDistribution')
and what it must fail (tests/test_faults.py runs them; its docstring says what a row is). The suite runs only with service
topology on (the topology profile), so each row's fake has it."""

from __future__ import annotations

TD = "test_traffic_distribution.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("topology-ignored", ("traffic_distribution",), "service_topology=True, faults=Faults(topology_ignored=True)",
     {TD + "test_prefer_same_node_keeps_a_client_on_its_nodes_backend", TD + "test_prefer_close_keeps_a_client_in_its_zone"},
     ["*trafficDistribution (PreferSameNode): * of 20 connections from fake-worker to td-same-node (PreferSameNode) left the node: "
      "reached td-far x*, td-near x*",
      "*trafficDistribution (PreferClose): * of 20 connections from zone-a to td-close (PreferClose) left the zone: reached td-far x*"]),
    ("zone-hints-ignored", ("traffic_distribution",), "service_topology=True, faults=Faults(zone_hints_ignored=True)",
     {TD + "test_prefer_close_keeps_a_client_in_its_zone"},
     ["*trafficDistribution (PreferClose): * of 20 connections from zone-a to td-close (PreferClose) left the zone*"]),
    ("same-node-no-fallback", ("traffic_distribution",), "service_topology=True, faults=Faults(same_node_no_fallback=True)",
     {TD + "test_prefer_same_node_without_a_local_backend_reaches_every_backend"},
     ["*trafficDistribution (PreferSameNode, no local backend): 20 of 20 connections to td-away did not connect*"]),
    ("ipv6-topology-ignored", ("traffic_distribution",), "ip_families=('IPv4', 'IPv6'), service_topology=True, faults=Faults(topology_ignored=True)",
     {TD + "test_prefer_same_node_keeps_a_client_on_its_nodes_backend[IPv4]", TD + "test_prefer_close_keeps_a_client_in_its_zone[IPv4]",
      TD + "test_prefer_same_node_keeps_a_client_on_its_nodes_backend[IPv6]", TD + "test_prefer_close_keeps_a_client_in_its_zone[IPv6]"},
     ["*trafficDistribution (PreferSameNode): * of 20 connections from fake-worker to td-same-node (PreferSameNode) left the node*"]),
]
