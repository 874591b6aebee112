"""The fault rows of the no backend property: each of its faults (pytest_kpr.testing, property='no backend') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

NB = "test_no_backend.py::"
UDP = "test_udp.py::"
ITP = "test_itp.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("silent-drop-while-reject", ("no_backend",), "faults=Faults(no_backend_silent_drop=True)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort *; per-packet plane, ServiceNoBackendResponse=reject): "
      "a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 3/3*"]),
    ("reject-icmp-host-unreachable", ("no_backend",), "faults=Faults(reject_icmp_code=1)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*the reject answer is ICMP 3/1, expected ICMP 3/3 (destination unreachable, port unreachable)*"]),
    ("reject-icmp-admin-prohibited", ("no_backend",), "faults=Faults(reject_icmp_code=13)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*the reject answer is ICMP 3/13, expected ICMP 3/3*"]),
    ("slow-reject", ("no_backend",), "faults=Faults(slow_reject_ms=2000)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*raw failed as expected (icmp-unreachable) but took 2.00s; the per-packet plane answers at once (bound 1s)*"]),
    ("socket-plane-follows-drop", ("itp", "no_backend", "udp"), "no_backend_response='drop', faults=Faults(socket_lb_honours_drop=True)",
     {NB + "test_curl_from_a_pod_fails_as_its_plane_says", NB + "test_connect_from_a_pod_fails_as_its_plane_says",
      UDP + "test_a_backendless_udp_service_fails_the_datagram_at_once",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*no backend (pod curl to ClusterIP *; socket plane, ServiceNoBackendResponse=drop): curl exited 28 after 5.00s (it timed out: "
      "the traffic was dropped); expected exit 7 at once*whatever ServiceNoBackendResponse says*",
      "*no backend (pod sendto() to UDP ClusterIP 10.96.*:53; socket plane, ServiceNoBackendResponse=drop): sendto() gave timeout after 2.00s*",
      "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; socket "
      "plane, ServiceNoBackendResponse=drop): connect() gave timeout after 2.00s*"]),
    # the socket plane's errno: EHOSTUNREACH from kernel 6.1 (clusters/kernels.yaml sock_addr_set_retval)
    ("eperm-on-a-6.1-kernel", ("itp", "no_backend", "udp"), "faults=Faults(eperm_on_new_kernel=True)",
     {NB + "test_connect_from_a_pod_fails_as_its_plane_says", UDP + "test_a_backendless_udp_service_fails_the_datagram_at_once",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*no backend (pod connect() to ClusterIP *; socket plane, ServiceNoBackendResponse=reject): connect() failed with EPERM, expected "
      "EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression of cilium/cilium#45184 (reported for Cilium 1.19.2 up to 1.20.0*",
      "*UDP (no backend)*sendto() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression*",
      "*iTP=Local (no local backend)*connect() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression*"]),
    ("ipv6-silent-drop-while-reject", ("no_backend",), "ip_families=('IPv4', 'IPv6'), faults=Faults(no_backend_silent_drop='IPv6')",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer[IPv6]",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer[IPv6]"},
     ["*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort [[]fc00:f853:ccd:e793::4]:*; per-packet plane, "
      "ServiceNoBackendResponse=reject): a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 1/4*"]),
    # enable-no-service-endpoints-routable is true (the default), yet the per-packet plane lets the SYN through to the stack
    ("no-backend-not-routable", ("no_backend",), "faults=Faults(no_backend_not_routable=True)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort *; per-packet plane, ServiceNoBackendResponse=reject): "
      "a raw SYN got reset after *; expected icmp-unreachable ICMP 3/3*"]),
    ("icmp-while-not-routable", ("no_backend",), "no_service_endpoints_routable=False, faults=Faults(not_routable_ignored=True)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*no backend (raw SYN from fake-worker's host network *; per-packet plane, ServiceNoBackendResponse=reject, "
      "enable-no-service-endpoints-routable=false): a raw SYN got icmp-unreachable ICMP 3/3 after *; expected reset: "
      "enable-no-service-endpoints-routable is false*"]),
    # ... but a pod's SYN to the ClusterIP (per packet, hostns-only) continues as addressed, and nothing owns that address
    ("not-routable-resets-a-cluster-ip", ("no_backend",),
     "no_service_endpoints_routable=False, socket_lb_hostns_only=True, faults=Faults(not_routable_resets_anywhere=True)",
     {NB + "test_curl_from_a_pod_fails_as_its_plane_says", NB + "test_connect_from_a_pod_fails_as_its_plane_says",
      NB + "test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it"},
     ["*no backend (pod curl to ClusterIP *; per-packet plane, *enable-no-service-endpoints-routable=false): curl exited 7 after *; "
      "expected exit 28 at its limit: *bpf_lxc lets the pod's packet continue untranslated to the ClusterIP, which nothing on the node owns*",
      "*no backend (pod connect() to ClusterIP *): connect() gave refused (ECONNREFUSED) after *; expected timeout at its limit*",
      "*no backend (pod raw SYN to ClusterIP *): a raw SYN got reset after *; expected timeout*"]),
]
