"""Mixed kube-proxy: no second authority for Services beside Cilium's kube-proxy replacement.

kube-proxy left running next to KubeProxyReplacement programs the same Services again (double NAT, rules that
come back after a cleanup). The iptables suite checks for kube-proxy's chains and nftables table; this one looks
for kube-proxy itself and for its IPVS mode: a kube-proxy DaemonSet (in any namespace: by the k8s-app=kube-proxy
label kubeadm and kind give it, by kube-proxy's image or command in its pod template, or by its name in kube-system), and IPVS virtual services on any node
(/proc/net/ip_vs). A failure names what it found and the way off it Cilium documents for an existing installation
(Documentation/network/kubernetes/kubeproxy-free.rst). Refusing kube-proxy beside the replacement is pytest-kpr's policy:
Cilium documents co-existence (judge.kube_proxy.KUBE_PROXY_POLICY quotes it); --kpr-allow-kube-proxy accepts it on purpose (the
checks then skip, naming what they found). Evidence: kubeproxy.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import Evidence, holds, Lab, NodeRules
from pytest_kpr.judge.kube_proxy import (
    KUBE_PROXY_POLICY,
    KUBE_PROXY_REMOVAL,
    daemonset_summary,
    ipvs_problems,
    kube_proxy_accepted,
    kube_proxy_daemonset_problems,
    runs_kube_proxy,
)
from pytest_kpr.judge.kube_proxy import KubeProxyObservation

pytestmark = pytest.mark.kpr(property="kube-proxy", evidence="kubeproxy.json",
                             plane="node rules",
                             sources=["SRC_KUBE_PROXY_REPLACED", "SRC_NO_KUBE_PROXY_RULES"])


@pytest.fixture(scope="module")
def seen(lab: Lab, node_rules: dict[str, NodeRules], evidence: Evidence, kpr_property: str) -> KubeProxyObservation:
    kube = lab.kube
    found = {}
    for d in [d for d in kube.list("DaemonSet") if runs_kube_proxy(d)] + [x for x in [kube.get("DaemonSet", "kube-proxy", "kube-system")] if x]:
        summary = daemonset_summary(d)
        found[f"{summary.namespace}/{summary.name}"] = summary
    k = KubeProxyObservation(tuple(found.values()), {node: None if r.ipvs is None else tuple(r.ipvs) for node, r in node_rules.items()},
                             len(kube.list("Pod", None, "k8s-app=kube-proxy")))
    evidence.write("kubeproxy.json", k.to_json())
    n_ipvs = sum(len(v or []) for v in k.ipvs.values())
    evidence.figure(kpr_property, f"{len(found)} kube-proxy DaemonSets, {k.kube_proxy_pods} pods, {n_ipvs} IPVS services on {len(k.ipvs)} nodes")
    return k


def _accepted(problems: list[str], kpr_settings: Any) -> None:
    """With --kpr-allow-kube-proxy a kube-proxy beside the replacement is accepted on purpose: skipped, with what was found."""
    reason = kube_proxy_accepted(problems, kpr_settings.allow_kube_proxy)
    if reason:
        pytest.skip(reason)


def test_no_kube_proxy_daemonset_runs_beside_the_replacement(seen: KubeProxyObservation, kpr_settings: Any) -> None:
    problems = kube_proxy_daemonset_problems(seen.daemonsets)
    _accepted(problems, kpr_settings)
    holds(problems, "kube-proxy: a second authority for Services", then=f" ({KUBE_PROXY_POLICY})")


def test_no_node_has_ipvs_services(seen: KubeProxyObservation, kpr_settings: Any) -> None:
    problems = ipvs_problems(seen)
    _accepted(problems, kpr_settings)
    holds(problems, "kube-proxy: a second authority for Services, IPVS virtual services on the nodes (kube-proxy's IPVS mode or its leftovers)",
          then=f"; remove kube-proxy ({KUBE_PROXY_REMOVAL}) and clear IPVS (ipvsadm --clear) ({KUBE_PROXY_POLICY})")
