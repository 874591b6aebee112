"""The fault rows of the hairpin property: each of its faults (pytest_kpr.testing, property='hairpin') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

HP_ = "test_hairpin.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("hairpin-socket-snat", ("hairpin",), "faults=Faults(hairpin_socket_snat=True)",
     {HP_ + "test_the_backend_sees_the_source_its_plane_gives"},
     ["*hairpin: hairpin saw its own request to 10.96.*:80 come from 169.254.42.1, expected 10.244.* (socket plane: socket LB "
      "connects the pod straight to itself (no NAT))*"]),
    ("hairpin-not-nated-per-packet", ("hairpin",), "socket_lb_hostns_only=True, faults=Faults(hairpin_no_loopback_nat=True)",
     {HP_ + "test_a_backend_reaches_its_own_service", HP_ + "test_the_backend_sees_the_source_its_plane_gives"},
     ["*hairpin: hairpin could not reach its own Service 10.96.*:80 (per-packet plane): connect timeout, HTTP nothing; per packet a "
      "packet from a pod to itself must be source-NATed to the loopback address*",
      "*hairpin: hairpin logged no request from itself to 10.96.*:80, so the source it saw is unknown*"]),
]
