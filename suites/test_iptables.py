"""No kube-proxy rules on any node: with KPR, Services live in BPF maps, not in iptables.

Every view is read, because each can hide the others' rules: iptables-nft, iptables-legacy and the
nft ruleset; a view that cannot be read fails the control test instead of passing the checks blind.
kube-proxy's rules are its chains in iptables mode (KUBE-SERVICES, KUBE-NODEPORTS, KUBE-SVC-*,
KUBE-SEP-*, ...) and its ``kube-proxy`` table in nftables mode (pytest_kpr.checks). Evidence:
iptables.json (cluster_ip, kube_svc_lines, kube_sep_lines, cluster_ip_lines, cilium_lines,
kube_proxy_lines, and the counts per node and view). Every agent's KubeProxyReplacement True is
established before any suite runs (readiness refuses a cluster without it), so it is not re-checked here.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import Evidence, holds, Lab, NodeRules, RuleDump
from pytest_kpr.judge.iptables import KUBE_PROXY_MARKS, kube_proxy_rule_problems, rule_line_problems, rule_view_problems
from pytest_kpr.judge.kube_proxy import KUBE_PROXY_POLICY, kube_proxy_accepted

pytestmark = pytest.mark.kpr(property="iptables", evidence="iptables.json",
                             plane="node rules",
                             sources="SRC_NO_KUBE_PROXY_RULES")

Dumps = dict[str, dict[str, RuleDump | None]]


@pytest.fixture(scope="module")
def rules(lab: Lab, node_rules: dict[str, NodeRules], evidence: Evidence, kpr_property: str) -> Dumps:
    ip = lab.cluster_ip("web")
    dumps: Dumps = {node: r.dumps for node, r in node_rules.items()}
    counts = {node: {view: (d.counts(ip=ip) | {"kube_proxy": sum(d.count(m) for m in KUBE_PROXY_MARKS)}) if d else "unreadable"
                     for view, d in views.items()} for node, views in dumps.items()}
    read = [c for views in counts.values() for c in views.values() if isinstance(c, dict)]
    total = {k: sum(c[k] for c in read) for k in ("kube_svc", "kube_sep", "ip", "cilium", "kube_proxy")}
    evidence.write("iptables.json", {
        "cluster_ip": ip,
        "kube_svc_lines": total["kube_svc"],
        "kube_sep_lines": total["kube_sep"],
        "kube_proxy_lines": total["kube_proxy"],
        "cluster_ip_lines": total["ip"],
        "cilium_lines": total["cilium"],
        "kube_proxy_replacement": lab.agent(lab.client_node).status().kpr.mode,  # recorded for the lab; readiness required True
        "nodes": counts,
    })
    evidence.figure(kpr_property, f"{total['kube_svc']} KUBE-SVC, {total['kube_sep']} KUBE-SEP, {total['ip']} ClusterIP lines on {len(dumps)} nodes")
    return dumps


def test_every_node_can_be_read_in_each_rule_view(rules: Dumps) -> None:
    """Control for the negative checks below: a view that was not read proves nothing."""
    problems = rule_view_problems(rules)
    holds(problems, "iptables: the rule views are not all readable, so the emptiness checks would be blind")


def test_no_node_has_kube_proxy_service_rules(rules: Dumps, kpr_settings: Any) -> None:
    problems = kube_proxy_rule_problems(rules)
    reason = kube_proxy_accepted(problems, kpr_settings.allow_kube_proxy)
    if reason:
        pytest.skip(reason)
    holds(problems, "iptables: kube-proxy's service rules are on the nodes (expected none of its chains or its nft table in any view)",
          then=f" ({KUBE_PROXY_POLICY})")


def test_no_rule_names_the_web_cluster_ip(rules: Dumps, lab: Lab) -> None:
    ip = lab.cluster_ip("web")
    problems = rule_line_problems(rules, ip, "web's ClusterIP")
    holds(problems, f"iptables: rules name web's ClusterIP {ip}, so something other than BPF translates it")
