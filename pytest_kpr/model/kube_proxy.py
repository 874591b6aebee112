"""What the kube-proxy suite observes: kube-proxy DaemonSets beside the replacement, and each node's IPVS services."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class KubeProxyDaemonSet:
    """A DaemonSet that runs kube-proxy: where it is and how many of its pods are ready."""
    namespace: str | None
    name: str | None
    desired: int = 0
    ready: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KubeProxyObservation:
    daemonsets: tuple[KubeProxyDaemonSet, ...]
    #: node -> its IPVS virtual services (None: /proc/net/ip_vs unreadable)
    ipvs: Mapping[str, tuple[str, ...] | None] = field(default_factory=dict)
    kube_proxy_pods: int = 0  # pods labelled k8s-app=kube-proxy

    def to_json(self) -> dict[str, Any]:
        """kubeproxy.json."""
        return {"daemonsets": [d.to_json() for d in self.daemonsets],
                "ipvs": {n: None if v is None else list(v) for n, v in self.ipvs.items()}, "kube_proxy_pods": self.kube_proxy_pods}


@dataclass(frozen=True)
class KubeProxyInstalled:
    """The kube-proxy-installed scenario: kube-proxy run beside the replacement, what the checks found, and what its own
    --cleanup left."""
    image: str
    nodes: tuple[str, ...]
    daemonset: Mapping[str, Any]  # the DaemonSet's status once ready
    daemonset_problems: tuple[str, ...]  # what the DaemonSet check said (judge.kube_proxy.kube_proxy_daemonset_problems)
    rule_problems: tuple[str, ...]  # what the rule check said while it ran (judge.iptables.kube_proxy_rule_problems)
    nodes_with_rules: tuple[str, ...]
    cleanup_pods: Mapping[str, str]  # the --cleanup pod of each node -> its phase
    after_cleanup: tuple[str, ...]  # the rule check after the cleanup

    def to_json(self) -> dict[str, Any]:
        """kubeproxy-installed.json."""
        return {"image": self.image, "nodes": list(self.nodes), "daemonset": dict(self.daemonset),
                "detected": {"daemonset": list(self.daemonset_problems), "rules": list(self.rule_problems),
                             "nodes_with_rules": list(self.nodes_with_rules)},
                "cleanup_pods": dict(self.cleanup_pods), "after_cleanup": list(self.after_cleanup)}
