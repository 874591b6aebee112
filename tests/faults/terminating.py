"""The fault rows of the terminating backends property: each of its faults (pytest_kpr.testing, property='terminating backends') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

TERM = "test_terminating.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("terminating-selected", ("terminating",), "faults=Faults(terminating_selected=True)",
     {TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists"},
     ["*terminating backends (new connections): while term-a terminates: * of 20 new connections reached term-a, which should not be picked*"]),
    ("terminating-cuts-connections", ("terminating",), "faults=Faults(terminating_cuts_connections=True)",
     {TERM + "test_an_established_connection_keeps_working_while_its_backend_terminates"},
     ["*terminating backends (established connection): the established connection to term-a was interrupted while it terminated: "
      "1 resets, 1 reconnects*"]),
    ("terminating-stalls-connections", ("terminating",), "faults=Faults(terminating_stalls_connections=True)",
     {TERM + "test_an_established_connection_keeps_working_while_its_backend_terminates"},
     ["*terminating backends (established connection): the established connection to term-a went silent for 3000 ms while it "
      "terminated (bound 1000 ms)*"]),
    ("terminating-never-used", ("terminating",), "faults=Faults(terminating_never_used=True)",
     {TERM + "test_when_only_terminating_backends_remain_new_connections_follow_the_rule"},
     ["*terminating backends (only terminating): with only terminating backends: 20 of 20 new connections failed although term-a, "
      "term-b are there to serve them*"]),
    ("ipv6-terminating-backend-picked", ("terminating",), "ip_families=('IPv4', 'IPv6'), faults=Faults(terminating_selected='IPv6')",
     {TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists[IPv6]"},
     ["*terminating backends (new connections): while term-a terminates: * of 20 new connections reached term-a, which should not be picked*"]),
]
