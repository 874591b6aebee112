"""The fault rows of the eTP=Local property: each of its faults (pytest_kpr.testing, property='eTP=Local') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

ETP = "test_etp.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("etp-local-ignored", ("etp",), "faults=Faults(etp_local_ignored=True)", {ETP + "test_only_the_node_with_a_local_backend_serves_it_from_outside"},
     ["*eTP=Local (from outside): fake-control-plane, which has no local backend, served it from outside (accepted)*"]),
    ("etp-snat", ("etp",), "faults=Faults(etp_snat=True)", {ETP + "test_the_backend_sees_the_clients_own_address"},
     ["*eTP=Local (client address): the backend saw 172.18.0.4 (the receiving node's InternalIP), expected 172.18.0.1 (the client*"]),
    ("etp-breaks-cluster-ip", ("etp",), "faults=Faults(etp_breaks_cluster_ip=True)", {ETP + "test_in_cluster_cluster_ip_access_is_unaffected"},
     ["*eTP=Local (ClusterIP from a pod on fake-worker, which has no local backend): unreachable*"]),
    ("healthcheck-cluster-count", ("etp",), "faults=Faults(healthcheck_cluster_count=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints"},
     ["*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP 200 with localEndpoints 1, expected 503 with 0 (its own backends' addresses and ports)*"]),
    ("ipv6-health-server-not-listening", ("etp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(healthserver_v4_only=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]"},
     ["*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP nothing with localEndpoints None, expected 503 with 0*"
      "fake-worker2 answered HTTP nothing with localEndpoints None, expected 200 with 2 (its own backends' addresses and ports)*"]),
    # a dual-stack pod is one backend per address: the health server counts both (datapath.SRC_HEALTHSERVER)
    ("health-count-one-family", ("etp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(healthcheck_one_family=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv4]",
      ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]"},
     ["*eTP=Local (health-check NodePort *): fake-worker2 answered HTTP 200 with localEndpoints 1, expected 200 with 2 "
      "(its own backends' addresses and ports)*"]),
]
