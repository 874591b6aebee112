"""The fault rows of the map pressure property: each of its faults (pytest_kpr.testing, property='map pressure') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

SV = "test_shared_vip.py::"
MAPS = "test_maps.py::"
PR = "test_protocols.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    # each suite's Services are gone when the next one runs (plugin.fixtures.lab), so the map-pressure suite meets its own: its
    # 20 Services take 40 service entries (a master and, 1.19+, a wildcard entry: datapath.SRC_WILDCARD) and 20 reverse-NAT
    # entries; a service map of 30 and a reverse-NAT map of 15 leave some of them out
    ("service-map-full-unexpectedly", ("maps",), "faults=Faults(service_map_capacity=90)", {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps"},
     ["*map pressure (IPv4 maps): service map full (90 of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the BPF maps (mp-*"]),
    # the reverse-NAT entry is written before the master (bpf_reconciler.go updateFrontend): that map can fill first
    ("rev-nat-map-full-unexpectedly", ("maps",), "faults=Faults(rev_nat_map_capacity=40)", {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps"},
     ["*map pressure (IPv4 maps): reverse-NAT map full (* of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the BPF maps*"]),
    ("rev-nat-map-full-silent", ("maps",), "lb_map_max=512, lb_rev_nat_map_max=200, faults=Faults(map_full_silent=True)", {MAPS + "test_a_full_map_is_not_silent"},
     ["*map pressure (how the agent shows a full IPv4 map): * of * Services missing from the map show no error for it (e.g. mp-*: status Done, "
      "error None; expected Error with 'Unable to update element for LB bpf map' (service map full) or 'Unable to update reverse NAT' "
      "(reverse-NAT map full))*the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled*"]),
    ("map-larger-than-reported", ("maps",), "lb_map_max=512, faults=Faults(rev_nat_map_capacity=100000, service_map_capacity=100000)",
     {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps"},
     ["*map pressure (IPv4 maps): 528 Services for a service map of 512 entries (/tmp/cilium/config-map/bpf-lb-map-max), yet none is missing*"]),
    # without the wildcard entry nothing drops a request to a port the VIP does not serve (datapath.SRC_WILDCARD_DROP)
    ("no-wildcard-entries", ("maps", "protocols"), "faults=Faults(no_wildcard_entries=True)",
     {MAPS + "test_each_address_has_its_wildcard_entry_as_the_rule_says", PR + "test_a_port_the_vip_does_not_serve_is_dropped_and_counted"},
     ["*map pressure (wildcard entries, IPv4 maps): 50 of 50 Services in the map have no wildcard entry for their address (<address>:0/ANY) "
      "although Cilium 1.20, default-lb-service-ipam lbipam (no file), bpf-lb-enable-wildcard-entries true (no file): the rule says one*",
      "*protocols on a port (a port the VIP does not serve, from outside): 198.18.23.10:7001, a port the Service does not have, got no "
      "answer (timeout) through *, but the agent there counted no \"Service backend not found\" drop*the VIP's wildcard entry did not drop it*"]),
    ("map-full-silent", ("maps",), "lb_map_max=512, faults=Faults(map_full_silent=True)", {MAPS + "test_a_full_map_is_not_silent"},
     ["*map pressure (how the agent shows a full IPv4 map): * of * Services missing from the map show no error for it (e.g. mp-*: status Done*"
      "the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (* readings: no row)*"]),
    # a leaked frontend also outlives the shared-VIP suite's deletions, which its model comparisons see
    ("map-entries-leak", ("maps", "shared_vip"), "lb_map_max=512, faults=Faults(map_entries_leak=True)",
     {MAPS + "test_cleanup_removes_every_service_and_its_entries", SV + "test_claim_before_release_in_one_window_ends_as_the_model_predicts",
      SV + "test_generated_upserts_and_deletes_end_as_the_model_predicts", SV + "test_the_release_first_handoff_recovers_a_port_swap"},
     ["*map pressure (cleanup, IPv4 maps): 0 of the suite's Services still in Kubernetes, * frontends still in the service map (10.96.*"]),
    # the lb6 service map alone holds fewer entries than the agent reports: only the IPv6 inventory misses Services (the 50
    # map-pressure Services take 100 IPv6 entries with their wildcard entries, datapath.SRC_WILDCARD; as above)
    ("ipv6-service-map-full-unexpectedly", ("maps",), "ip_families=('IPv4', 'IPv6'), faults=Faults(service6_map_capacity=90)",
     {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps[IPv6]"},
     ["*map pressure (IPv6 maps): service map full (90 of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the "
      "BPF maps (mp-*"]),
]
