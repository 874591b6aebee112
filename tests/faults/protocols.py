"""The fault rows of the protocols-on-a-port property: each of its faults (pytest_kpr.testing, property='protocols on a port')
and what it must fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

MP = "test_protocols.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("multi-protocol-collapsed", ("protocols",), "faults=Faults(multi_protocol_collapsed=True)",
     {MP + "test_tcp_and_udp_on_one_port_are_both_served"},
     ["*protocols on a port (TCP and UDP): UDP to 10.96.*:7000 from a pod: timeout, though the Service has 7000/UDP beside its TCP port*"]),
    ("wildcard-drop-missing", ("protocols",), "faults=Faults(wildcard_drop_missing=True)",
     {MP + "test_a_port_the_vip_does_not_serve_is_dropped_and_counted"},
     ["*protocols on a port (a port the VIP does not serve, from outside): 198.18.23.10:7001, a port the Service does not have, got no "
      "answer (timeout) through fake-worker, but the agent there counted no \"Service backend not found\" drop (drops that rose: none)*"]),
]
