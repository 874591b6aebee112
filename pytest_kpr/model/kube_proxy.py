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
