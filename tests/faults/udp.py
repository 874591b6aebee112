"""The fault rows of the UDP property: each of its faults (pytest_kpr.testing, property='UDP') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

UDP = "test_udp.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("udp-reply-from-the-backend", ("udp",), "faults=Faults(udp_reply_from_backend=True)",
     {UDP + "test_an_unconnected_client_reads_the_reply_from_the_cluster_ip",
      UDP + "test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip"},
     ["*UDP (unconnected client to 10.96.*:53): the reply came from 10.244.*:5353, not from 10.96.*:53 (the backend's own address: the "
      "socket LB's recvmsg4 reverse translation is missing); a resolver that sent to 10.96.*:53 drops it*",
      "*UDP (connected client to 10.96.*:53): the reply came from 10.244.*:5353*"]),
    # a connected client's socket to a deleted backend is terminated by the agent (datapath.SRC_UDP_SOCK_TERMINATION)
    ("udp-socket-not-terminated", ("udp",), "faults=Faults(udp_sockets_not_terminated=True)",
     {UDP + "test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on"},
     ["*UDP (socket termination): the connected socket to the deleted backend udpterm-a (10.244.*:5353) was not terminated (no "
      "ECONNABORTED): * datagrams lost, and it was never answered again*"]),
    ("udp-backendless-datagram-passes", ("udp",), "faults=Faults(udp_no_backend_passes=True)",
     {UDP + "test_a_backendless_udp_service_fails_the_datagram_at_once"},
     ["*no backend (pod sendto() to UDP ClusterIP 10.96.*:53; socket plane, ServiceNoBackendResponse=reject): sendto() gave timeout after "
      "2.00s; expected unreachable at once (under 1s)*"]),
    ("ipv6-udp-reply-from-the-backend", ("udp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(udp_reply_from_backend='IPv6')",
     {UDP + "test_an_unconnected_client_reads_the_reply_from_the_cluster_ip[IPv6]",
      UDP + "test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip[IPv6]"},
     ["*UDP (unconnected client to [[]fd00:10:96::*]:53): the reply came from [[]fd00:10:244:*]:5353, not from [[]fd00:10:96::*]:53 (the "
      "backend's own address: the socket LB's recvmsg6 reverse translation is missing)*"]),
]
