"""Cilium on a cluster: the Helm install, datapath readiness, and the facts read once per session.

Readiness means the datapath is programmed, not that pods are Running: every node's agent answers
``cilium-dbg status -o json`` with state Ok and KubeProxyReplacement True.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from ..observe.agent import Agent, agent_pods, agents
from ..rules.datapath import LB_MAP_FILES, NO_BACKEND_RESPONSE_FILE, ROUTABLE_FILE
from ..core.errors import ApiError, CommandError, FactsError, InfraError, NotKubeProxyFree, ProvisioningError
from ..k8s.api import KubeAPI
from ..parse import ParseError, StatusJSON
from ..core.versions import Version
from ..core.wait import Timeouts, WaitTimeout, eventually
from .facts import ClusterFacts, Feature, NodeFacts
from .provider import ClusterHandle, Progress, ProviderConfig
from .tools import Tool


def helm_values_files(settings: ProviderConfig, version: str) -> list[Path]:
    """The values files for a Cilium version, in the order Helm applies them (later wins)."""
    if settings.clusters_dir is None:
        raise ProvisioningError("no clusters/ directory with Helm values (pass --kpr-clusters-dir)")
    files = [settings.clusters_dir / "cilium" / "values-kpr.yaml"]
    per_minor = settings.values_file(Version.parse(version).minor_series)
    if per_minor is not None:
        files.append(per_minor)
    profile = settings.profile_file()
    if profile is not None:
        files.append(profile)
    files.extend(settings.helm_values)
    return files


def helm_install_args(settings: ProviderConfig, cluster: str, kubeconfig: Path | None) -> list[str]:
    version = settings.cilium_version
    args = ["upgrade", "--install", "cilium", settings.cilium_chart, "--version", version, "--namespace", "kube-system"]
    for f in helm_values_files(settings, version):
        args += ["--values", str(f)]
    # kind's API server inside the docker network: <cluster>-control-plane:6443
    args += ["--set", f"k8sServiceHost={cluster}-control-plane"]
    if kubeconfig is not None:
        args += ["--kubeconfig", str(kubeconfig)]
    return args


def helm_install(helm: Tool, settings: ProviderConfig, cluster: str, kubeconfig: Path | None, progress: Progress, timeout: float) -> None:
    args = helm_install_args(settings, cluster, kubeconfig)
    progress(f"installing Cilium {settings.cilium_version} ({settings.cilium_chart}) with helm")
    r = helm.run(args, timeout=timeout)
    if not r.ok:
        msg = (r.stderr or r.stdout).strip().splitlines()
        last = msg[-1] if msg else f"exit {r.returncode}"
        hint = ""
        if "repo cilium not found" in last or "failed to download" in last or "no cached repo" in last:
            hint = " (add the chart repo first: helm repo add cilium https://helm.cilium.io, or pass a local chart with --kpr-cilium-chart)"
        raise ProvisioningError(f"helm install of Cilium {settings.cilium_version} failed: {last}{hint}")


@dataclass(frozen=True)
class AgentState:
    node: str
    pod: str
    status: StatusJSON | None
    error: str = ""

    def describe(self) -> str:
        if self.status is None:
            return f"{self.node}: {self.error}"
        return f"{self.node}: cilium {self.status.cilium_state or '?'}, KPR {self.status.kpr.mode}"


def _observe_agents(kube: KubeAPI, exec_timeout: float) -> tuple[int, list[AgentState]]:
    nodes = kube.list("Node")
    states = []
    for agent in agents(kube, exec_timeout=exec_timeout, retry_timeout=0.0):
        try:
            states.append(AgentState(agent.node, agent.pod, agent.status()))
        except (CommandError, InfraError, ParseError) as e:
            states.append(AgentState(agent.node, agent.pod, None, str(e).splitlines()[0][:160]))
    return len(nodes), states


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
    for n in sorted(kube.list("Node"), key=lambda n: n["metadata"]["name"]):
        addrs = {a.get("type"): a.get("address") for a in n.get("status", {}).get("addresses", [])}
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
    nodes = [replace(n, cilium_internal_ip=internal.get(n.name, "")) for n in nodes]
    first = states[0]
    agent = Agent(kube, first.node, first.pod, exec_timeout=exec_timeout)
    version, config = agent.read("version", "config")  # one exec
    binary = agent.detect_binary()  # learnt by that read
    files = dict(zip(AGENT_CONFIG_FILES, (r.stdout.strip() if r.ok else None for r in agent.exec_many(*[("cat", p) for p in AGENT_CONFIG_FILES]))))
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
    )


AGENT_CONFIG_FILES = (NO_BACKEND_RESPONSE_FILE, ROUTABLE_FILE, LB_MAP_FILES[1])


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


def _cilium_internal_ips(kube: Any) -> dict[str, str]:
    """Each node's cilium_host address: CiliumNode spec.addresses of type CiliumInternalIP (cilium/cilium
    pkg/node/addressing/addresstype.go@e326b838 `NodeCiliumInternalIP AddressType = "CiliumInternalIP"`)."""
    out: dict[str, str] = {}
    try:
        cilium_nodes = kube.list("CiliumNode")
    except ApiError:  # not readable here: the SNAT rule then says what it could not compare
        return out
    for cn in cilium_nodes:
        for a in (cn.get("spec") or {}).get("addresses") or []:
            if a.get("type") == "CiliumInternalIP" and a.get("ip") and ":" not in a["ip"]:
                out.setdefault(cn["metadata"]["name"], a["ip"])
    return out


# -- upgrades (Documentation/operations/upgrade.rst; ../shared/docs/provisioning.md §3) --------------------------

PREFLIGHT_RELEASE = "cilium-preflight"
PREFLIGHT_CHECK = "cilium-pre-flight-check"  # the pre-flight DaemonSet and Deployment


def helm_get_values(helm: Tool, kubeconfig: Path | None, context: str | None = None) -> dict[str, Any]:
    """The install's user-supplied values: ``helm get values cilium -n kube-system -o yaml``."""
    import yaml

    r = helm.run(["get", "values", "cilium", "--namespace", "kube-system", "--output", "yaml", *_kc(kubeconfig, context)], timeout=120)
    if not r.ok:
        raise ProvisioningError(f"`helm get values cilium` failed: {(r.stderr or r.stdout).strip()[-300:]}")
    data = yaml.safe_load(r.stdout) or {}
    return data if isinstance(data, dict) else {}


def helm_diagnostics(helm: Tool, kubeconfig: Path | None, context: str | None = None) -> dict[str, str]:
    """``helm status cilium`` and the values it applied (``helm get values --all``), each as a file's text; a command
    that fails says so in its file (a failed install is when this is read)."""
    out = {}
    for name, args in (("helm-status.txt", ["status", "cilium", "--namespace", "kube-system"]),
                       ("helm-values.yaml", ["get", "values", "cilium", "--namespace", "kube-system", "--all", "--output", "yaml"])):
        r = helm.run([*args, *_kc(kubeconfig, context)], timeout=120)
        out[name] = r.stdout if r.ok else f"`helm {' '.join(args)}` exit {r.returncode}: {(r.stderr or r.stdout).strip()}\n"
    return out


def _kc(kubeconfig: Path | None, context: str | None = None) -> list[str]:
    return (["--kubeconfig", str(kubeconfig)] if kubeconfig is not None else []) + (["--kube-context", context] if context else [])


def helm_upgrade(helm: Tool, kube: KubeAPI, settings: ProviderConfig, kubeconfig: Path | None, from_version: str, to_version: str,
                 saved_values: Path, timeouts: Timeouts, progress: Progress, context: str | None = None) -> None:
    """Cilium's upgrade procedure, step by step (Documentation/operations/upgrade.rst):

    1. the pre-flight check: ``helm install cilium-preflight <chart> --version <to> --set preflight.enabled=true
       --set agent=false --set operator.enabled=false`` plus ``k8sServiceHost``/``Port`` (kube-proxy-free); wait until
       its DaemonSet is Ready on every node that runs an agent and its Deployment is 1/1 (the images are pulled),
       then remove it;
    2. ``helm upgrade cilium <chart> --version <to>`` with the saved values (``helm get values``: never
       ``--reuse-values`` across minors), the target minor's values and ``upgradeCompatibility=<from minor>``.

    Returns once helm has applied the new DaemonSet; the caller watches the agents roll."""
    import yaml

    values = yaml.safe_load(saved_values.read_text()) or {}
    chart, frm = settings.cilium_chart, Version.parse(from_version)
    host, port = values.get("k8sServiceHost"), values.get("k8sServicePort")
    pre = ["install", PREFLIGHT_RELEASE, chart, "--version", to_version, "--namespace", "kube-system",
           "--set", "preflight.enabled=true", "--set", "agent=false", "--set", "operator.enabled=false"]
    pre += [*(["--set", f"k8sServiceHost={host}"] if host else []), *(["--set", f"k8sServicePort={port}"] if port else []), *_kc(kubeconfig, context)]
    progress(f"pre-flight check for Cilium {to_version} (pre-pulls the images on every node)")
    r = helm.run(pre, timeout=timeouts.CILIUM_READY)
    if not r.ok:
        raise ProvisioningError(f"helm install {PREFLIGHT_RELEASE} failed: {(r.stderr or r.stdout).strip()[-300:]}")
    try:
        n_agents = len(agent_pods(kube))

        def preflight_ready() -> tuple[int, int]:
            ds = kube.get("DaemonSet", PREFLIGHT_CHECK, "kube-system") or {}
            dep = kube.get("Deployment", PREFLIGHT_CHECK, "kube-system") or {}
            return int((ds.get("status") or {}).get("numberReady", 0)), int((dep.get("status") or {}).get("readyReplicas", 0))

        eventually(preflight_ready, until=lambda rd: rd[0] >= n_agents and rd[1] >= 1, timeout=timeouts.CILIUM_READY,
                   what=f"the pre-flight DaemonSet Ready on all {n_agents} agent nodes and its Deployment 1/1",
                   describe=lambda rd: f"DaemonSet {rd[0]}/{n_agents} Ready, Deployment {rd[1]}/1", progress=progress)
    finally:
        helm.run(["uninstall", PREFLIGHT_RELEASE, "--namespace", "kube-system", *_kc(kubeconfig, context)], timeout=300)
    args = ["upgrade", "cilium", chart, "--version", to_version, "--namespace", "kube-system", "--values", str(saved_values)]
    per_minor = settings.values_file(Version.parse(to_version).minor_series)
    if per_minor is not None:
        args += ["--values", str(per_minor)]
    args += ["--set", f"upgradeCompatibility={frm.major}.{frm.minor}", *_kc(kubeconfig, context)]
    progress(f"helm upgrade cilium {from_version} -> {to_version} (saved values + values-{Version.parse(to_version).minor_series}.yaml, "
             f"upgradeCompatibility={frm.major}.{frm.minor})")
    r = helm.run(args, timeout=timeouts.CILIUM_READY)
    if not r.ok:
        raise ProvisioningError(f"helm upgrade of Cilium to {to_version} failed: {(r.stderr or r.stdout).strip()[-300:]}")
