"""The fault rows of the kube-proxy installed property: each of its faults (pytest_kpr.testing, property='kube-proxy installed') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

KPI = "test_kube_proxy_installed.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("installed-kube-proxy-programs-nothing", ("kube_proxy_installed",), "faults=Faults(kube_proxy_no_rules=True)", {KPI + "test_the_rule_check_finds_its_chains_on_every_node"},
     ["*kube-proxy installed: its chains never showed on fake-control-plane, fake-worker, fake-worker2, so the iptables check was not exercised*"]),
    ("kube-proxy-cleanup-fails", ("kube_proxy_installed",), "faults=Faults(kube_proxy_cleanup_fails=True)", {KPI + "test_kube_proxy_cleanup_leaves_no_chains"},
     ["*kube-proxy installed: after deleting the DaemonSet and kube-proxy --cleanup on every node (*), rules remain: fake-control-plane "
      "(iptables-nft): kube-proxy chains {'KUBE-SERVICES': *"]),
]
