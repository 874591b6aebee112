"""The fault rows of the affinity property: each of its faults (pytest_kpr.testing, property='affinity') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

AFF = "test_affinity.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("affinity-ignored", ("affinity",), "faults=Faults(affinity_ignored=True)", {AFF + "test_a_client_stays_on_one_backend_with_session_affinity"},
     ["*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends * despite sessionAffinity ClientIP*"]),
    ("affinity-no-timeout", ("affinity",), "faults=Faults(affinity_no_timeout=True)", {AFF + "test_the_affinity_expires_after_its_timeout"},
     ["*affinity (timeoutSeconds 1): all 10 connections, 2.5 s apart (past the 1 s timeout), reached *: the affinity never expired (chance if it does: 3.8e-06)*"]),
    ("lb-always-first", ("affinity",), "faults=Faults(lb_always_first=True)", {AFF + "test_without_affinity_connections_spread_over_the_backends",
                                                                  AFF + "test_the_affinity_expires_after_its_timeout"},
     ["*affinity (none): all 20 connections without affinity reached * of 4 backends (chance: 3.6e-12)*"]),
    ("ipv6-affinity-ignored", ("affinity",), "ip_families=('IPv4', 'IPv6'), faults=Faults(affinity_ignored='IPv6')",
     {AFF + "test_a_client_stays_on_one_backend_with_session_affinity[IPv6]"},
     ["*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends [[]'[[]fd00:10:244:*]:8080'*despite sessionAffinity ClientIP*"]),
    # no affinity kept, so no entry in the node's map either
    ("outside-affinity-ignored", ("affinity",), "faults=Faults(outside_affinity_ignored=True)",
     {AFF + "test_a_client_from_outside_stays_on_one_backend_with_session_affinity", AFF + "test_the_nodes_affinity_map_holds_the_clients_entry"},
     ["*affinity from outside (NodePort, sessionAffinity ClientIP): 12 requests from outside (172.18.0.1) to fake-worker's NodePort "
      "reached * backends [[]'aff-*'*despite sessionAffinity ClientIP*"]),
    ("outside-lb-always-first", ("affinity",), "faults=Faults(outside_lb_always_first=True)",
     {AFF + "test_from_outside_without_affinity_requests_spread_over_the_backends"},
     ["*affinity from outside (NodePort, none): all 12 requests from outside to fake-worker's NodePort without affinity reached aff-* of 4 "
      "backends (chance: 2.4e-07)*"]),
    # the family field the other way round: set for IPv4, a dual-stack run's IPv6 affinity holds
    ("ipv4-affinity-ignored", ("affinity",), "ip_families=('IPv4', 'IPv6'), faults=Faults(affinity_ignored='IPv4')",
     {AFF + "test_a_client_stays_on_one_backend_with_session_affinity[IPv4]"},
     ["*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends [[]'10.244.*:8080'*despite sessionAffinity ClientIP*"]),
    ("affinity-entry-not-written", ("affinity",), "faults=Faults(affinity_entry_not_written=True)",
     {AFF + "test_the_nodes_affinity_map_holds_the_clients_entry"},
     ["*affinity from outside (the node's affinity map): fake-worker's affinity map holds no entry for 172.18.0.1 and the NodePort "
      "frontend (rev NAT ID *) after the requests (entries: none)*"]),
    ("affinity-rev-nat-host-order", ("affinity",), "faults=Faults(affinity_rev_nat_host_order=True)",
     {AFF + "test_the_nodes_affinity_map_holds_the_clients_entry"},
     ["*affinity from outside (the node's affinity map): fake-worker's affinity map holds no entry for 172.18.0.1 and the NodePort "
      "frontend (rev NAT ID *) after the requests (entries: 172.18.0.1 rev_nat *); the client's entry carries rev NAT ID *, the "
      "frontend's ID with its two bytes swapped*"]),
]
