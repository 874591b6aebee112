"""An in-memory cluster with Cilium in KPR mode, for testing the plugin and its suites without kind.

:class:`FakeCluster` implements :class:`~pytest_kpr.k8s.api.KubeAPI` (objects as dicts, exec) and
:class:`~pytest_kpr.cluster.provider.NodeRunner`. It keeps real state: nodes, namespaces, Deployments
whose pods are scheduled onto workers, get IPs from the node's pod CIDR and become Ready after a few
observations, Services with allocated ClusterIPs and NodePorts, an EndpointSlice controller (one slice per
family from the pods a Service selects; slices added through the API are listed and served too). Its
cilium-agents read the EndpointSlices and derive their load-balancing state through
:mod:`pytest_kpr.testing.lbcp` (the control plane that answers Cilium's own load-balancer scripts), and
answer CLI commands with text and JSON in the real formats, rendered by :mod:`pytest_kpr.testing.render`.

Time is logical: every API call or exec is one tick, so "becomes Ready after 3 ticks" is
deterministic and a test never sleeps. The load-balancer control plane's clock also advances with wall
time, as Cilium's coalescing window does (:meth:`~pytest_kpr.testing.lb.LbState.now_ms`). Faults (see :class:`Faults`) break one property each.
"""

from __future__ import annotations

import builtins
import copy
import fnmatch
import hashlib
import ipaddress
import itertools
import json
import re
import secrets
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from ..core.clock import VirtualClock
from ..core.errors import ApiError
from ..k8s.api import ExecResult, api_version_of, pod_ready
from ..core.versions import Version
from ..parse.addr import family_of
from ..rules.datapath import ZONE_LABEL
from .lbcp.agent import SERVICE_NAME_LABEL
from .agent import FakeAgent
from .config import FakeConfig, Faults
from .lb import LbState
from .node import FakeNodeTools
from .pods import FakeWorkloads
from .rbac import FakeRbac, Request
from .reach import curl_result, reach
from .upgrade import FakeUpgrades
from .view import Obj, pod_ip
from .faults import Fails, Fault, declare


STARTING = {"ready": False, "serving": False, "terminating": False}  # an endpoint's conditions while its pod starts

FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("handwritten_slices_ignored", "selectorless", "the agents take a Service's backends only from the EndpointSlice "
          "controller's slices, never from one written through the API (a selectorless Service gets none)",
          fails=Fails(tests=("test_every_agent_serves_the_selectorless_service_from_its_endpointslice",
                             "starting::test_no_agent_gives_a_starting_endpoint_a_slot"),
                      says=("*selectorless: fake-control-plane lists no backend for kpr-suite-selectorless-*/sl; its EndpointSlice "
                            "names 10.244.*:8080/TCP*",
                            "*starting backends: fake-control-plane picks no backend for kpr-suite-starting-*/st; its ready "
                            "endpoint is 10.244.*:8080*"))),
    Fault("starting_read_as_ready", "starting backends", "the agents read a starting endpoint (ready, serving and "
          "terminating false) as ready: it takes a slot beside the ready ones",
          fails=Fails(tests="test_no_agent_gives_a_starting_endpoint_a_slot",
                      says="*starting backends: fake-control-plane gives the starting endpoint 10.244.*:8080 (ready, serving, "
                           "terminating false) a slot of kpr-suite-starting-*/st: picked [[]*")),
    Fault("missing_agent_on", "setup", "this node runs no cilium-agent pod", default=None,
          proven_by="tests/test_faults.py::test_a_node_without_an_agent_stops_the_run_before_any_suite"),
    Fault("kube_proxy_daemonset", "kube-proxy", "kube-proxy runs as a DaemonSet in kube-system beside the replacement",
          fails=Fails(tests="test_no_kube_proxy_daemonset_runs_beside_the_replacement",
                      says='*kube-proxy: a second authority for Services: DaemonSet kube-system/kube-proxy runs kube-proxy (3/3 pods ready)*kubectl -n kube-system delete ds kube-proxy*(refusing kube-proxy beside the replacement is pytest-kpr\'s policy, not Cilium\'s: Cilium documents co-existence ("When deploying the eBPF kube-proxy replacement under co-existence with kube-proxy*to accept it on purpose, run with --kpr-allow-kube-proxy)*',
                      runs="kube_proxy_installed")),
    Fault("kube_proxy_daemonset_as", "kube-proxy", default=None,
          doc="\"namespace/name\" of a kube-proxy DaemonSet as a distribution may ship it: its own name, no k8s-app label, only kube-proxy's "
              "image and command tell what it is",
          fails=Fails(name="kube-proxy-daemonset-unlabelled", value="kube-network/proxy",
                      tests="test_no_kube_proxy_daemonset_runs_beside_the_replacement",
                      says="*kube-proxy: a second authority for Services: DaemonSet kube-network/proxy runs kube-proxy (3/3 pods ready)*",
                      runs="kube_proxy_installed")),
    Fault("hostport_double_admit", "hostPort", "a second pod asking for a hostPort already taken on its node is admitted there",
          fails=Fails(tests="test_a_second_pod_is_not_admitted_on_the_same_host_port",
                      says="*hostPort: a second pod asking for the same hostPort was admitted on fake-worker (Running): two pods hold one port*")),
    Fault("kube_proxy_no_rules", "kube-proxy installed", "a kube-proxy installed into the cluster runs but never programs its rules",
          fails=Fails(name="installed-kube-proxy-programs-nothing", tests="test_the_rule_check_finds_its_chains_on_every_node",
                      says="*kube-proxy installed: its chains never showed on fake-control-plane, fake-worker, fake-worker2, so the iptables check was not exercised*")),
    Fault("kube_proxy_cleanup_fails", "kube-proxy installed", "kube-proxy --cleanup exits 0 and leaves its rules on the node",
          fails=Fails(tests="test_kube_proxy_cleanup_leaves_no_chains",
                      says="*kube-proxy installed: after deleting the DaemonSet and kube-proxy --cleanup on every node (*), rules remain: fake-control-plane (iptables-nft): kube-proxy chains {'KUBE-SERVICES': *")),
)

__all__ = ["FakeCluster", "FakeConfig", "Faults"]


#: the fake's IPv6 networks (dual stack): kind's docker network for the nodes, and a /64 per node out of kind's default
#: IPv6 pod subnet fd00:10:244::/56 (clusters/kind/dual-stack.yaml)
NODE_NET6 = "fc00:f853:ccd:e793::"
POD_NET6 = "fd00:10:244:{}::"


#: marks an object the fake made as it is and does not reconcile
STATIC = "fake.pytest-kpr/static"


def _labels_match(selector: dict[str, str] | None, labels: dict[str, str] | None) -> bool:
    if not selector:
        return False
    return selector.items() <= (labels or {}).items()  # every key=value of the selector among the labels


def _selector_match(label_selector: str | None, labels: dict[str, str] | None) -> bool:
    """``a=b,c=d`` and ``key`` selectors, as kubectl spells them."""
    if not label_selector:
        return True
    labels = labels or {}
    for term in label_selector.split(","):
        term = term.strip()
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.strip()) != v.strip().lstrip("="):
                return False
        elif labels.get(term) is None:
            return False
    return True


class FakeCluster:
    """See the module docstring. ``FakeCluster(FakeConfig(workers=2))``."""

    def __init__(self, config: FakeConfig | None = None, **overrides: Any):
        self.cfg = replace(config or FakeConfig(), **overrides)
        self.pod_exec_handlers: dict[str, Callable[[Obj, list[str]], tuple[int, str, str]]] = {}
        self.node_exec_handlers: dict[str, Callable[[str, list[str]], tuple[int, str, str]]] = {}
        self.tick = 0
        #: the fake's time: virtual, advanced by whoever waits on the fake (the session installs it as the run's clock)
        self.clock = VirtualClock()
        self.calls: list[tuple[str, ...]] = []  # every API call and exec, for tests to inspect
        #: (namespace, pod) -> (when its deletion started, when its process exits) for pods deleted with a grace period
        self.terminations: dict[tuple[str, str], tuple[float, float]] = {}
        self._objects: dict[str, dict[tuple[str | None, str], Obj]] = {}
        #: RBAC over the Roles and bindings held here, for the user set by ``rbac.act_as`` (off until then: kind's admin)
        self.rbac = FakeRbac(self._objects)
        self._uid = itertools.count(1)
        self._svc_ips = (str(ipaddress.ip_address("10.96.0.0") + i) for i in itertools.count(11))
        self._svc_ips6 = (str(ipaddress.ip_address("fd00:10:96::") + i) for i in itertools.count(0x11))
        self._nodeports = itertools.count(30000)
        self._status_polls: dict[str, int] = {}
        self._build_nodes()
        self._install_cilium()
        if self.cfg.faults.kube_proxy_daemonset:
            self._install_kube_proxy()
        if self.cfg.faults.kube_proxy_daemonset_as:
            self._install_kube_proxy(self.cfg.faults.kube_proxy_daemonset_as)
        self.agents: dict[str, FakeAgent] = {}
        for node in self.node_names():
            if node != self.cfg.faults.missing_agent_on:
                self.agents[node] = FakeAgent(self, node)
        self.lb = LbState(self)
        self.node_tools = FakeNodeTools(self)
        #: node -> ports something listens on in the host namespace (beyond kubelet & co.)
        self.node_listeners: dict[str, list[int]] = {}
        #: node -> extra `nft list ruleset` text (native nft tables)
        self.node_nft_tables: dict[str, str] = {}
        self._endpoint_ids: dict[str, int] = {}
        self.ct: dict[str, list[dict[str, Any]]] = {}
        #: nodes where a kube-proxy installed into the cluster left its rules (until kube-proxy --cleanup ran there)
        self.kube_proxy_nodes: set[str] = set()
        #: nodes where kube-proxy --cleanup ran since (the kube_proxy_rules faults' rules are gone there too)
        self.kube_proxy_cleaned: set[str] = set()
        self.workloads = FakeWorkloads(self)
        self.upgrades = FakeUpgrades(self)

    # -- topology -----------------------------------------------------------------------------------

    def node_names(self) -> list[str]:
        return [key[1] for key in sorted(self._objects["Node"])]

    def _build_nodes(self) -> None:
        names = [f"{self.cfg.name}-control-plane"] + [
            f"{self.cfg.name}-worker{'' if i == 1 else i}" for i in range(1, self.cfg.workers + 1)
        ]
        for i, name in enumerate(names):
            labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
            cidrs = [*([f"10.244.{i}.0/24"] if self.has_ipv4 else []), *([f"{POD_NET6.format(i)}/64"] if self.has_ipv6 else [])]
            if i == 0:
                labels["node-role.kubernetes.io/control-plane"] = ""
            if i < len(self.cfg.zones):
                labels[ZONE_LABEL] = self.cfg.zones[i]
            self._put(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels},
                    "spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs,
                             **({"providerID": f"kind://docker/{self.cfg.name}/{name}"} if self.cfg.node_provider == "kind" else {})},
                    "status": {
                        "addresses": [
                            *([{"type": "InternalIP", "address": f"172.18.0.{i + 2}"}] if self.has_ipv4 else []),
                            *([{"type": "InternalIP", "address": f"{NODE_NET6}{i + 2:x}"}] if self.has_ipv6 else []),
                            {"type": "Hostname", "address": name},
                        ],
                        "nodeInfo": {"kernelVersion": self.cfg.kernel, "kubeletVersion": self.cfg.kubernetes_version},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
            # the agent's CiliumNode: its cilium_host address (CiliumInternalIP) comes from the node's pod CIDR
            self._put({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name},
                       "spec": {"addresses": [*([{"type": "InternalIP", "ip": f"172.18.0.{i + 2}"},
                                                 {"type": "CiliumInternalIP", "ip": f"10.244.{i}.118"}] if self.has_ipv4 else []),
                                              *([{"type": "InternalIP", "ip": f"{NODE_NET6}{i + 2:x}"},
                                                 {"type": "CiliumInternalIP", "ip": f"{POD_NET6.format(i)}76"}] if self.has_ipv6 else [])]}})
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self._put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {}}, "status": {"phase": "Active"}})

    def _install_cilium(self) -> None:
        # the chart's agent DaemonSet (pytest_kpr.observe.agent.locate_agents finds the agents by it); its pods are made below
        labels = {"k8s-app": "cilium", "app.kubernetes.io/name": "cilium-agent"}
        self._put({"apiVersion": "apps/v1", "kind": "DaemonSet",
                   "metadata": {"name": "cilium", "namespace": "kube-system", "labels": dict(labels), "annotations": {STATIC: "true"}},
                   "spec": {"selector": {"matchLabels": {"k8s-app": "cilium"}},
                            "template": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [{"name": "cilium-agent"}]}}},
                   "status": {"desiredNumberScheduled": len(self.node_names()), "numberReady": len(self.node_names())}})
        for i, node in enumerate(self.node_names()):
            if node == self.cfg.faults.missing_agent_on:
                continue  # fault: this node runs no cilium-agent
            self._put(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"cilium-{secrets.token_hex(3)[:5]}",
                        "namespace": "kube-system",
                        "labels": {"k8s-app": "cilium", "app.kubernetes.io/name": "cilium-agent"},
                    },
                    "spec": {"nodeName": node, "hostNetwork": True, "containers": [{"name": "cilium-agent"}]},
                    "status": {
                        "phase": "Running",
                        "podIP": self.node_ip(node),
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )

    def _install_kube_proxy(self, where: str = "kube-system/kube-proxy") -> None:
        """The kube_proxy_daemonset faults: kube-proxy's DaemonSet with a pod per node, as kubeadm and kind name and label
        it, or (``where`` given) under another name and without the k8s-app label."""
        nodes = self.node_names()
        ns, name = where.split("/", 1)
        labels = {"k8s-app": "kube-proxy"} if where == "kube-system/kube-proxy" else {"app": name}
        ctr = {"name": "kube-proxy", "image": f"registry.k8s.io/kube-proxy:{self.cfg.kubernetes_version}",
               "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf"]}
        self._put({"apiVersion": "apps/v1", "kind": "DaemonSet",
                   "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": {STATIC: "true"}},
                   "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {"containers": [ctr]}}},
                   "status": {"desiredNumberScheduled": len(nodes), "numberReady": len(nodes)}})
        for i, node in enumerate(nodes):
            self._put({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": f"{name}-{secrets.token_hex(3)[:5]}", "namespace": ns, "labels": labels},
                       "spec": {"nodeName": node, "hostNetwork": True, "containers": [ctr]},
                       "status": {"phase": "Running", "podIP": self.node_ip(node), "conditions": [{"type": "Ready", "status": "True"}]}})

    @property
    def dual_stack(self) -> bool:
        """Does the fake serve IPv6 beside IPv4 (FakeConfig.ip_families; the dual-stack profile)? Nodes, pods and Services
        then carry an address of each family, as a kind cluster with ``ipFamily: dual`` does (IPv4 first)."""
        return self.has_ipv4 and self.has_ipv6

    @property
    def has_ipv4(self) -> bool:
        """IPv4 is served: every fake but an IPv6-only one (ip_families ``("IPv6",)``, the ipv6 profile, kind's
        ``ipFamily: ipv6``), whose nodes, pods and Services have IPv6 addresses only."""
        return "IPv4" in self.cfg.ip_families or not self.cfg.ip_families

    @property
    def has_ipv6(self) -> bool:
        return "IPv6" in self.cfg.ip_families

    @property
    def families(self) -> list[str]:
        """The cluster's families, its first (primary) first: IPv4 first on a dual-stack fake, as kind lists them."""
        return [f for f, on in (("IPv4", self.has_ipv4), ("IPv6", self.has_ipv6)) if on]

    def node_ip6(self, node: str) -> str:
        """The node's IPv6 InternalIP (dual stack, IPv6 only)."""
        return f"{NODE_NET6}{self.node_names().index(node) + 2:x}"

    def node_addresses(self) -> dict[str, str]:
        """Every node's InternalIP (both families on a dual-stack fake) -> its node."""
        return {ip: n for n in self.node_names() for ip in [self.node_ip_of(n, f) for f in self.families]}

    def node_ip_of(self, node: str, family: str) -> str:
        return self.node_ip6(node) if family == "IPv6" else self.node_ip(node)

    def node_ip(self, node: str) -> str:
        """The node's first InternalIP: its IPv4 one, or its IPv6 one on an IPv6-only fake."""
        n = self._objects["Node"][(None, node)]
        return next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")

    def cilium_internal_ip(self, node: str, family: str = "IPv4") -> str:
        cn = self._objects["CiliumNode"][(None, node)]
        return next(a["ip"] for a in cn["spec"]["addresses"] if a["type"] == "CiliumInternalIP" and family_of(a["ip"]) == family)

    @property
    def version(self) -> Version:
        return Version.parse(self.cfg.cilium_version)

    # -- storage ------------------------------------------------------------------------------------

    def _put(self, obj: Obj) -> Obj:
        kind = obj["kind"]
        md = obj.setdefault("metadata", {})
        md.setdefault("uid", f"uid-{next(self._uid)}")
        md.setdefault("labels", md.get("labels") or {})
        md.setdefault("creationTick", self.tick)
        # the API server's stamp, in wall time as a real one's (what `kpr cleanup --older-than` reads)
        md.setdefault("creationTimestamp", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self._objects.setdefault(kind, {})[(md.get("namespace"), md["name"])] = obj
        return obj

    def _advance(self, *call: str) -> None:
        self.tick += 1
        self.calls.append(call)
        self._reconcile()

    def _reconcile(self) -> None:
        """Controllers: Deployments -> pods, pods -> Ready after pod_ready_ticks, terminating pods gone when their time is up."""
        self._reap()
        for dep in list(self._objects.get("Deployment", {}).values()):
            self._reconcile_deployment(dep)
        for ds in list(self._objects.get("DaemonSet", {}).values()):
            if not ds["metadata"].get("annotations", {}).get(STATIC):  # the kube_proxy_daemonset faults' have their pods already
                self._reconcile_daemonset(ds)
        for pod in self._objects.get("Pod", {}).values():
            st = pod.setdefault("status", {})
            if st.get("phase") == "Pending" and pod["spec"].get("nodeName") and self.tick - pod["metadata"]["creationTick"] >= self.cfg.pod_ready_ticks:
                st["phase"] = "Running"
                st["conditions"] = [{"type": "Ready", "status": "True"}]
        self._kube_proxy_effects()
        if hasattr(self, "workloads"):
            self.workloads.reconcile()
        if hasattr(self, "upgrades"):
            self.upgrades.reconcile()
            for pod in self._objects.get("Pod", {}).values():
                self.upgrades.track(pod)

    def start_roll(self, to_version: str) -> None:
        """Upgrade (or downgrade) Cilium: agents replaced node by node (pytest_kpr.testing.upgrade)."""
        self.upgrades.start(to_version)

    def _reconcile_deployment(self, dep: Obj) -> None:
        ns = dep["metadata"]["namespace"]
        name = dep["metadata"]["name"]
        want = int(dep.get("spec", {}).get("replicas", 1))
        mine = [p for p in self.pods(ns) if (p["metadata"].get("ownerReferences") or [{}])[0].get("name") == name]
        while len(mine) > want:
            victim = mine.pop()
            del self._objects["Pod"][(ns, victim["metadata"]["name"])]
        workers = [n for n in self.node_names() if not n.endswith("control-plane")] or self.node_names()
        while len(mine) < want:
            counts = {w: 0 for w in workers}
            for p in self._objects.get("Pod", {}).values():
                if p["spec"].get("nodeName") in counts:
                    counts[p["spec"]["nodeName"]] += 1
            node = min(workers, key=lambda w: (counts[w], w))
            pod = self._new_pod(ns, f"{name}-{secrets.token_hex(5)[:9]}-{secrets.token_hex(3)[:5]}", dep["spec"]["template"], node, owner=name)
            mine.append(pod)
        ready = sum(1 for p in mine if p["status"].get("phase") == "Running")
        dep["status"] = {"replicas": len(mine), "readyReplicas": ready, "availableReplicas": ready}

    #: the scheduler's NodePorts filter (kubernetes pkg/scheduler/framework/plugins/nodeports/node_ports.go ErrReason;
    #: datapath.SRC_HOSTPORT_SCHED), as FailedScheduling words it for a pod bound to one node by its nodeSelector
    HOST_PORTS_TAKEN = "0/{n} nodes are available: 1 node(s) didn't have free ports for the requested pod ports, {m} node(s) didn't match Pod's node affinity/selector."

    def _host_port_taken(self, pod: Obj) -> bool:
        want = {(cp.get("protocol", "TCP"), cp["hostPort"]) for c in pod["spec"].get("containers") or [] for cp in c.get("ports") or [] if cp.get("hostPort")}
        for other in self._objects.get("Pod", {}).values():
            if other is pod or other["spec"].get("nodeName") != pod["spec"]["nodeName"] or other.get("status", {}).get("phase") not in ("Pending", "Running"):
                continue
            used = {(cp.get("protocol", "TCP"), cp["hostPort"]) for c in other["spec"].get("containers") or [] for cp in c.get("ports") or [] if cp.get("hostPort")}
            if want & used:
                return True
        return False

    def _unschedulable(self, pod: Obj, message: str) -> None:
        """The scheduler found no node: the pod stays Pending, unbound, with PodScheduled False."""
        n = len(self.node_names())
        del pod["spec"]["nodeName"]
        pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                                             "message": message.format(n=n, m=n - 1)}]}

    def _reconcile_daemonset(self, ds: Obj) -> None:
        """A pod per node (tolerations are not modelled: every node takes one), Running after pod_ready_ticks."""
        ns, name = ds["metadata"]["namespace"], ds["metadata"]["name"]
        mine = {p["spec"].get("nodeName"): p for p in self.pods(ns) if (p["metadata"].get("ownerReferences") or [{}])[0].get("name") == name}
        for node in self.node_names():
            if node not in mine:
                mine[node] = self._new_pod(ns, f"{name}-{secrets.token_hex(3)[:5]}", ds["spec"]["template"], node, owner=name)
        ready = sum(1 for p in mine.values() if p["status"].get("phase") == "Running")
        ds["status"] = {"desiredNumberScheduled": len(self.node_names()), "numberReady": ready, "currentNumberScheduled": len(mine)}

    def _kube_proxy_effects(self) -> None:
        """A running kube-proxy programs its rules on its node (and they stay after it is gone, as kube-proxy leaves them:
        Cilium's kubeproxy-free.rst removes them with iptables-save | grep -v KUBE | iptables-restore); a ``kube-proxy
        --cleanup`` pod removes them and exits (kube-proxy's --cleanup flag). Faults: kube_proxy_no_rules,
        kube_proxy_cleanup_fails."""
        for pod in self._objects.get("Pod", {}).values():
            cmd = ((pod["spec"].get("containers") or [{}])[0].get("command") or [])[:1]
            node = pod["spec"].get("nodeName")
            if cmd != ["kube-proxy"] or node is None or pod["status"].get("phase") != "Running":
                continue
            args = (pod["spec"].get("containers") or [{}])[0].get("command") or []
            if "--cleanup" in args:
                if not self.cfg.faults.kube_proxy_cleanup_fails:  # it removes kube-proxy's rules, whoever left them
                    self.kube_proxy_nodes.discard(node)
                    self.kube_proxy_cleaned.add(node)
                pod["status"]["phase"] = "Succeeded"
                pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
            elif not self.cfg.faults.kube_proxy_no_rules:
                self.kube_proxy_nodes.add(node)

    def _pod_ip(self, node: str) -> str:
        idx = self.node_names().index(node)
        used = {a.get("ip") for p in self._objects.get("Pod", {}).values() for a in p.get("status", {}).get("podIPs") or []}
        for host in range(10, 250):
            ip = f"10.244.{idx}.{host}"
            if ip not in used and self._pod_ip6(node, ip) not in used:  # an IPv6-only pod's address has this host part
                return ip
        raise ApiError(500, "InternalError", f"node {node} ran out of pod IPs")

    def _new_pod(self, ns: str, name: str, template: Obj, node: str, owner: str | None = None) -> Obj:
        md = copy.deepcopy(template.get("metadata") or {})
        md.update({"name": name, "namespace": ns})
        if owner:
            md["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner}]
        host_net = bool((template.get("spec") or {}).get("hostNetwork"))
        if host_net:
            ips = [self.node_ip_of(node, f) for f in self.families]
        else:
            ip4 = self._pod_ip(node)  # an IPv6 address takes its host part (on an IPv6-only fake too)
            ips = [ip4 if f == "IPv4" else self._pod_ip6(node, ip4) for f in self.families]
        ip = ips[0]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": md,
            "spec": {**copy.deepcopy(template.get("spec") or {}), "nodeName": node},
            "status": {
                "phase": "Pending",
                "podIP": ip,
                "podIPs": [{"ip": i} for i in ips],
                "hostIP": self.node_ip(node),
                "conditions": [],
            },
        }
        return self._put(pod)

    def _pod_ip6(self, node: str, ip4: str) -> str:
        """A pod's IPv6 address in its node's IPv6 pod CIDR, with the host part of its IPv4 one."""
        return f"{POD_NET6.format(self.node_names().index(node))}{int(ip4.rsplit('.', 1)[1]):x}"

    def pods(self, ns: str | None = None) -> list[Obj]:
        return [p for (pns, _), p in sorted(self._objects.get("Pod", {}).items()) if ns is None or pns == ns]

    pod_ready = staticmethod(pod_ready)

    # -- Services and EndpointSlices ------------------------------------------------------------------

    def services(self) -> list[Obj]:
        return [s for _, s in sorted(self._objects.get("Service", {}).items())]

    def local_redirect_policies(self) -> list[Obj]:
        return [p for _, p in sorted(self._objects.get("CiliumLocalRedirectPolicy", {}).items())]

    def service(self, key: str) -> Obj:
        """The Service ``namespace/name`` (an empty dict if there is none)."""
        return next((s for s in self.services() if f"{s['metadata']['namespace']}/{s['metadata']['name']}" == key), {})

    def endpoints_of(self, svc: Obj) -> list[Obj]:
        """Pods selected by a Service, in pod-name order (ready or not)."""
        sel = svc.get("spec", {}).get("selector")
        ns = svc["metadata"]["namespace"]
        return [p for p in self.pods(ns) if _labels_match(sel, p["metadata"].get("labels"))]

    def node_labels(self, node: str) -> dict[str, str]:
        """The node's labels."""
        n = self._objects["Node"].get((None, node))
        return dict(((n or {}).get("metadata", {}).get("labels") or {}))

    def zone_of(self, node: str) -> str | None:
        """The node's topology.kubernetes.io/zone label."""
        n = self._objects["Node"].get((None, node))
        return ((n or {}).get("metadata", {}).get("labels") or {}).get(ZONE_LABEL)

    def endpointslices(self, svc: Obj) -> list[Obj]:
        """The Service's EndpointSlices, as the agents read them: the EndpointSlice controller's (a Service with a selector:
        one per family, made from the pods it selects) and any added through the API that name the Service in their
        ``kubernetes.io/service-name`` label (a selectorless Service's only ones, as in Kubernetes)."""
        md = svc["metadata"]
        if self.cfg.faults.handwritten_slices_ignored:
            return self._controller_slices(svc)
        slices = self._controller_slices(svc) + [
            o for (ns, _), o in sorted(self._objects.get("EndpointSlice", {}).items())
            if ns == md["namespace"] and (o["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == md["name"]]
        if self.cfg.faults.starting_read_as_ready:  # fault: starting endpoints read as ready
            return [{**es, "endpoints": [{**ep, "conditions": {"ready": True}} if ep.get("conditions") == STARTING else ep
                                         for ep in es.get("endpoints") or []]} for es in slices]
        return slices

    def _controller_slices(self, svc: Obj) -> list[Obj]:
        if not svc["spec"].get("selector"):
            return []
        return [self._endpointslice(svc, f) for f in svc["spec"].get("ipFamilies") or ["IPv4"]]

    def _all_endpointslices(self) -> list[Obj]:
        """Every EndpointSlice the API lists: the controller's for each Service with a selector, then those added."""
        return [es for s in self.services() for es in self._controller_slices(s)] + [
            o for _, o in sorted(self._objects.get("EndpointSlice", {}).items())]

    def _endpointslice(self, svc: Obj, family: str = "IPv4") -> Obj:
        ports = [
            {"name": p.get("name", ""), "port": int(p.get("targetPort", p["port"])), "protocol": p.get("protocol", "TCP")}
            for p in svc["spec"].get("ports", [])
        ]
        eps = [
            {
                "addresses": [pod_ip(p, family)],
                "conditions": {"ready": self.pod_ready(p) and not p["metadata"].get("deletionTimestamp"), "serving": self.pod_ready(p),
                               "terminating": bool(p["metadata"].get("deletionTimestamp"))},
                "nodeName": p["spec"]["nodeName"],
                "targetRef": {"kind": "Pod", "name": p["metadata"]["name"], "namespace": p["metadata"]["namespace"]},
                **({"zone": zone} if (zone := self.zone_of(p["spec"]["nodeName"])) else {}),
            }
            for p in self.endpoints_of(svc)
            if pod_ip(p, family) is not None  # the controller lists a pod once it has an address of the slice's family
        ]
        if svc["spec"].get("trafficDistribution") in ("PreferClose", "PreferSameZone"):
            # the EndpointSlice controller's hints (datapath.SRC_PREFER_CLOSE; Kubernetes 1.34 names PreferClose PreferSameZone)
            for ep in eps:
                if ep["conditions"]["ready"] and ep.get("zone"):
                    ep["hints"] = {"forZones": [{"name": ep["zone"]}]}
        name = svc["metadata"]["name"]
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{name}-{svc['metadata']['uid'][-5:]}" + ("" if family == "IPv4" else "-v6"),
                "namespace": svc["metadata"]["namespace"],
                "labels": {"kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
            },
            "addressType": family,
            "endpoints": eps,
            "ports": ports,
        }

    SHARING_KEY = "lbipam.cilium.io/sharing-key"

    def _pool_ips(self, svc: Obj) -> list[str]:
        """The addresses of the pools whose service selector matches ``svc`` (no selector: every Service;
        datapath.SRC_LBIPAM_SELECTOR), matchLabels only, with LB-IPAM's two keys for the namespace and the name."""
        meta = svc.get("metadata") or {}
        labels = {**(meta.get("labels") or {}), "io.kubernetes.service.namespace": meta.get("namespace", ""),
                  "io.kubernetes.service.name": meta.get("name", "")}
        ips: list[str] = []
        for pool in self._objects.get("CiliumLoadBalancerIPPool", {}).values():
            wanted = ((pool.get("spec") or {}).get("serviceSelector") or {}).get("matchLabels") or {}
            if any(labels.get(k) != v for k, v in wanted.items()):
                continue
            for b in pool.get("spec", {}).get("blocks") or []:
                if "start" in b:
                    a = ipaddress.ip_address(b["start"])
                    z = ipaddress.ip_address(b.get("stop", b["start"]))
                    while a <= z:
                        ips.append(str(a))
                        a += 1
                elif "cidr" in b:
                    ips += [str(h) for h in ipaddress.ip_network(b["cidr"]).hosts()]
        return ips

    def _lbipam(self, svc: Obj, old: Obj | None) -> None:
        """LB-IPAM, as much as the suites need: allocate from the pools that select the Service, an address of each of its
        families (datapath.SRC_LBIPAM_FAMILIES: PreferDualStack gets both); services with the same sharing key share an IP
        while their ports do not conflict, otherwise they get another one."""
        ips = self._pool_ips(svc)
        if not ips:
            return
        key = (svc["metadata"].get("annotations") or {}).get(self.SHARING_KEY)
        me = (svc["metadata"]["namespace"], svc["metadata"]["name"])
        ports = {(p["port"], p.get("protocol", "TCP")) for p in svc["spec"].get("ports", [])}
        current = [i["ip"] for i in (old or svc).get("status", {}).get("loadBalancer", {}).get("ingress") or []]
        users: dict[str, list[tuple[str | None, set]]] = {}
        for other in self.services():
            if (other["metadata"]["namespace"], other["metadata"]["name"]) == me:
                continue
            okey = (other["metadata"].get("annotations") or {}).get(self.SHARING_KEY)
            oports = {(p["port"], p.get("protocol", "TCP")) for p in other["spec"].get("ports", [])}
            for ing in other.get("status", {}).get("loadBalancer", {}).get("ingress") or []:
                users.setdefault(ing["ip"], []).append((okey, oports))

        def fits(ip: str) -> bool:
            return all(key is not None and okey == key and not (oports & ports) for okey, oports in users.get(ip, []))

        got: list[str] = []
        for family in svc["spec"].get("ipFamilies") or ["IPv4"]:
            mine = [i for i in ips if family_of(i) == family]
            held = [i for i in current if family_of(i) == family]
            if held and (fits(held[0]) or not self.cfg.lbipam_reassigns_on_conflict):
                ip: str | None = held[0]  # LB-IPAM keeps an assigned IP
            else:
                ip = next((i for i in mine if i in users and key is not None and fits(i)), None) or next((i for i in mine if i not in users), None)
            if ip is not None:
                got.append(ip)
        if got:
            svc.setdefault("status", {})["loadBalancer"] = {"ingress": [{"ip": ip} for ip in got]}

    def _admit_service(self, svc: Obj, old: Obj | None = None) -> None:
        spec = svc.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        if old is not None:
            spec.setdefault("clusterIP", old["spec"].get("clusterIP"))
            spec.setdefault("clusterIPs", old["spec"].get("clusterIPs"))
        families = self._service_families(svc)
        if not spec.get("clusterIP"):
            spec["clusterIP"] = next(self._svc_ips6 if families[0] == "IPv6" else self._svc_ips)  # the first family's
        ips = [i for i in spec.get("clusterIPs") or [spec["clusterIP"]] if family_of(i) in families] or [spec["clusterIP"]]
        if "IPv6" in families and not any(family_of(i) == "IPv6" for i in ips):
            ips.append(next(self._svc_ips6))
        spec["clusterIPs"], spec["ipFamilies"] = ips, [family_of(i) for i in ips]
        taken = {
            p.get("nodePort")
            for s in self.services()
            if s is not old and (s["metadata"]["namespace"], s["metadata"]["name"]) != (svc["metadata"]["namespace"], svc["metadata"]["name"])
            for p in s["spec"].get("ports", [])
        }
        for port in spec.get("ports", []):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port["port"])
            if spec["type"] in ("NodePort", "LoadBalancer"):
                if port.get("nodePort"):
                    if port["nodePort"] in taken:
                        raise ApiError(422, "Invalid", f"Service \"{svc['metadata']['name']}\" is invalid: spec.ports[0].nodePort: Invalid value: {port['nodePort']}: provided port is already allocated")
                else:
                    port["nodePort"] = next(p for p in self._nodeports if p not in taken)
        if spec["type"] == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local" and not spec.get("healthCheckNodePort"):
            taken |= {s["spec"].get("healthCheckNodePort") for s in self.services()} | {p.get("nodePort") for p in spec.get("ports", [])}
            spec["healthCheckNodePort"] = next(p for p in self._nodeports if p not in taken)  # the apiserver allocates it
        if spec["type"] == "LoadBalancer":
            self._lbipam(svc, old)

    def _service_families(self, svc: Obj) -> list[str]:
        """The families the apiserver gives a Service (Kubernetes' dual-stack rules, as much as the suites use):
        ``ipFamilyPolicy`` SingleStack (the default) the cluster's first family, PreferDualStack every family the cluster
        has, RequireDualStack both or a 422 on a single-stack cluster."""
        spec = svc["spec"]
        policy = spec.get("ipFamilyPolicy") or "SingleStack"
        cluster = self.families
        if policy == "RequireDualStack" and len(cluster) < 2:
            raise ApiError(422, "Invalid", f"Service \"{svc['metadata']['name']}\" is invalid: spec.ipFamilyPolicy: Invalid value: "
                                           "\"RequireDualStack\": this cluster is not configured for dual-stack services")
        return cluster if policy != "SingleStack" else cluster[:1]

    # -- Cilium endpoints, conntrack, reachability -----------------------------------------------------

    def _endpoint_id(self, pod: Obj) -> int:
        uid = pod["metadata"]["uid"]
        if uid not in self._endpoint_ids:
            self._endpoint_ids[uid] = 100 + 37 * len(self._endpoint_ids)
        return self._endpoint_ids[uid]

    def endpoints_on(self, node: str) -> list[dict[str, Any]]:
        """Cilium endpoints (pods with their own network) on a node: id, host-side veth, ifindex, IP."""
        out = []
        for p in self.pods():
            if p["spec"].get("nodeName") != node or p["spec"].get("hostNetwork"):
                continue
            eid = self._endpoint_id(p)
            out.append({
                "id": eid, "ifname": "lxc" + hashlib.sha1(p["metadata"]["uid"].encode()).hexdigest()[:12], "ifindex": 10 + eid % 1000,
                "ipv4": pod_ip(p, "IPv4"), "ipv6": pod_ip(p, "IPv6"), "namespace": p["metadata"]["namespace"], "pod": p["metadata"]["name"],
            })
        return out

    def _cilium_endpoint(self, pod: Obj) -> Obj:
        return {
            "apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint",
            "metadata": {"name": pod["metadata"]["name"], "namespace": pod["metadata"]["namespace"], "labels": dict(pod["metadata"].get("labels") or {})},
            "status": {"id": self._endpoint_id(pod), "networking": {"addressing": [{**({"ipv4": pod_ip(pod, "IPv4")} if self.has_ipv4 else {}), **({"ipv6": pod_ip(pod, "IPv6")} if self.has_ipv6 else {})}], "node": self.node_ip(pod["spec"]["nodeName"])}},
        }

    def ct_entries(self, node: str) -> list[dict[str, Any]]:
        """The agent's conntrack entries on a node (dicts in render.ct_line's shape)."""
        return list(self.ct.get(node, []))

    def curl_from_node(self, node: str, args: list[str], host_network: bool = True, pod: Obj | None = None) -> tuple[int, str, str]:
        """``curl -s -o /dev/null -w FMT --max-time N URL`` from a node's host namespace (or ``pod`` on it)."""
        fmt, max_time, url = "", 0.0, ""
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-w", "--write-out"):
                fmt = args[i + 1]
                i += 2
            elif a in ("-m", "--max-time", "--connect-timeout"):
                max_time = float(args[i + 1])
                i += 2
            elif a == "-o":
                i += 2
            elif a.startswith("-"):
                i += 1
            else:
                url = a
                i += 1
        m = re.fullmatch(r"http://([0-9.]+|\[[0-9a-f:]+\]):(\d+)(/.*)?", url)
        if m is None or ("[" in url and "-g" not in args):  # without -g, curl takes [..] for a glob range
            return 3, "", f"curl: (3) URL rejected: {url}\n"
        ip, port = m.group(1).strip("[]"), int(m.group(2))
        outcome = reach(self, node, host_network=host_network, access="connect", ip=ip, port=port)
        if pod is not None:  # a pod that reaches itself through its Service (pytest_kpr.testing.pods: hairpin)
            outcome = self.workloads.hairpin(pod, outcome, m.group(3) or "/")
        code, secs, rc, err = curl_result(outcome, ip, port, max_time or 300.0)
        out = fmt.replace("%{http_code}", f"{code:03d}").replace("%{time_total}", f"{secs:.6f}").replace("\\n", "\n")
        return rc, out, err

    def http_verdict(self, node: str, ip: str, port: int, max_time: float) -> tuple[int, float, int, str]:
        """(http_code, seconds, curl exit, stderr) of an HTTP GET from outside the cluster to ``node``'s ip:port."""
        return curl_result(reach(self, node, host_network=True, access="connect", ip=ip, port=port, outside=True), ip, port, max_time)

    # -- KubeAPI --------------------------------------------------------------------------------------

    def server_version(self, timeout: float | None = None) -> str:
        """``timeout``: as the real client's (it answers at once)."""
        self._advance("version")
        self.rbac.check(Request("get", url="/version"))
        return self.cfg.kubernetes_version

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        self._advance("get", kind, namespace or "", name)
        self.rbac.check_call("get", kind, namespace, name)
        if kind in ("EndpointSlice", "CiliumEndpoint"):
            for s in self._list(kind, namespace):
                if s["metadata"]["name"] == name:
                    return s
            return None
        obj = self._objects.get(kind, {}).get((namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        api_version_of(kind)
        self._advance("list", kind, namespace or "", label_selector or "")
        self.rbac.check_call("list", kind, namespace)
        return self._list(kind, namespace, label_selector)

    def _list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[Obj]:
        if kind == "EndpointSlice":
            items = self._all_endpointslices()
        elif kind == "CiliumEndpoint":
            items = [self._cilium_endpoint(p) for p in self.pods() if not p["spec"].get("hostNetwork") and p["spec"].get("nodeName")]
        else:
            items = [o for _, o in sorted(self._objects.get(kind, {}).items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))]
        return [
            copy.deepcopy(o)
            for o in items
            if (namespace is None or o["metadata"].get("namespace") == namespace)
            and _selector_match(label_selector, o["metadata"].get("labels"))
        ]

    def create(self, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        kind = obj["kind"]
        if kind == "SelfSubjectAccessReview":  # answered, never stored (as the API server does)
            return self._access_review(obj)
        if kind == "SelfSubjectReview":  # who am I: answered, never stored
            self._advance("create", kind, "", "")
            return {**obj, "status": {"userInfo": self.rbac.who()}}
        api_version_of(kind)
        md = obj.setdefault("metadata", {})
        ns, name = md.get("namespace"), md.get("name")
        self._advance("create", kind, ns or "", name or "")
        self.rbac.check_call("create", kind, ns, name or "")
        self.rbac.admit_binding(obj)
        if kind != "Namespace" and kind != "Node" and ns is not None and (None, ns) not in self._objects.get("Namespace", {}):
            raise ApiError(404, "NotFound", f'namespaces "{ns}" not found')
        if (ns, name) in self._objects.get(kind, {}):
            raise ApiError(409, "AlreadyExists", f'{kind.lower()}s "{name}" already exists')
        if kind == "Service":
            self._admit_service(obj)
        if kind == "Pod":
            spec = obj.get("spec", {})
            node = spec.get("nodeName") or (spec.get("nodeSelector") or {}).get("kubernetes.io/hostname") or self.node_names()[-1]
            pod = self._new_pod(ns, name, {"metadata": md, "spec": spec}, node)
            if not spec.get("nodeName") and self._host_port_taken(pod) and not self.cfg.faults.hostport_double_admit:
                self._unschedulable(pod, self.HOST_PORTS_TAKEN)
            return copy.deepcopy(pod)
        if kind == "Namespace":
            obj["status"] = {"phase": "Active"}
        self._put(obj)
        if kind == "Service":
            self.lb.service_changed(f"{ns}/{name}", obj)
        self._reconcile()
        return copy.deepcopy(obj)

    def patch(self, kind: str, name: str, namespace: str | None, patch: Obj) -> Obj:
        self._advance("patch", kind, namespace or "", name)
        self.rbac.check_call("patch", kind, namespace, name)
        cur = self._objects.get(kind, {}).get((namespace, name))
        if cur is None:
            raise ApiError(404, "NotFound", f'{kind.lower()}s "{name}" not found')
        new = _merge_patch(copy.deepcopy(cur), patch)
        if kind == "Service":
            self._admit_service(new, old=cur)
        self._objects[kind][(namespace, name)] = new
        if kind == "Service":
            self.lb.service_changed(f"{namespace}/{name}", new)
        self._reconcile()
        return copy.deepcopy(new)

    def delete(self, kind: str, name: str, namespace: str | None = None, grace_period_seconds: int | None = None) -> None:
        self._advance("delete", kind, namespace or "", name)
        self.rbac.check_call("delete", kind, namespace, name)
        pod = self._objects.get("Pod", {}).get((namespace, name)) if kind == "Pod" else None
        if pod is not None and self._terminate(pod, grace_period_seconds):
            return
        gone = self._objects.get(kind, {}).pop((namespace, name), None)
        if kind == "Service" and gone is not None:
            self.lb.service_changed(f"{namespace}/{name}", None)
        if kind == "Namespace":
            for k, objs in self._objects.items():
                for key in [key for key in objs if key[0] == name]:
                    if k == "Service":
                        self.lb.service_changed(f"{name}/{key[1]}", None)
                    del objs[key]
        if kind in ("Deployment", "DaemonSet"):
            for p in self.pods(namespace):
                if (p["metadata"].get("ownerReferences") or [{}])[0].get("name") == name:
                    del self._objects["Pod"][(namespace, p["metadata"]["name"])]

    def _terminate(self, pod: Obj, grace: int | None) -> bool:
        """A running pod deleted with a grace period terminates as the kubelet runs it: a preStop ``sleep N`` first (the
        container keeps serving, still Ready), then SIGTERM, on which the probe image's servers exit at once; the pod is
        gone at the end of the sleep or of the grace period, whichever comes first. Meanwhile it carries a
        deletionTimestamp and its EndpointSlice entry reads ready false, serving true, terminating true (the conditions
        as pkg/k8s/endpoints.go@eea4c1e8 quotes discovery/v1: serving "is identical to ready except that it is set
        regardless of the terminating state of endpoints"). Without a preStop sleep, or with grace 0, it goes at once.
        True if the pod is now terminating (not yet gone)."""
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        now = self.clock.time()
        if pod["metadata"].get("deletionTimestamp"):  # already terminating: grace 0 ends it now, anything else changes nothing
            if grace == 0:
                self.terminations[key] = (self.terminations[key][0], now)
                self._objects["Pod"].pop(key, None)
            return True
        period = float(pod["spec"].get("terminationGracePeriodSeconds", 30) if grace is None else grace)
        hold = 0.0
        for c in pod["spec"].get("containers") or []:
            cmd = ((c.get("lifecycle") or {}).get("preStop") or {}).get("exec", {}).get("command") or []
            if cmd[:1] == ["sleep"] and len(cmd) == 2:
                hold = max(hold, float(cmd[1]))
        hold = min(hold, period)
        self.terminations[key] = (now, now + hold)
        if hold <= 0 or pod.get("status", {}).get("phase") != "Running":
            return False
        pod["metadata"]["deletionTimestamp"] = "2026-12-01T06:00:00Z"
        return True

    def _reap(self) -> None:
        """Terminating pods whose time is up are gone (their process exited)."""
        now = self.clock.time()
        for key, (_, exit_at) in list(self.terminations.items()):
            pod = self._objects.get("Pod", {}).get(key)
            if pod is not None and pod["metadata"].get("deletionTimestamp") and now >= exit_at:
                del self._objects["Pod"][key]

    def _access_review(self, obj: Obj) -> Obj:
        """SelfSubjectAccessReview: allowed unless FakeConfig.rbac_denied names it ("VERB RESOURCE[/SUB]" or "VERB URL",
        optionally " in NAMESPACE")."""
        spec = obj.get("spec") or {}
        res, url = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        self._advance("create", "SelfSubjectAccessReview", "", "")
        verdict = self.rbac.review(spec)
        if verdict is not None:
            obj["status"] = {"allowed": verdict, **({} if verdict else {"reason": "no RBAC rule of the fake's allows it"})}
            return obj
        if res:
            what = res.get("resource", "") + (f"/{res['subresource']}" if res.get("subresource") else "")
            keys = {f"{res.get('verb')} {what}", f"{res.get('verb')} {what} in {res.get('namespace', '')}"}
        else:
            keys = {f"{(url or {}).get('verb')} {(url or {}).get('path')}"}
        denied = bool(keys & set(self.cfg.rbac_denied))
        obj["status"] = {"allowed": not denied, **({"reason": "denied by the fake's rbac_denied"} if denied else {})}
        return obj

    def logs(self, namespace: str, pod: str, container: str | None = None) -> str:
        self._advance("logs", namespace, pod)
        self.rbac.check(Request("get", "", "pods/log", namespace, pod))
        if (namespace, pod) not in self._objects.get("Pod", {}):
            raise ApiError(404, "NotFound", f'pods "{pod}" not found')
        return self.upgrades.log(namespace, pod) or self.workloads.pod_logs(namespace, pod)

    def exec(
        self, namespace: str, pod: str, argv: Sequence[str], container: str | None = None, timeout: float = 60.0
    ) -> ExecResult:
        self._advance("exec", namespace, pod, *argv)
        self.rbac.check(Request("create", "", "pods/exec", namespace, pod))
        obj = self._objects.get("Pod", {}).get((namespace, pod))
        where = f"pod {namespace}/{pod}"
        if obj is None:
            raise ApiError(404, "NotFound", f'pods "{pod}" not found')
        if obj["metadata"].get("labels", {}).get("k8s-app") == "cilium":
            rc, out, err = self.agents[obj["spec"]["nodeName"]].handle(list(argv))
            return ExecResult(tuple(argv), rc, out, err, where)
        shell_node = obj["metadata"].get("labels", {}).get("kpr.cilium.io/node-shell")
        if shell_node is not None:
            from ..cluster.nodeshell import NSENTER

            if tuple(argv[: len(NSENTER)]) != NSENTER:
                return ExecResult(tuple(argv), 1, "", "nsenter: expected the host-namespace prefix", where)
            r = self.run(obj["spec"]["nodeName"], list(argv[len(NSENTER):]), timeout)
            return ExecResult(tuple(argv), r.returncode, r.stdout, r.stderr, where)
        handler = self.pod_exec_handlers.get(pod) or self.pod_exec_handlers.get("*")
        if handler is None:
            return ExecResult(tuple(argv), 127, "", f'exec: "{argv[0]}": executable file not found in $PATH', where)
        rc, out, err = handler(obj, list(argv))
        return ExecResult(tuple(argv), rc, out, err, where)

    # -- NodeRunner -----------------------------------------------------------------------------------

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> ExecResult:
        self._advance("node", node, *argv)
        if (None, node) not in self._objects["Node"]:
            return ExecResult(tuple(argv), 1, "", f"Error response from daemon: No such container: {node}", f"node {node}")
        handler = self.node_exec_handlers.get(argv[0]) if argv else None
        if handler is None:
            return ExecResult(tuple(argv), 127, "", f"OCI runtime exec failed: exec: \"{argv[0]}\": executable file not found in $PATH", f"node {node}")
        rc, out, err = handler(node, list(argv))
        return ExecResult(tuple(argv), rc, out, err, f"node {node}")

    # -- conveniences for tests -----------------------------------------------------------------------

    def find(self, kind: str, pattern: str = "*", namespace: str | None = None) -> "builtins.list[Obj]":
        return [o for (ns, n), o in self._objects.get(kind, {}).items() if fnmatch.fnmatch(n, pattern) and (namespace is None or ns == namespace)]

    def dump(self) -> str:
        return json.dumps({k: [o["metadata"]["name"] for o in v.values()] for k, v in self._objects.items()}, indent=1)


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        else:
            target[k] = _merge_patch(target.get(k), v)
    return target

