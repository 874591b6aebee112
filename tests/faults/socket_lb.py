"""The fault rows of the socket LB property: each of its faults (pytest_kpr.testing, property='socket LB') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

NB = "test_no_backend.py::"
AFF = "test_affinity.py::"
SL = "test_socket_lb.py::"
UDP = "test_udp.py::"
ITP = "test_itp.py::"
TERM = "test_terminating.py::"
HP_ = "test_hairpin.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("pods-per-packet-while-full", ("affinity", "hairpin", "itp", "no_backend", "socket_lb", "terminating", "udp"), "faults=Faults(socket_lb_broken=True)",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend", SL + "test_conntrack_out_entry_names_the_socket_peer",
      HP_ + "test_the_backend_sees_the_source_its_plane_gives", UDP + "test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on",
      NB + "test_connect_from_a_pod_fails_as_its_plane_says", AFF + "test_a_client_stays_on_one_backend_with_session_affinity",
      AFF + "test_without_affinity_connections_spread_over_the_backends", AFF + "test_the_affinity_expires_after_its_timeout",
      ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node", ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
      TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists",
      TERM + "test_when_only_terminating_backends_remain_new_connections_follow_the_rule"},
     ["*socket LB (agent reports coverage Full): the socket's peer is the service address*not rewritten at connect()*service translation entries exist*",
      "*affinity (sessionAffinity ClientIP): connections reached [[]'10.96.*:80'[]], which are not the Service's backends*",
      "*iTP=Local (local backends only): 12 of 12 connections from a pod on fake-worker have their socket on 10.96.*:80, no backend of the "
      "Service (the socket plane did not translate them to a backend)*",
      "*terminating backends (new connections): while term-a terminates: 20 of 20 new connections reached 10.96.*:7000, no backend of the Service*",
      "*hairpin: hairpin saw its own request to 10.96.*:80 come from 169.254.42.1, expected 10.244.* (socket plane*",
      # per packet a connected UDP socket has no socket-level backend for the agent to terminate
      "*UDP (socket termination): the connected socket to the deleted backend udpterm-a (10.244.*:5353) was not terminated (no ECONNABORTED)*"]),
    ("pods-on-socket-lb-while-hostns-only", ("hairpin", "no_backend", "socket_lb"), "socket_lb_hostns_only=True, faults=Faults(socket_lb_reverse=True)",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend", HP_ + "test_the_backend_sees_the_source_its_plane_gives",
      NB + "test_connect_from_a_pod_fails_as_its_plane_says", NB + "test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it"},
     ["*socket LB (agent reports coverage Hostns-only): socket LB is hostns-only, yet the pod's socket peer is 10.244.*, not the service*",
      "*no backend (pod connect() to ClusterIP *; per-packet plane, ServiceNoBackendResponse=reject): connect() gave unreachable (EHOSTUNREACH)*",
      "*hairpin: hairpin saw its own request to 10.96.*:80 come from 10.244.*, expected 169.254.42.1 (per-packet plane*"]),
    ("getpeername-returns-the-backend", ("socket_lb", "udp"), "faults=Faults(getpeername_backend=True)",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend",
      UDP + "test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip"},
     ["*getpeername() returned 10.244.*:8080, not the service address 10.96.*:80: the reverse translation is missing*",
      "*UDP (connected client to 10.96.*:53): getpeername() returned 10.244.*:5353, not 10.96.*:53: the getpeername4 reverse translation is missing*"]),
    ("snat-at-the-backend", ("socket_lb",), "faults=Faults(snat_at_backend=True)",
     {SL + "test_backend_sees_the_holder_pod_address"},
     ["*socket LB: the backend web-* sees [[]'172.18.0.3:61234'[]], not the holder's pod address 10.244.*:40404 (a node IP would mean SNAT)*"]),
    ("ipv6-pods-per-packet-while-full", ("affinity", "hairpin", "itp", "no_backend", "socket_lb", "terminating", "udp"), "ip_families=('IPv4', 'IPv6'), faults=Faults(socket_lb_broken='IPv6')",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend[IPv6]", HP_ + "test_the_backend_sees_the_source_its_plane_gives[IPv6]",
      UDP + "test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on[IPv6]",
      SL + "test_conntrack_out_entry_names_the_socket_peer[IPv6]", NB + "test_connect_from_a_pod_fails_as_its_plane_says[IPv6]",
      # the suites that read the backend from the socket see the ClusterIP instead (no connect6 translation)
      AFF + "test_a_client_stays_on_one_backend_with_session_affinity[IPv6]", AFF + "test_without_affinity_connections_spread_over_the_backends[IPv6]",
      AFF + "test_the_affinity_expires_after_its_timeout[IPv6]", ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node[IPv6]",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer[IPv6]",
      TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists[IPv6]",
      TERM + "test_when_only_terminating_backends_remain_new_connections_follow_the_rule[IPv6]"},
     ["*socket LB (agent reports coverage Full): the socket's peer is the service address [[]fd00:10:96::*]:80: the destination was not "
      "rewritten at connect()*",
      "*no backend (pod connect() to ClusterIP [[]fd00:10:96::*]:80; socket plane, ServiceNoBackendResponse=reject): connect() gave "
      "refused (ECONNREFUSED)*"]),
    ("endpoint-program-missing", ("socket_lb",), "faults=Faults(endpoint_program_missing=True)",
     {SL + "test_holder_endpoint_runs_cilium_program_on_its_host_veth"},
     ["*socket LB: lxc* runs None, not cil_from_container*attach mode tcx expects tcx/ingress on lxc*, found None*"]),
    # the netkit profile: the pod's program is the netkit peer's (datapath.SRC_NETKIT_ATTACH), not a tcx ingress one
    ("netkit-attached-as-tcx", ("socket_lb",), "datapath_mode='netkit', routing_mode='Native', faults=Faults(netkit_attached_as_tcx=True)",
     {SL + "test_holder_endpoint_runs_cilium_program_on_its_host_veth"},
     ["*socket LB: datapath mode netkit expects netkit/peer on lxc*, found tcx/ingress*"]),
]
