"""The fault rows of the shared VIP property: each of its faults (pytest_kpr.testing, property='shared VIP') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

SV = "test_shared_vip.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("degraded-without-the-error-text", ("shared_vip",), "faults=Faults(health_without_error=True)",
     {SV + "test_the_conflict_is_visible_in_the_agents_health[external-ips]", SV + "test_the_conflict_is_visible_in_the_agents_health[lb-ipam]",
      SV + "test_a_port_swap_ends_as_the_model_predicts", SV + "test_the_release_first_handoff_recovers_a_port_swap"},
     ["*shared VIP (external-ips): the rejected claim is not visible in the agent's health: `db/show health` has no Degraded "
      "loadbalancer-reflectors row whose Error says 'frontend already owned by another service'*",
      "*shared VIP port swap (cilium-1.18, VIP 198.18.10.80): after the swap, as the model predicts: the model says*'errors': [[]'frontend already*"]),
    ("error-without-degraded-count", ("shared_vip",), "faults=Faults(error_without_degraded=True)",
     {SV + "test_the_conflict_is_visible_in_the_agents_health[external-ips]", SV + "test_the_conflict_is_visible_in_the_agents_health[lb-ipam]"},
     ["*shared VIP (lb-ipam): the rejected claim is not visible in the agent's health: plain `cilium-dbg status` shows no degraded module "
      "(Modules Health {'stopped': 0, 'degraded': 0, 'ok': 1})*"]),
]
