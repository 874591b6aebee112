"""The fault rows of the iTP=Local property: each of its faults (pytest_kpr.testing, property='iTP=Local') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

ITP = "test_itp.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("itp-local-ignored", ("itp",), "faults=Faults(itp_local_ignored=True)",
     {ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): "
      "another node's backend, as if internalTrafficPolicy were Cluster*",
      "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; "
      "socket plane, ServiceNoBackendResponse=reject): connect() gave connected after *; expected unreachable at once*"]),
    # from 1.19 internalTrafficPolicy is always honoured: a leftover enable-internal-traffic-policy=false does not make the
    # suite skip, so an agent that ignores the policy fails it (datapath.SRC_ITP_ALWAYS)
    ("itp-ignored-beside-a-leftover-option", ("itp",), "enable_internal_traffic_policy='false', faults=Faults(itp_local_ignored=True)",
     {ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): "
      "another node's backend, as if internalTrafficPolicy were Cluster*"]),
    ("itp-no-local-drops", ("itp",), "faults=Faults(itp_no_local_drops=True)",
     {ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; "
      "socket plane, ServiceNoBackendResponse=reject): connect() gave timeout after 2.00s; expected unreachable at once (under 1s)*"]),
    ("itp-narrows-external", ("itp",), "faults=Faults(itp_narrows_external=True)", {ITP + "test_traffic_from_outside_is_unaffected"},
     ["*iTP=Local (from outside): a raw SYN from outside to 172.18.0.3:*, which has no local backend, got icmp-unreachable; "
      "internalTrafficPolicy must not apply to traffic from outside (externalTrafficPolicy Cluster: the backend on fake-worker2 serves it)*"]),
    ("ipv6-itp-local-ignored", ("itp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(itp_local_ignored='IPv6')",
     {ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node[IPv6]",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer[IPv6]"},
     ["*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): another node's "
      "backend, as if internalTrafficPolicy were Cluster*",
      "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to [[]fd00:10:96::*]:80, whose only backend is on fake-worker2*"
      "connect() gave connected*"]),
]
