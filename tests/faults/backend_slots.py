"""The fault rows of the backend slots property: each of its faults (pytest_kpr.testing, property='backend slots') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

BS = "test_backend_slots.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("slots-capped", ("backend_slots",), "faults=Faults(slots_cap=3)",
     {BS + "test_slots_converge_to_the_endpointslice_after_scaling_to_four"},
     ["*backend slots did not converge after scaling web to 4 (IPv4, waited *s): fake-control-plane: slots lack [[]*"]),
    ("stale-slots-after-scale-down", ("backend_slots",), "faults=Faults(stale_slots=True)",
     {BS + "test_slots_follow_a_scale_down"},
     ["*backend slots did not follow web scaling down to 2*: fake-control-plane: slots still hold [[]*which the EndpointSlice no longer has*"]),
    ("backend-missing-on-one-agent", ("backend_slots",), "faults=Faults(backend_missing_on='fake-worker2')",
     {BS + "test_slots_converge_to_the_endpointslice_after_scaling_to_four"},
     ["*backend slots did not converge after scaling web to 4*: fake-worker2: slots lack [[]*"]),
    ("ipv6-slots-lack-a-backend", ("backend_slots",), "ip_families=('IPv4', 'IPv6'), faults=Faults(backend6_missing=True)",
     {BS + "test_slots_converge_to_the_endpointslice_after_scaling_to_four[IPv6]"},
     ["*backend slots did not converge after scaling web to 4 (IPv6, waited *s): fake-control-plane: slots lack [[]'[[]fd00:10:244:*"]),
    # the agent's own tables against its BPF slots
    ("rev-nat-id-mismatch", ("backend_slots",), "faults=Faults(rev_nat_id_mismatch=True)",
     {BS + "test_web_slots_hold_exactly_its_ready_endpoints"},
     ["*backend slots (IPv4): slot 0 carries RevNAT 10*, service list ID *"]),
]
