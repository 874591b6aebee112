"""The fault rows of the source-ranges property: each of its faults (pytest_kpr.testing, property='source ranges') and what
it must fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

SR = "test_source_ranges.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("source-ranges-ignored", ("source_ranges",), "faults=Faults(source_ranges_ignored=True)",
     {SR + "test_a_source_outside_the_ranges_is_dropped", SR + "test_with_the_deny_annotation_a_source_in_the_ranges_is_dropped",
      SR + "test_the_drop_is_counted_as_denied_by_the_source_range_check", SR + "test_the_ranges_hold_on_the_services_external_ips"},
     ["*source ranges (allow list, the client outside it): sr-allow-out (allow list 192.0.2.0/24, 2001:db8::/64): 172.18.0.1 is refused "
      "by the ranges, yet 198.18.22.11:80 through fake-worker answered HTTP 200: the source-range check did not apply*"]),
    ("source-range-deny-ignored", ("source_ranges",), "faults=Faults(source_range_deny_ignored=True)",
     {SR + "test_with_the_deny_annotation_a_source_in_the_ranges_is_dropped",
      SR + "test_with_the_deny_annotation_a_source_outside_the_ranges_is_served",
      SR + "test_the_drop_is_counted_as_denied_by_the_source_range_check"},
     ["*source ranges (deny list, the client in it): sr-deny-in (deny list 172.18.0.1/32): 172.18.0.1 is refused by the ranges, yet "
      "198.18.22.12:80 through fake-worker answered HTTP 200*"]),
    ("source-range-drop-uncounted", ("source_ranges",), "faults=Faults(source_range_drop_uncounted=True)",
     {SR + "test_the_drop_is_counted_as_denied_by_the_source_range_check", SR + "test_the_ranges_hold_on_the_services_external_ips"},
     ["*source ranges (the drop reason in the agent's metrics): sr-allow-out (allow list 192.0.2.0/24, 2001:db8::/64): the request from "
      "172.18.0.1 was dropped, but the agent on fake-worker counted no \"Denied by LB src range check\" drop (drops that rose: none)*"]),
    ("source-ranges-inside", ("source_ranges",), "faults=Faults(source_ranges_inside=True)",
     {SR + "test_in_cluster_access_ignores_the_ranges"},
     ["*source ranges (in-cluster access): a pod's connection to sr-allow-out's VIP, whose ranges exclude it, got timeout: in-cluster "
      "access must ignore loadBalancerSourceRanges*"]),
    # the ranges on a LoadBalancer Service's other frontends (datapath.SRC_SOURCE_RANGES_TYPES)
    ("source-ranges-on-nodeport", ("source_ranges",), "faults=Faults(source_ranges_on_nodeport=True)",
     {SR + "test_the_nodeport_answers_as_the_source_range_setting_says"},
     ["*source ranges (the Service's NodePort): sr-allow-out (NodePort 172.18.0.3:*, allow list 192.0.2.0/24, 2001:db8::/64): the ranges "
      "are not checked on a NodePort frontend here, yet 172.18.0.3:* through fake-worker gave *"]),
    ("source-ranges-skip-nodeport-1.18", ("source_ranges",), "cilium_version=\"1.18.14\", faults=Faults(source_ranges_skip_nodeport=True)",
     {SR + "test_the_nodeport_answers_as_the_source_range_setting_says"},
     ["*source ranges (the Service's NodePort): sr-allow-out (NodePort 172.18.0.3:*, allow list 192.0.2.0/24, 2001:db8::/64): "
      "172.18.0.1 is refused by the ranges, yet 172.18.0.3:* through fake-worker answered HTTP 200: the source-range check did not "
      "apply*"]),
    ("source-ranges-skip-external-ip", ("source_ranges",), "faults=Faults(source_ranges_skip_external_ip=True)",
     {SR + "test_the_ranges_hold_on_the_services_external_ips"},
     ["*source ranges (the Service's externalIPs): sr-allow-out (ExternalIP 198.18.22.30:80, allow list 192.0.2.0/24, 2001:db8::/64): "
      "172.18.0.1 is refused by the ranges, yet 198.18.22.30:80 through fake-worker answered HTTP 200: the source-range check did not "
      "apply*"]),
    ("source-range-all-types-ignored", ("source_ranges",), "lb_source_range_all_types=True, faults=Faults(source_range_all_types_ignored=True)",
     {SR + "test_the_nodeport_answers_as_the_source_range_setting_says"},
     ["*source ranges (the Service's NodePort): sr-allow-out (NodePort 172.18.0.3:*, allow list 192.0.2.0/24, 2001:db8::/64): "
      "172.18.0.1 is refused by the ranges, yet 172.18.0.3:* through fake-worker answered HTTP 200: the source-range check did not "
      "apply*"]),
]
