"""The fault rows of the eTP=Local property: each of its faults (pytest_kpr.testing, property='eTP=Local') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

ETP = "test_etp.py::"
NS = "test_north_south.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    # the VIP of an eTP=Local Service keeps every backend too (the north-south suite's Local VIP)
    ("etp-local-ignored", ("etp", "north_south"), "faults=Faults(etp_local_ignored=True)",
     {ETP + "test_only_the_node_with_a_local_backend_serves_it_from_outside", NS + "test_etp_local_on_a_vip_is_served_only_where_the_backend_is"},
     ["*eTP=Local (from outside): fake-control-plane, which has no local backend, served it from outside (accepted)*"]),
    ("etp-snat", ("etp", "north_south"), "faults=Faults(etp_snat=True)",
     {ETP + "test_the_backend_sees_the_clients_own_address", NS + "test_etp_local_on_a_vip_is_served_only_where_the_backend_is"},
     ["*eTP=Local (client address): the backend saw 172.18.0.4 (the receiving node's InternalIP), expected 172.18.0.1 (the client*"]),
    ("etp-breaks-cluster-ip", ("etp",), "faults=Faults(etp_breaks_cluster_ip=True)", {ETP + "test_in_cluster_cluster_ip_access_is_unaffected"},
     ["*eTP=Local (ClusterIP from a pod on fake-worker, which has no local backend): unreachable*"]),
    # the VIP's health frontend is answered by the same health server
    ("healthcheck-cluster-count", ("etp", "north_south"), "faults=Faults(healthcheck_cluster_count=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints", NS + "test_the_vip_health_frontend_says_which_nodes_have_a_backend"},
     ["*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP 200 with localEndpoints 1, expected 503 with 0 (its own backends' addresses and ports)*"]),
    ("ipv6-health-server-not-listening", ("etp", "north_south"), "ip_families=('IPv4', 'IPv6'), faults=Faults(healthserver_v4_only=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]",
      NS + "test_the_vip_health_frontend_says_which_nodes_have_a_backend[IPv6]"},
     ["*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP nothing with localEndpoints None, expected 503 with 0*"
      "fake-worker2 answered HTTP nothing with localEndpoints None, expected 200 with 2 (its own backends' addresses and ports)*"]),
    # a dual-stack pod is one backend per address: the health server counts both (datapath.SRC_HEALTHSERVER)
    ("health-count-one-family", ("etp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(healthcheck_one_family=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv4]",
      ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]"},
     ["*eTP=Local (health-check NodePort *): fake-worker2 answered HTTP 200 with localEndpoints 1, expected 200 with 2 "
      "(its own backends' addresses and ports)*"]),
]
