"""Datapath readiness and the cluster facts, read through the agents once Cilium is installed.

Readiness means the datapath is programmed, not that pods are Running: every node's agent answers
``cilium-dbg status -o json`` with state Ok and KubeProxyReplacement True. The facts (Cilium version, agent CLI, KPR
features, ServiceNoBackendResponse, the nodes' kernels and addresses) are read once per session, in few execs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from .agent import METRICS, VIEWS, Agent, agents
from ..cluster.facts import ClusterFacts, Feature, NodeFacts
from ..cluster.provider import ClusterHandle, Progress
from ..core.errors import ApiError, CommandError, FactsError, InfraError, NotKubeProxyFree, ProvisioningError
from ..core.versions import Version
from ..core.wait import Timeouts, WaitTimeout, eventually
from ..k8s.api import ExecResult, KubeAPI
from ..parse import ParseError, StatusJSON
from ..parse.metrics import parse_bpf_metrics_list
from ..rules.datapath import (FAMILY_FILES, KIND_PROVIDER_PREFIX, LB_MAP_FILES, LRP_FILE, NO_BACKEND_RESPONSE_FILE, ROUTABLE_FILE, SERVICE_TOPOLOGY_FILE,
                             ip_families, xdp_forward_dropped)


@dataclass(frozen=True)
class AgentState:
    node: str
    pod: str
    status: StatusJSON | None
    error: str = ""
    #: the agent's ``bpf metrics list`` read in the same exec as its status (None: not readable): the drop baseline
    drops: Any = None
    #: the agent CLI's name as that exec learnt it (``cilium-dbg``, or ``cilium`` before 1.15)
    binary: str | None = None

    def describe(self) -> str:
        if self.status is None:
            return f"{self.node}: {self.error}"
        return f"{self.node}: cilium {self.status.cilium_state or '?'}, KPR {self.status.kpr.mode}"


def _observe_agents(kube: KubeAPI, exec_timeout: float) -> tuple[int, list[AgentState]]:
    nodes = kube.list("Node")
    states = []
    for agent in agents(kube, exec_timeout=exec_timeout, retry_timeout=0.0):
        try:  # one exec: the status, and the drop counters a failure's drops are later compared with
            status, metrics = agent.run_many(VIEWS["status_json"][0], METRICS)
            states.append(AgentState(agent.node, agent.pod, VIEWS["status_json"][1](status.check().stdout), drops=_drops(metrics),
                                     binary=agent.binary))
        except (CommandError, InfraError, ParseError) as e:
            states.append(AgentState(agent.node, agent.pod, None, str(e).splitlines()[0][:160]))
    return len(nodes), states


def _drops(metrics: ExecResult) -> Any:
    """The parsed ``bpf metrics list``, or None when the agent did not print one it could be read from."""
    if not metrics.ok:
        return None
    try:
        return parse_bpf_metrics_list(metrics.stdout)
    except ParseError:
        return None


def drop_baseline(states: Sequence[AgentState]) -> dict[str, Any]:
    """Every ready agent's drop counters, by node, as read with its last status: the baseline the drop reasons of a
    failure rise from (an agent whose counters were unreadable is left out: its drops then count from zero)."""
    return {s.node: s.drops for s in states if s.drops is not None}


def wait_ready(kube: KubeAPI, timeouts: Timeouts, progress: Progress) -> list[AgentState]:
    """Poll until every node has an agent reporting Ok with KubeProxyReplacement True.

    Gives up early with :class:`NotKubeProxyFree` when every agent is healthy but KPR is off: that
    will not change by waiting.
    """

    def ready(obs: tuple[int, list[AgentState]]) -> bool:
        n_nodes, states = obs
        return (
            n_nodes > 0
            and len(states) >= n_nodes
            and all(s.status is not None and s.status.healthy and s.status.kpr.enabled for s in states)
        )

    def abort(obs: tuple[int, list[AgentState]]) -> str | None:
        n_nodes, states = obs
        if states and len(states) >= n_nodes and all(s.status is not None and s.status.healthy for s in states):
            off = [s.node for s in states if s.status is not None and not s.status.kpr.enabled]
            if off:
                raise NotKubeProxyFree(
                    f"Cilium runs without kube-proxy replacement on {', '.join(off)} (KubeProxyReplacement: False); "
                    "install it with kubeProxyReplacement=true (see clusters/cilium/values-kpr.yaml)"
                )
        return None

    def describe(obs: tuple[int, list[AgentState]]) -> str:
        n_nodes, states = obs
        if not states:
            return f"no cilium-agent pods yet ({n_nodes} nodes)"
        return f"{len(states)}/{n_nodes} agents: " + "; ".join(s.describe() for s in states)

    try:
        obs = eventually(
            lambda: _observe_agents(kube, timeouts.EXEC),
            until=ready,
            timeout=timeouts.CILIUM_READY,
            what="every cilium-agent to report Ok with KubeProxyReplacement True",
            describe=describe,
            progress=progress,
            abort=abort,
        )
    except WaitTimeout as e:
        raise ProvisioningError(str(e)) from None
    return obs.value[1]


def read_facts(handle: ClusterHandle, states: Sequence[AgentState], exec_timeout: float) -> ClusterFacts:
    """Cilium version, agent CLI, KPR features, ServiceNoBackendResponse, nodes' kernels and IPs."""
    kube = handle.kube
    nodes = []
    node_objects = sorted(kube.list("Node"), key=lambda n: n["metadata"]["name"])
    for n in node_objects:
        addrs: dict[str, str] = {}
        for a in n.get("status", {}).get("addresses", []):  # the first of each type: a dual-stack node lists IPv4 first
            addrs.setdefault(a.get("type"), a.get("address"))
        labels = n["metadata"].get("labels") or {}
        nodes.append(
            NodeFacts(
                name=n["metadata"]["name"],
                internal_ip=addrs.get("InternalIP", ""),
                kernel=n.get("status", {}).get("nodeInfo", {}).get("kernelVersion", ""),
                control_plane="node-role.kubernetes.io/control-plane" in labels,
            )
        )
    internal = _cilium_internal_ips(kube)
    nodes = [replace(n, cilium_internal_ip=internal.get(n.name, {}).get("IPv4", ""), cilium_internal_ip6=internal.get(n.name, {}).get("IPv6", ""))
             for n in nodes]
    first = states[0]
    agent = Agent(kube, first.node, first.pod, exec_timeout=exec_timeout)
    binary = first.binary or agent.detect_binary()  # readiness learnt it
    # one exec: the agent's version and resolved config, and the config files that decide what the config does not say
    out = agent.exec_many((binary, *VIEWS["version"][0]), (binary, *VIEWS["config"][0]), *[("cat", p) for p in AGENT_CONFIG_FILES])
    version, config = VIEWS["version"][1](out[0].check().stdout), VIEWS["config"][1](out[1].check().stdout)
    files = dict(zip(AGENT_CONFIG_FILES, (r.stdout.strip() if r.ok else None for r in out[2:])))
    status = first.status
    assert status is not None
    kpr = status.kpr
    cilium_version = (version.daemon or version.client).lstrip("v")
    response, response_source = no_backend_response_of(config.service_no_backend_response, files[NO_BACKEND_RESPONSE_FILE], cilium_version)
    routable = files[ROUTABLE_FILE]
    features: set[Feature] = set()
    if kpr.enabled:
        features.add(Feature.KPR)
    if kpr.socket_lb:
        features.add(Feature.SOCKET_LB)
        if not kpr.socket_lb_hostns_only:
            features.add(Feature.SOCKET_LB_PODS)
    for flag, feat in (
        (kpr.nodeport, Feature.NODEPORT),
        (kpr.external_ips, Feature.EXTERNAL_IPS),
        (kpr.host_port, Feature.HOST_PORT),
        (kpr.session_affinity, Feature.SESSION_AFFINITY),
    ):
        if flag:
            features.add(feat)
    v = Version.parse(cilium_version)
    if (v.major, v.minor) >= (1, 18):
        features.add(Feature.LB_STATEDB)
    if status.attach_mode == "tcx":
        features.add(Feature.TCX)
    kind_nodes = bool(node_objects) and all(str((n.get("spec") or {}).get("providerID") or "").startswith(KIND_PROVIDER_PREFIX)
                                            for n in node_objects)
    acceleration = kpr.acceleration if kpr.nodeport else ""
    if not xdp_forward_dropped(acceleration, kind_nodes):
        features.add(Feature.CROSS_NODE_FORWARD)
    return ClusterFacts(
        cluster=handle.name,
        provider=handle.provider,
        created=handle.created,
        kubernetes_version=kube.server_version(),
        cilium_version=cilium_version,
        agent_binary=binary,
        kube_proxy_replacement=kpr.enabled,
        socket_lb_coverage=kpr.socket_lb_coverage,
        nodeport_mode=kpr.nodeport_mode if kpr.nodeport else "",
        lb_algorithm=kpr.lb_algorithm,
        attach_mode=status.attach_mode,
        no_backend_response=response,
        external_ip_mitigation=config.external_ip_mitigation,
        features=frozenset(features),
        nodes=tuple(nodes),
        routing_mode=status.routing_mode,
        no_service_endpoints_routable=routable is None or routable.lower() != "false",
        no_backend_response_source=response_source,
        lb_map_max=int(files[LB_MAP_FILES[1]]) if (files[LB_MAP_FILES[1]] or "").isdigit() else None,
        ip_families=ip_families(files),
        datapath_mode=status.datapath_mode,
        xdp_acceleration=acceleration,
        kind_nodes=kind_nodes,
        # enable-service-topology: absent from the config map, off (Cilium's default; SRC_TOPOLOGY_ENABLE)
        service_topology=(files[SERVICE_TOPOLOGY_FILE] or "false").strip().lower() == "true",
        local_redirect_policy=(files[LRP_FILE] or "false").strip().lower() == "true",
    )


AGENT_CONFIG_FILES = (NO_BACKEND_RESPONSE_FILE, ROUTABLE_FILE, LB_MAP_FILES[1], SERVICE_TOPOLOGY_FILE, LRP_FILE, *FAMILY_FILES.values())


def no_backend_response_of(from_config: str | None, from_file: str | None, cilium_version: str) -> tuple[str, str]:
    """ServiceNoBackendResponse and where it was read: ``config -a``'s read-only ``ServiceNoBackendResponse`` (cilium/cilium
    pkg/option/config.go@8e7499ee DaemonConfig: `ServiceNoBackendResponse string`), else the agent's resolved
    ``service-no-backend-response`` (the chart writes it into cilium-config: `"service-no-backend-response": "reject"`).
    Neither is an error naming both, never a silent ``reject``: the no-backend expectations depend on it."""
    for value, where in ((from_config, "config -a ServiceNoBackendResponse"), (from_file, NO_BACKEND_RESPONSE_FILE)):
        if value is not None and value.strip().lower() in ("reject", "drop"):
            return value.strip().lower(), where
    got = ", ".join(f"{w}: {v!r}" for v, w in ((from_config, "config -a ServiceNoBackendResponse"), (from_file, NO_BACKEND_RESPONSE_FILE))
                    if v is not None)
    raise FactsError(f"Cilium {cilium_version} reports no ServiceNoBackendResponse (reject|drop): neither `cilium-dbg config -a` "
                     f"(field ServiceNoBackendResponse) nor {NO_BACKEND_RESPONSE_FILE} has it{' (' + got + ')' if got else ''}; "
                     "the no-backend expectations depend on it, so pytest-kpr will not assume 'reject'")


def _cilium_internal_ips(kube: Any) -> dict[str, dict[str, str]]:
    """Each node's cilium_host address of each family: CiliumNode spec.addresses of type CiliumInternalIP (cilium/cilium
    pkg/node/addressing/addresstype.go@e326b838 `NodeCiliumInternalIP AddressType = "CiliumInternalIP"`)."""
    out: dict[str, dict[str, str]] = {}
    try:
        cilium_nodes = kube.list("CiliumNode")
    except ApiError:  # not readable here: the SNAT rule then says what it could not compare
        return out
    for cn in cilium_nodes:
        for a in (cn.get("spec") or {}).get("addresses") or []:
            if a.get("type") == "CiliumInternalIP" and a.get("ip"):
                out.setdefault(cn["metadata"]["name"], {}).setdefault("IPv6" if ":" in a["ip"] else "IPv4", a["ip"])
    return out


# -- upgrades (cilium/cilium Documentation/operations/upgrade.rst) ---------------------------------------------
