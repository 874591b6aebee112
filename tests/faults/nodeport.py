"""The fault rows of the NodePort property: each of its faults (pytest_kpr.testing, property='NodePort') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

NB = "test_no_backend.py::"
NP = "test_nodeport.py::"
ETP = "test_etp.py::"
DSR = "test_dsr.py::"
AFF = "test_affinity.py::"
ITP = "test_itp.py::"
SR = "test_source_ranges.py::"
IE = "test_icmp_errors.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("listener-on-the-nodeport", ("nodeport",), "faults=Faults(nodeport_listener=True)",
     {NP + "test_nobody_listens_on_the_nodeport"},
     ["*NodePort: 1 sockets listen on :30780 on the node ([[]'0.0.0.0:30780'[]]); the answer must come from BPF, not a process*"]),
    ("nodeport-frontend-on-the-wrong-port", ("affinity", "dsr", "etp", "icmp_errors", "no_backend", "nodeport"), "faults=Faults(nodeport_wrong_port=True)",
     {NP + "test_nodeport_answers_http_200_on_the_node", NP + "test_nodeport_answers_from_outside_the_cluster",
      NP + "test_agent_lists_the_wildcard_nodeport_frontend",
      NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer",
      ETP + "test_only_the_node_with_a_local_backend_serves_it_from_outside", ETP + "test_the_backend_sees_the_clients_own_address",
      DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises",
      # the affinity suite's requests from outside go through NodePorts too: none is served
      AFF + "test_a_client_from_outside_stays_on_one_backend_with_session_affinity",
      AFF + "test_from_outside_without_affinity_requests_spread_over_the_backends", AFF + "test_the_nodes_affinity_map_holds_the_clients_entry",
      # the ICMP-error suite's datagram goes to a NodePort too: it never reaches the responder
      IE + "test_a_fragmentation_needed_error_reaches_the_client_reverse_translated"},
     ["*NodePort: the agent lists no 0.0.0.0:30780 NodePort frontend (NodePort frontends: [[]*0.0.0.0:30781/TCP*",
      "*NodePort: 172.18.0.3:30780 answered 0 (curl exit 7)*",
      "*ICMP errors (*): no ICMP error came back to * (timeout), and ie-backend on * logged no datagram: the NodePort did not forward it*"]),
    ("ipv6-nodeport-not-programmed", ("affinity", "dsr", "etp", "itp", "no_backend", "nodeport", "source_ranges"), "ip_families=('IPv4', 'IPv6'), faults=Faults(nodeport_v6_missing=True)",
     {NP + "test_nodeport_answers_http_200_on_the_node[IPv6]", NP + "test_nodeport_answers_from_outside_the_cluster[IPv6]",
      NP + "test_agent_lists_the_wildcard_nodeport_frontend[IPv6]",
      # ghost's IPv6 NodePort is not programmed either: the node's stack answers the raw SYN with a reset
      NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer[IPv6]",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer[IPv6]",
      # nor eTP's and DSR's: nothing serves them over IPv6 from outside
      ETP + "test_only_the_node_with_a_local_backend_serves_it_from_outside[IPv6]", ETP + "test_the_backend_sees_the_clients_own_address[IPv6]",
      DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises[IPv6]", ITP + "test_traffic_from_outside_is_unaffected[IPv6]",
      AFF + "test_a_client_from_outside_stays_on_one_backend_with_session_affinity[IPv6]",
      AFF + "test_from_outside_without_affinity_requests_spread_over_the_backends[IPv6]",
      AFF + "test_the_nodes_affinity_map_holds_the_clients_entry[IPv6]",
      # and the source-ranges suite's request to a Service's NodePort over IPv6
      SR + "test_the_nodeport_answers_as_the_source_range_setting_says[IPv6]"},
     ["*NodePort: [[]fc00:f853:ccd:e793::3]:30780 answered 0 (curl exit 7)*",
      "*NodePort from outside: http http://[[]fc00:f853:ccd:e793::3]:30780/: refused*",
      "*NodePort: the agent lists no [[]::]:30780 NodePort frontend (NodePort frontends: [[]'0.0.0.0:*/TCP'*",
      "*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort [[]fc00:f853:ccd:e793::4]:*; per-packet plane, "
      "ServiceNoBackendResponse=reject): a raw SYN got reset after *; expected icmp-unreachable ICMP 1/4*"]),
]
