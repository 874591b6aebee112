"""No kube-proxy beside the replacement: no kube-proxy DaemonSet, no IPVS virtual services; the documented way off.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen.

What the kube-proxy suite observes: kube-proxy DaemonSets beside the replacement, and each node's IPVS services."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence


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


#: Cilium's documented way off kube-proxy for an existing installation (Documentation/network/kubernetes/kubeproxy-free.rst,
#: "For existing installations with kube-proxy running as a DaemonSet, remove it by using the following commands")
KUBE_PROXY_REMOVAL = ("kubectl -n kube-system delete ds kube-proxy; kubectl -n kube-system delete cm kube-proxy; "
                      "then on each node: iptables-save | grep -v KUBE | iptables-restore")


def runs_kube_proxy(daemonset: "Mapping[str, Any]") -> bool:
    """A DaemonSet that runs kube-proxy: kubeadm's and kind's label (k8s-app=kube-proxy), or, as distributions may
    ship it under other names and labels, a container of kube-proxy's image or command."""
    if ((daemonset.get("metadata") or {}).get("labels") or {}).get("k8s-app") == "kube-proxy":
        return True
    spec = (((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {})
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        repo = str(c.get("image") or "").split("@", 1)[0].rsplit(":", 1)[0]
        cmd = [str(x) for x in c.get("command") or []][:1]
        if repo.rsplit("/", 1)[-1] == "kube-proxy" or (cmd and cmd[0].rsplit("/", 1)[-1] == "kube-proxy"):
            return True
    return False


def daemonset_summary(daemonset: "Mapping[str, Any]") -> KubeProxyDaemonSet:
    """What :func:`kube_proxy_daemonset_problems` names of a DaemonSet: where it is and how many of its pods are ready."""
    md, st = daemonset.get("metadata") or {}, daemonset.get("status") or {}
    return KubeProxyDaemonSet(md.get("namespace"), md.get("name"), st.get("desiredNumberScheduled", 0), st.get("numberReady", 0))


#: refusing kube-proxy beside the replacement is this project's policy; Cilium documents co-existence
#: (cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@011b4940, the co-existence warning)
KUBE_PROXY_POLICY = ("refusing kube-proxy beside the replacement is pytest-kpr's policy, not Cilium's: Cilium documents co-existence (\"When "
                     "deploying the eBPF kube-proxy replacement under co-existence with kube-proxy on the system, be aware that both "
                     "mechanisms operate independent of each other.\", kubeproxy-free.rst); to accept it on purpose, run with "
                     "--kpr-allow-kube-proxy")


def kube_proxy_accepted(problems: "Sequence[str]", allow: bool) -> str | None:
    """The skip reason when kube-proxy's presence is accepted on purpose (--kpr-allow-kube-proxy) and was found; else None."""
    if problems and allow:
        return "kube-proxy beside the replacement, accepted on purpose (--kpr-allow-kube-proxy): " + "; ".join(problems)
    return None


def kube_proxy_daemonset_problems(daemonsets: "Sequence[KubeProxyDaemonSet]") -> list[str]:
    """A kube-proxy DaemonSet beside KubeProxyReplacement: two authorities program Services (double NAT, rules that
    come back). Named with its pods' count and what to do (KUBE_PROXY_POLICY says whose rule this is)."""
    return [f"DaemonSet {d.namespace}/{d.name} runs kube-proxy ({d.ready}/{d.desired} pods ready) while "
            f"KubeProxyReplacement is on: remove it the way Cilium documents ({KUBE_PROXY_REMOVAL})" for d in daemonsets]


def ipvs_problems(k: KubeProxyObservation) -> list[str]:
    """IPVS virtual services on a node: kube-proxy in IPVS mode (or a leftover of it) answering Services beside Cilium."""
    out = []
    for node, services in sorted(k.ipvs.items()):
        if services is None:
            out.append(f"{node}: /proc/net/ip_vs could not be read, so IPVS is not checked there")
        elif services:
            out.append(f"{node}: {len(services)} IPVS virtual services ({', '.join(list(services)[:3])}{', ...' if len(services) > 3 else ''})")
    return out


def installed_detection_problems(k: KubeProxyInstalled) -> list[str]:
    """With kube-proxy installed on purpose, the DaemonSet check names it (else the check would miss a real one)."""
    if any("runs kube-proxy" in p for p in k.daemonset_problems):
        return []
    return [f"the DaemonSet check found nothing while kube-proxy ran ({dict(k.daemonset)}): {list(k.daemonset_problems)}"]


def installed_rule_coverage_problems(k: KubeProxyInstalled) -> list[str]:
    """With kube-proxy installed, its chains showed on every node (else the iptables check was not exercised there)."""
    missing = sorted(set(k.nodes) - set(k.nodes_with_rules))
    if not missing:
        return []
    return [f"its chains never showed on {', '.join(missing)}, so the iptables check was not exercised there (kube-proxy ran: "
            f"{dict(k.daemonset)})"]
