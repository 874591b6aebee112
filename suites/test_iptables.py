"""No kube-proxy rules on any node: with KPR, Services live in BPF maps, not in iptables.

Every view is read, because each can hide the others' rules: iptables-nft, iptables-legacy and the
nft ruleset. Evidence: iptables.json (cluster_ip, kube_svc_lines, cluster_ip_lines, cilium_lines,
kube_proxy_replacement, and the counts per node and view).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.cluster.facts import ClusterFacts
from pytest_kpr.evidence import Evidence
from pytest_kpr.lab import Lab
from pytest_kpr.parse import RuleDump

pytestmark = pytest.mark.kpr
PROPERTY = "iptables"


@pytest.fixture(scope="module")
def rules(lab: Lab, web: Any, evidence: Evidence, kpr_facts: ClusterFacts) -> dict[str, dict[str, RuleDump]]:
    ip = lab.cluster_ip("web")
    dumps = {n.name: lab.node(n.name).rule_dumps() for n in kpr_facts.nodes}
    counts = {node: {view: d.counts(ip=ip) for view, d in views.items()} for node, views in dumps.items()}
    total = {k: sum(c[k] for views in counts.values() for c in views.values()) for k in ("kube_svc", "kube_sep", "ip", "cilium")}
    evidence.write("iptables.json", {
        "cluster_ip": ip,
        "kube_svc_lines": total["kube_svc"],
        "cluster_ip_lines": total["ip"],
        "cilium_lines": total["cilium"],
        "kube_proxy_replacement": lab.agent(lab.client_node).status().kpr.mode,
        "kube_sep_lines": total["kube_sep"],
        "nodes": counts,
    })
    evidence.figure(PROPERTY, f"{total['kube_svc']} KUBE-SVC, {total['ip']} ClusterIP lines on {len(dumps)} nodes")
    return dumps


def test_every_node_can_be_read_in_each_rule_view(rules: dict[str, dict[str, RuleDump]]) -> None:
    """Control for the negative checks below: a node whose rules cannot be read proves nothing."""
    blind = {node: sorted(views) for node, views in rules.items() if not views or not any(d.tables for d in views.values())}
    assert not blind, f"no iptables/nft tables could be read on {blind}: the emptiness checks would be blind"


def test_no_node_has_kube_proxy_service_rules(rules: dict[str, dict[str, RuleDump]]) -> None:
    offenders = {
        f"{node} ({view})": {"KUBE-SVC": d.count("KUBE-SVC"), "KUBE-SEP": d.count("KUBE-SEP")}
        for node, views in rules.items() for view, d in views.items() if d.count("KUBE-SVC") or d.count("KUBE-SEP")
    }
    assert not offenders, f"iptables: kube-proxy's service rules are on the nodes (expected no KUBE-SVC/KUBE-SEP line in any view): {offenders}"


def test_no_rule_names_the_web_cluster_ip(rules: dict[str, dict[str, RuleDump]], lab: Lab) -> None:
    ip = lab.cluster_ip("web")
    offenders = {f"{node} ({view})": [line for line in d.lines if d.count_token(ip) and ip in line][:3]
                 for node, views in rules.items() for view, d in views.items() if d.count_token(ip)}
    assert not offenders, f"iptables: rules name web's ClusterIP {ip}, so something other than BPF translates it: {offenders}"


def test_every_agent_reports_kube_proxy_replacement_true(lab: Lab, web: Any) -> None:
    modes = {a.node: a.status().kpr.mode for a in lab.all_agents()}
    assert set(modes.values()) == {"True"}, f"iptables: KubeProxyReplacement per node: {modes}"
