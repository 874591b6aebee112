"""The upgrade run: flows that live through it, the roll watched, the datapath before and after (upgrade.json).

Order of one transition (upgrade, and with --kpr-downgrade the way back):

1. the flows start (one pod each, ``kpr probe flow``, a message every 10 ms) and are seen answering;
2. the datapath is read (``before``): service IDs per frontend and backend IDs per address on every agent
   (``service list -o json``, ``shell -- lb/maps-dump``), the pod flows' conntrack entries, KubeProxyReplacement,
   socket-LB coverage, ServiceNoBackendResponse, the attach mode, kube-proxy rules on the nodes;
3. the provider moves Cilium (pre-flight, ``helm upgrade``: pytest_kpr.cluster.cilium.helm_upgrade) and the
   roll is watched node by node (:class:`pytest_kpr.upgrade.RollWatch`, every 250 ms), then the datapath
   readiness check (every agent Ok, KubeProxyReplacement True);
4. the datapath is read again (``after``), the flows are ended (``kill -TERM 1``: each prints its summary)
   and judged, each gap tied to the agent restart on its path's nodes.

A dual-stack run carries the five flows in every family the agents serve (``pod->ClusterIP (IPv6)``, to the Services'
IPv6 ClusterIP and the nodes' IPv6 addresses): each family has its own service, backend and conntrack maps
(datapath.SRC_MAP_FAMILY, SRC_CT_FAMILY), so an upgrade can break one family's flows alone. The roll happens once;
``diff`` holds each family's ID changes and lost conntrack entries, and each flow names its family.
"""

from __future__ import annotations

from typing import Any, Callable

from ..model.upgrade import RecordedTransition, UpgradeRecord
from ..observe.agent import agent_pods
from ..judge.iptables import KUBE_PROXY_MARKS
from ..observe import readiness
from ..cluster.provider import UpgradableProvider
from ..rules.datapath import coverage_name, plane_for
from ..core.errors import KprError
from ..rules.kernels import load_floors
from ..observe.lab import Lab, LabError
from .upgrade import (
    GAP_POLICY,
    FlowPath,
    RollWatch,
    attribute,
    flow_problems,
    id_problems,
    in_family,
    load_removed,
    preflight_notices,
    preflight_refusals,
    regression_problems,
    summary_line,
)
from ..core.wait import eventually
from ..observe.workloads import probe_pod
from ..core import clock
from ..parse.addr import hp

ECHO_TCP, ECHO_UDP = 7100, 7101
FLOW_INTERVAL_MS = 10


class UpgradeRefused(KprError):
    """The upgrade would be unsupported: one line per reason, nothing was changed."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


class UpgradeRun:
    def __init__(self, lab: Lab, provider: UpgradableProvider, settings: Any, reread_facts: Callable[[], Any]):
        self.lab = lab
        self.provider = provider
        self.s = settings
        self.reread_facts = reread_facts
        self.paths: list[FlowPath] = []

    # -- before anything changes ------------------------------------------------------------------------

    def _removed(self) -> list[Any]:
        clusters = self.s.clusters_dir
        return load_removed(clusters / "removed-options.yaml") if clusters else []

    def refusals(self, from_version: str, to_version: str) -> list[str]:
        clusters = self.s.clusters_dir
        floors = load_floors(clusters / "kernels.yaml") if clusters else []
        kernels = {n.name: n.kernel for n in self.lab.facts.nodes}
        return preflight_refusals(from_version, to_version, kernels, self.provider.helm_values(), floors, self._removed())

    def notices(self, to_version: str) -> list[str]:
        """What the values set that ``to_version`` no longer reads, where only its deprecation is cited: told, not refused."""
        return preflight_notices(to_version, self.provider.helm_values(), self._removed())

    # -- workloads -------------------------------------------------------------------------------------------

    def deploy(self) -> list[FlowPath]:
        """Echo servers (2 replicas, TCP and UDP) behind a ClusterIP and a NodePort Service (of every family the run tests),
        and the five paths in each family the agents serve."""
        lab = self.lab
        containers = [
            {"name": "tcp", "image": lab.image, "imagePullPolicy": "IfNotPresent",
             "command": lab.echo_server_command(ECHO_TCP)},
            {"name": "udp", "image": lab.image, "imagePullPolicy": "IfNotPresent",
             "command": lab.echo_server_command(ECHO_UDP, udp=True)},
        ]
        lab.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "flow-echo", "namespace": lab.ns},
                     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "flow-echo"}},
                              "template": {"metadata": {"labels": {"app": "flow-echo"}}, "spec": {"containers": containers}}}})
        ports = [{"name": "tcp", "port": ECHO_TCP, "targetPort": ECHO_TCP, "protocol": "TCP"},
                 {"name": "udp", "port": ECHO_UDP, "targetPort": ECHO_UDP, "protocol": "UDP"}]
        dual = lab.family_policy()
        lab.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "flow-echo", "namespace": lab.ns},
                     "spec": {"type": "ClusterIP", "selector": {"app": "flow-echo"}, "ports": ports, **dual}})
        lab.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "flow-echo-np", "namespace": lab.ns},
                     "spec": {"type": "NodePort", "externalTrafficPolicy": "Cluster", "selector": {"app": "flow-echo"}, "ports": ports[:1],
                              **dual}})
        eventually(lambda: [p for p in lab.pods("app=flow-echo") if lab.ready(p)], until=lambda r: len(r) == 2,
                   timeout=lab.t.PODS_READY, what="2 Ready flow-echo pods", describe=lambda r: f"{len(r)} Ready", progress=lab.progress)
        node_port = lab.allocated_node_port("flow-echo-np")
        backends = sorted({p["spec"]["nodeName"] for p in lab.pods("app=flow-echo")})
        client, remote = lab.client_node, lab.remote_node()
        without = [n.name for n in lab.facts.nodes if n.name not in backends] or [remote]
        coverage = lab.facts.socket_lb_coverage if lab.facts.socket_lb_coverage in ("Full", "Hostns-only") else coverage_name(False)
        self.paths = []
        for family, view in lab.family_views().items():
            vip, entry = view.cluster_ip("flow-echo"), view.node_ip(remote)

            def path(name: str, proto: str, pod: str, host: bool, target: str, nodes: tuple[str, ...], family: str = family) -> FlowPath:
                pod = pod if family == "IPv4" else f"{pod}-{family.lower()}"  # flow-pod-clusterip-ipv6
                return FlowPath(in_family(name, family), proto, pod, host, target, nodes, family)

            self.paths += [
                path("pod->ClusterIP", "tcp", "flow-pod-clusterip", False, hp(vip, ECHO_TCP), (client, *backends)),
                path("hostnet->ClusterIP", "tcp", "flow-hostnet-clusterip", True, hp(vip, ECHO_TCP), (client, *backends)),
                path("pod->NodePort", "tcp", "flow-pod-nodeport", False, hp(entry, node_port), (client, remote, *backends)),
                path("hostnet(no backend)->NodePort", "tcp", "flow-hostnet-nodeport", True, hp(entry, node_port), (without[0], remote, *backends)),
                path("udp pod->ClusterIP", "udp", "flow-pod-udp", False, hp(vip, ECHO_UDP), (client, *backends)),
            ]
        self.planes = {p.name: plane_for("host" if p.host_network else "pod", "connect", "NodePort" if "NodePort" in p.name else "ClusterIP",
                                         coverage).plane.value for p in self.paths}
        return self.paths

    def start_flows(self, kind: str) -> dict[str, str]:
        """One pod per path (restartPolicy Never), pinned to the path's first node; name -> pod."""
        lab, pods = self.lab, {}
        for p in self.paths:
            name = f"{p.client_pod}-{kind[:4]}"
            cmd = ["kpr", "probe", "flow", p.target, "--json", "--interval-ms", str(FLOW_INTERVAL_MS),
                   "--duration", str(int(2 * lab.t.CILIUM_READY + 600)), *(["--udp"] if p.proto == "udp" else [])]
            pod = probe_pod(name, lab.ns, lab.image, node=p.nodes[0], labels={"app": "kpr-flow"}, command=cmd, host_network=p.host_network)
            pod["spec"]["restartPolicy"] = "Never"
            pod["spec"]["tolerations"] = [{"operator": "Exists"}]  # the node without a backend may be the control plane
            lab.create(pod)
            pods[p.name] = name
        for name in pods.values():
            lab.wait_running(name)
        return pods

    def stop_flows(self, pods: dict[str, str]) -> dict[str, dict[str, Any]]:
        """``kill -TERM 1`` in each flow pod: the flow prints its summary, read from the pod's log."""
        return {path: self.lab.stop_flow(name) for path, name in pods.items()}

    # -- the datapath ----------------------------------------------------------------------------------------

    def snapshot(self, flow_pods: dict[str, str]) -> dict[str, Any]:
        lab = self.lab
        lab._agents.clear()  # agent pods are replaced by a roll
        services: dict[str, dict[str, int]] = {}
        backends: dict[str, dict[str, int]] = {}
        for a in lab.all_agents():
            svcs, dump = a.read("services", "maps_dump") if lab.minor >= (1, 18) else (a.services(), [])
            services[a.node] = {str(s.frontend): s.id for s in svcs}
            backends[a.node] = {e.fields["ADDR"]: int(e.fields["ID"]) for e in dump if e.kind == "BE"}
        status, text, config = lab.agent(lab.client_node).read("status_json", "status_verbose", "config")
        rules = 0
        for n in lab.facts.nodes:
            for d in lab.node(n.name).rule_dumps().values():
                rules += sum(d.count(m) for m in KUBE_PROXY_MARKS) if d is not None else 0
        slots_ok = {family: self._echo_slots_match(view) for family, view in lab.family_views().items()}
        ct: dict[str, bool] = {}
        for p in self.paths:
            if p.proto != "tcp" or p.host_network or p.name not in flow_pods:
                continue  # a host-network flow shares the node's address: its entry cannot be told apart
            pod = lab.kube.get("Pod", flow_pods[p.name], lab.ns) or {}
            ip = lab.in_family(p.family).pod_ip(pod)
            entries = lab.agent(p.nodes[0]).conntrack(lab.minor)
            ct[p.name] = any(e.proto == "TCP" and e.dir == "OUT" and e.src_ip == ip for e in entries)
        return {"services": services, "backends": backends, "flow_ct": ct,
                "properties": {"kube_proxy_replacement": str(status.kpr.mode), "attach_mode": status.attach_mode,
                               "socket_lb_coverage": (text.kpr_details.socket_lb_coverage if text.kpr_details else None),
                               "no_backend_response": config.service_no_backend_response, "kube_proxy_rules": rules,
                               "backend_slots_match": slots_ok}}

    @staticmethod
    def _echo_slots_match(lab: Lab) -> bool:
        """Backend-slot convergence for the echo service in the view's family: every agent's slots hold exactly its
        EndpointSlice's ready addresses."""
        fe = lab.frontend("flow-echo")
        fe = type(fe)(fe.ip, ECHO_TCP, fe.proto)
        es = frozenset(a for a in lab.endpointslice_ready("flow-echo") if a.endswith(f":{ECHO_TCP}"))
        return bool(es) and all(sorted(lab.slot_view(a, fe).backends) == sorted(es) for a in lab.all_agents())

    # -- one transition ---------------------------------------------------------------------------------------

    def transition(self, kind: str, from_version: str, to_version: str) -> RecordedTransition:
        lab, t = self.lab, self.lab.t
        lab.progress(f"{kind} {from_version} -> {to_version}: starting {len(self.paths)} flows")
        pods = self.start_flows(kind)
        clock.sleep(t.FLOW_BASELINE)
        before = self.snapshot(pods)
        watch = RollWatch({p["spec"]["nodeName"]: p["metadata"]["name"] for p in agent_pods(lab.kube)})
        started = clock.time()
        self.provider.upgrade(to_version, from_version, lab.progress)
        eventually(lambda: watch.observe(agent_pods(lab.kube)), until=bool, timeout=t.CILIUM_READY, every=0.25,
                   what=f"every node's cilium-agent replaced and Ready ({kind} to {to_version})", progress=lab.progress)
        states = readiness.wait_ready(lab.kube, t, lab.progress)
        facts = self.reread_facts()
        lab.facts, lab.minor = facts, (facts.cilium.major, facts.cilium.minor)
        clock.sleep(t.FLOW_BASELINE)
        after = self.snapshot(pods)
        reports = self.stop_flows(pods)
        timeline = watch.timeline()
        flows: dict[str, Any] = {}
        for p in self.paths:
            r = reports.get(p.name, {})
            gaps = [{**g, "during": attribute(g, timeline, p.nodes)} for g in r.get("gaps", [])]
            longest = max(gaps, key=lambda g: g["ms"], default=None)
            flows[p.name] = {"path": {"client": p.client_pod, "host_network": p.host_network, "target": p.target, "nodes": list(p.nodes),
                                      "proto": p.proto, "plane": self.planes.get(p.name), "family": p.family},
                             "report": r, "gaps": gaps, "longest_gap_during": longest["during"] if longest else None,
                             "problems": flow_problems(p.name, r, self.s.upgrade_max_gap),
                             "ct_survived": after["flow_ct"].get(p.name) if before["flow_ct"].get(p.name) else None}
        service_ids = id_problems(before["services"], after["services"], "frontend")
        backend_ids = id_problems(before["backends"], after["backends"], "backend")
        families = {family: {"service_ids": service_ids.get(family, []), "backend_ids": backend_ids.get(family, []),
                             "ct_lost": [name for name, f in flows.items() if f["path"]["family"] == family and f["ct_survived"] is False]}
                    for family in dict.fromkeys(p.family for p in self.paths)}
        diff = {"families": families, "regressions": regression_problems(before["properties"], after["properties"])}
        out: dict[str, Any] = {"kind": kind, "from": from_version, "to": to_version, "started": round(started, 3),
                               "agents_ready": len(states), "timeline": timeline, "flows": flows, "diff": diff, "before": before, "after": after}
        line = summary_line(out, self.s.upgrade_max_gap)
        out["summary"] = line
        lab.progress(line)
        return RecordedTransition.of(out)

    def run(self, from_version: str, to_version: str, downgrade: bool) -> UpgradeRecord:
        refused = self.refusals(from_version, to_version)
        if refused:
            raise UpgradeRefused(refused)
        notices = self.notices(to_version)
        for line in notices:
            self.lab.progress(f"notice: {line}")
        if not self.paths:
            self.deploy()
        transitions = [self.transition("upgrade", from_version, to_version)]
        if downgrade:
            transitions.append(self.transition("downgrade", to_version, from_version))
        return UpgradeRecord(from_version, to_version, self.s.upgrade_max_gap, GAP_POLICY, dict(self.planes), tuple(transitions),
                             tuple(notices))


def require_upgradable(provider: Any) -> UpgradableProvider:
    if not isinstance(provider, UpgradableProvider):
        raise LabError(f"provider {getattr(provider, 'name', provider)} cannot upgrade Cilium (it has no helm_values/upgrade)")
    return provider
