"""The fault rows of the local-redirect property: each of its faults (pytest_kpr.testing, property='local redirect') and
what it must fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

LR = "test_local_redirect.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    # the lrp profile's agents forward to the Service's own backends: the policy changed nothing
    ("lrp-ignored", ("local_redirect",), "local_redirect_policy=True, faults=Faults(lrp_ignored=True)",
     {LR + "test_a_service_matcher_policy_keeps_pods_on_their_nodes_selected_pods"},
     ["*local redirect (ServiceMatcher): * of 12 connections from * to * reached lrp-far-1 x*, lrp-far-2 x*, not the policy's local "
      "lrp-local: the Local Redirect Policy did not redirect them*"]),
]
