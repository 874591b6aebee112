"""Where Cilium's agents run: the agent DaemonSet's namespace and pod selector, found once the cluster is known.

Part of the cluster package because installing, upgrading and reading Cilium all need it; the reads themselves are
:mod:`pytest_kpr.observe.agent`'s.
"""

from __future__ import annotations

from ..core.errors import KprError
from ..k8s.api import KubeAPI

#: where the agents run: the chart's defaults, replaced by :func:`locate_agents` (--kpr-cilium-namespace and the agent
#: DaemonSet's own pod selector) once the cluster is known
CILIUM_NAMESPACE = "kube-system"
AGENT_SELECTOR = "k8s-app=cilium"
#: the labels the chart gives the agent DaemonSet (install/kubernetes/cilium/templates/cilium-agent/daemonset.yaml)
AGENT_DAEMONSET_SELECTORS = ("k8s-app=cilium", "app.kubernetes.io/name=cilium-agent")
AGENT_CONTAINER = "cilium-agent"


class NoAgent(KprError):
    """No cilium-agent pod runs on a node (or at all)."""


def locate_agents(kube: KubeAPI, namespace: str) -> str:
    """Find the cilium-agent DaemonSet in ``namespace`` by the chart's labels and point every agent lookup at its pods
    (its own ``spec.selector``). One line when none or several match. Returns ``namespace/name``."""
    global CILIUM_NAMESPACE, AGENT_SELECTOR
    found: dict[str, dict] = {}
    for sel in AGENT_DAEMONSET_SELECTORS:
        for ds in kube.list("DaemonSet", namespace, sel):
            found.setdefault(ds["metadata"]["name"], ds)
    if not found:
        raise NoAgent(f"no cilium-agent DaemonSet in namespace {namespace} (labels {' or '.join(AGENT_DAEMONSET_SELECTORS)}); "
                      "pass --kpr-cilium-namespace if Cilium runs elsewhere")
    if len(found) > 1:
        raise NoAgent(f"{len(found)} DaemonSets in namespace {namespace} look like cilium-agent ({', '.join(sorted(found))}); "
                      "pytest-kpr needs exactly one")
    (name, ds), = found.items()
    match = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    CILIUM_NAMESPACE = namespace
    AGENT_SELECTOR = ",".join(f"{k}={v}" for k, v in sorted(match.items())) or AGENT_SELECTOR
    return f"{namespace}/{name}"


def agent_pods(kube: KubeAPI) -> list[dict]:
    """Every cilium-agent pod, sorted by node name."""
    pods = kube.list("Pod", CILIUM_NAMESPACE, AGENT_SELECTOR)
    return sorted(pods, key=lambda p: p.get("spec", {}).get("nodeName") or "")
