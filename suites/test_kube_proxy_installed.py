"""Mixed kube-proxy, made for real: install kube-proxy beside the replacement, show that the checks find it, remove it.

Disruptive (kpr_disruptive: it runs only on a cluster this run created, or with --kpr-allow-disruptive) and run last
(last=True): while kube-proxy runs, two authorities program every Service. A ServiceAccount bound to Kubernetes'
``system:node-proxier`` ClusterRole and a DaemonSet ``kube-proxy`` (label k8s-app=kube-proxy, host network, privileged,
iptables mode) with the node image's own kube-proxy (``registry.k8s.io/kube-proxy:<the cluster's version>``, which kind
node images carry, so nothing is pulled). Once every node shows kube-proxy's chains, the mixed kube-proxy and iptables
suites' judgements must name it. Then the way off it: the DaemonSet deleted (kube-proxy leaves its rules behind, which
is why Cilium's kubeproxy-free.rst removes them by hand) and ``kube-proxy --cleanup`` run once on every node (a pod in
the host network), after which no rule view may hold a kube-proxy chain. Evidence: kubeproxy-installed.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import ClusterFacts, eventually, eventually_or_now, Evidence, holds, Lab
from pytest_kpr.judge.iptables import kube_proxy_rule_problems
from pytest_kpr.judge.kube_proxy import (
    daemonset_summary,
    installed_detection_problems,
    installed_rule_coverage_problems,
    kube_proxy_daemonset_problems,
    runs_kube_proxy,
)
from pytest_kpr.judge.kube_proxy import KubeProxyInstalled

pytestmark = [
    pytest.mark.kpr(property="kube-proxy installed", evidence="kubeproxy-installed.json", last=True,
                    plane="node rules",
                    sources=["SRC_KUBE_PROXY_REPLACED", "SRC_NO_KUBE_PROXY_RULES"]),
    pytest.mark.kpr_disruptive,
]


def _daemonset(lab: Lab, image: str, account: str) -> dict[str, Any]:
    ctr = {"name": "kube-proxy", "image": image, "imagePullPolicy": "IfNotPresent",
           # --conntrack-*=0 leaves the kernel's conntrack settings alone (nf_conntrack_max is global to the host kind runs on:
           # kind's own kube-proxy config sets conntrack.maxPerCore: 0 for the same reason)
           "command": ["kube-proxy", "--hostname-override=$(NODE_NAME)", "--proxy-mode=iptables", "--cluster-cidr=10.244.0.0/16",
                       "--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
                       "--v=1"],
           "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
           "securityContext": {"privileged": True},
           "volumeMounts": [{"name": "xtables-lock", "mountPath": "/run/xtables.lock"}, {"name": "lib-modules", "mountPath": "/lib/modules",
                                                                                          "readOnly": True}]}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "kube-proxy", "namespace": lab.ns, "labels": {"k8s-app": "kube-proxy"}},
            "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy", "kpr-installed": "yes"}},
                     "template": {"metadata": {"labels": {"k8s-app": "kube-proxy", "kpr-installed": "yes"}},
                                  "spec": {"hostNetwork": True, "serviceAccountName": account, "priorityClassName": "system-node-critical",
                                           "tolerations": [{"operator": "Exists"}], "terminationGracePeriodSeconds": 1,
                                           "containers": [ctr],
                                           "volumes": [{"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
                                                       {"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}]}}}}


def _cleanup_pod(lab: Lab, node: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"kube-proxy-cleanup-{node}"[:63], "namespace": lab.ns},
            "spec": {"nodeName": node, "hostNetwork": True, "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "cleanup", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["kube-proxy", "--cleanup"],
                                     "securityContext": {"privileged": True},
                                     "volumeMounts": [{"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True}]}],
                     "volumes": [{"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}]}}


def _rules(lab: Lab, nodes: list[str]) -> dict[str, Any]:
    return {n: lab.node(n).rules_and_listeners(None)[0] for n in nodes}


@pytest.fixture(scope="module")
def installed(lab: Lab, evidence: Evidence, kpr_property: str, kpr_facts: ClusterFacts) -> KubeProxyInstalled:
    nodes = [n.name for n in kpr_facts.nodes]
    image = f"registry.k8s.io/kube-proxy:{kpr_facts.kubernetes_version}"
    account = "kpr-kube-proxy"
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"kpr-kube-proxy-{lab.run_id}", "labels": lab.run_labels},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-proxier"},
               "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": lab.ns}]}
    lab.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": lab.ns}})
    lab.track_cluster_object(binding)
    lab.kube.create(binding)
    status: dict[str, Any] = {}
    found_problems: list[str] = []
    rule_problems: list[str] = []
    with_rules: list[str] = []
    try:
        lab.create(_daemonset(lab, image, account))

        def ds() -> dict[str, Any]:
            return (lab.kube.get("DaemonSet", "kube-proxy", lab.ns) or {}).get("status") or {}

        status = eventually(ds, until=lambda st: st.get("desiredNumberScheduled", 0) > 0 and st.get("numberReady") == st.get("desiredNumberScheduled"),
                            timeout=lab.t.PODS_READY, what=f"kube-proxy ({image}) ready on every node",
                            describe=lambda st: f"{st.get('numberReady', 0)}/{st.get('desiredNumberScheduled', '?')} ready",
                            progress=lab.progress).value
        before = eventually_or_now(lambda: _rules(lab, nodes), until=lambda r: all(kube_proxy_rule_problems({n: v}) for n, v in r.items()),
                                   timeout=lab.t.DATAPATH_CONVERGENCE, what="kube-proxy's chains on every node", progress=lab.progress)
        found = [daemonset_summary(d) for d in lab.kube.list("DaemonSet") if runs_kube_proxy(d)]
        found_problems = kube_proxy_daemonset_problems(found)
        rule_problems = kube_proxy_rule_problems(before)
        with_rules = sorted(n for n, v in before.items() if kube_proxy_rule_problems({n: v}))
    finally:  # the way off it, also when installing failed half-way
        lab.kube.delete("DaemonSet", "kube-proxy", lab.ns)
        eventually(lambda: lab.pods("k8s-app=kube-proxy,kpr-installed=yes"), until=lambda ps: not ps, timeout=lab.t.PODS_READY,
                   what="kube-proxy's pods gone", describe=lambda ps: f"{len(ps)} left", progress=lab.progress)
        for node in nodes:
            lab.create(_cleanup_pod(lab, node, image))
        names = [_cleanup_pod(lab, n, image)["metadata"]["name"] for n in nodes]

        def phases() -> dict[str, str]:
            return {n: ((lab.kube.get("Pod", n, lab.ns) or {}).get("status") or {}).get("phase", "absent") for n in names}

        cleanup_pods = eventually_or_now(phases, until=lambda ph: all(p in ("Succeeded", "Failed") for p in ph.values()),
                                                 timeout=lab.t.PODS_READY, what="kube-proxy --cleanup on every node", progress=lab.progress)
        for n in names:
            lab.kube.delete("Pod", n, lab.ns)
        lab.kube.delete("ClusterRoleBinding", binding["metadata"]["name"])
    k = KubeProxyInstalled(image, tuple(nodes), status, tuple(found_problems), tuple(rule_problems), tuple(with_rules), cleanup_pods,
                           tuple(kube_proxy_rule_problems(_rules(lab, nodes))))
    evidence.write("kubeproxy-installed.json", k.to_json())
    evidence.figure(kpr_property, f"found on {len(k.nodes_with_rules)} of {len(nodes)} nodes; "
                              f"{len(k.after_cleanup)} rule views with its chains after kube-proxy --cleanup")
    return k


def test_the_daemonset_check_names_an_installed_kube_proxy(installed: KubeProxyInstalled) -> None:
    holds(installed_detection_problems(installed), "kube-proxy installed")


def test_the_rule_check_finds_its_chains_on_every_node(installed: KubeProxyInstalled) -> None:
    holds(installed_rule_coverage_problems(installed), "kube-proxy installed")


def test_kube_proxy_cleanup_leaves_no_chains(installed: KubeProxyInstalled) -> None:
    holds(list(installed.after_cleanup), f"kube-proxy installed: after deleting the DaemonSet and kube-proxy --cleanup on every node "
                                         f"({dict(installed.cleanup_pods)}), rules remain")
