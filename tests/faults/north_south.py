"""The fault rows of the north-south property: each of its faults (pytest_kpr.testing, property='north-south') and what it
must fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

NS = "test_north_south.py::"
SR = "test_source_ranges.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    # every VIP request from outside is dropped: the source-ranges suite's served cases too, and its drops go uncounted
    ("vip-not-served-from-outside", ("north_south", "source_ranges"), "faults=Faults(vip_not_served_from_outside=True)",
     {NS + "test_a_loadbalancer_vip_answers_from_outside_through_every_node", NS + "test_etp_local_on_a_vip_is_served_only_where_the_backend_is",
      SR + "test_a_source_in_the_ranges_is_served", SR + "test_with_the_deny_annotation_a_source_outside_the_ranges_is_served",
      SR + "test_the_drop_is_counted_as_denied_by_the_source_range_check"},
     ["*north-south (LoadBalancer VIP 198.18.21.10 from outside): 198.18.21.10:80 through fake-control-plane: no answer (timeout)*",
      "*north-south (externalTrafficPolicy Local on VIP 198.18.21.11): through fake-worker2, which has the backend, 198.18.21.11:80: "
      "no answer (timeout)*",
      "*source ranges (allow list, the client in it): sr-allow-in (allow list 172.18.0.1/32): 172.18.0.1 may pass, yet 198.18.22.10:80 "
      "through fake-worker gave no answer (timeout)*"]),
    # the source-ranges suite asks an externalIPs address too: dropped, but not by the check, so no such drop is counted
    ("external-ip-not-served-from-outside", ("north_south", "source_ranges"), "faults=Faults(external_ip_not_served_from_outside=True)",
     {NS + "test_an_external_ip_answers_from_outside_through_every_node", SR + "test_the_ranges_hold_on_the_services_external_ips"},
     ["*north-south (externalIPs 198.18.21.30 from outside): 198.18.21.30:80 through fake-control-plane: no answer (timeout)*"]),
    ("vip-etp-local-ignored", ("north_south",), "faults=Faults(vip_etp_local_ignored=True)",
     {NS + "test_etp_local_on_a_vip_is_served_only_where_the_backend_is"},
     ["*north-south (externalTrafficPolicy Local on VIP 198.18.21.11): through fake-control-plane, which has no local backend, "
      "198.18.21.11:80 was served by ns-local-backend: the request was forwarded to another node*"]),
    ("vip-health-frontend-missing", ("north_south",), "faults=Faults(vip_health_frontend_missing=True)",
     {NS + "test_the_vip_health_frontend_says_which_nodes_have_a_backend"},
     ["*north-south (health frontend 198.18.21.11:*): 198.18.21.11:* through fake-control-plane (0 local endpoints): no answer "
      "(timeout), expected HTTP 503*"]),
    # LB-IPAM's families: a dual-stack run's IPv6 VIPs (and the source-ranges suite's), each reached through a node
    ("ipv6-vip-not-served", ("north_south", "source_ranges"), "ip_families=('IPv4', 'IPv6'), faults=Faults(vip_not_served_from_outside=True)",
     {NS + "test_a_loadbalancer_vip_answers_from_outside_through_every_node[IPv4]", NS + "test_a_loadbalancer_vip_answers_from_outside_through_every_node[IPv6]",
      NS + "test_etp_local_on_a_vip_is_served_only_where_the_backend_is[IPv4]", NS + "test_etp_local_on_a_vip_is_served_only_where_the_backend_is[IPv6]",
      SR + "test_a_source_in_the_ranges_is_served[IPv4]", SR + "test_a_source_in_the_ranges_is_served[IPv6]",
      SR + "test_with_the_deny_annotation_a_source_outside_the_ranges_is_served[IPv4]", SR + "test_with_the_deny_annotation_a_source_outside_the_ranges_is_served[IPv6]",
      SR + "test_the_drop_is_counted_as_denied_by_the_source_range_check[IPv4]", SR + "test_the_drop_is_counted_as_denied_by_the_source_range_check[IPv6]"},
     ["*north-south (LoadBalancer VIP 2001:2::15:10 from outside): [[]2001:2::15:10]:80 through fake-control-plane: no answer (timeout)*",
      "*source ranges (allow list, the client in it): sr-allow-in (allow list 172.18.0.1/32, fc00:f853:ccd:e793::1/128)*"]),
]
