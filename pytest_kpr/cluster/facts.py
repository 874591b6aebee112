"""What the cluster is and can do, read once per session: :class:`ClusterFacts` and :class:`Feature`."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.versions import Version


class Feature(str, enum.Enum):
    """Features a test can require with ``@pytest.mark.kpr_requires("socket-lb", ...)``."""

    KPR = "kpr"  # kubeProxyReplacement=true
    SOCKET_LB = "socket-lb"  # socket LB in any mode
    SOCKET_LB_PODS = "socket-lb-pods"  # socket LB also in pod namespaces (not hostns-only)
    NODEPORT = "nodeport"
    EXTERNAL_IPS = "external-ips"
    HOST_PORT = "host-port"
    SESSION_AFFINITY = "session-affinity"
    LB_STATEDB = "lb-statedb"  # the new LB control plane's tables (db/show frontends): 1.18+
    TCX = "tcx"  # BPF programs attached with tcx (kernel >= 6.6)
    #: a node answers a request from outside that it forwards to a backend on another node: not on kind with NodePort XDP
    #: acceleration, where the host end of the node's veth needs a program of its own (rules.datapath.SRC_XDP_KIND)
    CROSS_NODE_FORWARD = "cross-node-forward"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class NodeFacts:
    name: str
    internal_ip: str
    kernel: str
    control_plane: bool = False
    #: the node's cilium_host address (CiliumNode spec.addresses type CiliumInternalIP); "" when not read
    cilium_internal_ip: str = ""
    #: its IPv6 cilium_host address (a dual-stack or IPv6 node); "" when it has none or it was not read
    cilium_internal_ip6: str = ""

    def cilium_internal_ip_of(self, family: str) -> str:
        """The cilium_host address of ``family`` ("" when not known)."""
        return self.cilium_internal_ip6 if family == "IPv6" else self.cilium_internal_ip


@dataclass(frozen=True)
class ClusterFacts:
    cluster: str
    provider: str
    created: bool
    kubernetes_version: str
    cilium_version: str
    agent_binary: str
    kube_proxy_replacement: bool
    socket_lb_coverage: str  # Full | Hostns-only | Disabled
    nodeport_mode: str
    lb_algorithm: str
    attach_mode: str
    no_backend_response: str  # reject | drop
    #: the CVE-2020-8554 ExternalIP mitigation (config -a DisableExternalIPMitigation); None: not reported
    external_ip_mitigation: bool | None = None
    features: frozenset[Feature] = field(default_factory=frozenset)
    nodes: tuple[NodeFacts, ...] = ()
    #: status -o json routing.inter-host-routing-mode: Tunnel | Native ("" when the agent does not report it)
    routing_mode: str = ""
    #: enable-no-service-endpoints-routable as the agent resolved it (pkg/svcrouteconfig default true)
    no_service_endpoints_routable: bool = True
    #: where no_backend_response was read (config -a or the agent's config-map file)
    no_backend_response_source: str = "config -a"
    #: bpf-lb-map-max as the agent resolved it (None: unset, Cilium's default)
    lb_map_max: int | None = None
    #: the address families the agents serve (enable-ipv4 / enable-ipv6 as resolved: datapath.FAMILY_FILES)
    ip_families: tuple[str, ...] = ("IPv4",)
    #: status -o json datapath-mode, the pods' devices: veth | netkit | netkit-l2 ("" when the agent does not report it)
    datapath_mode: str = ""
    #: status -o json kube-proxy-replacement.features.nodePort.acceleration: Disabled | Native | Best-Effort ("" when absent)
    xdp_acceleration: str = ""
    #: enable-service-topology (Helm loadBalancer.serviceTopology): trafficDistribution honoured
    service_topology: bool = False
    #: every node is a kind node (spec.providerID kind://...: rules.datapath.SRC_XDP_KIND)
    kind_nodes: bool = False
    #: enable-local-redirect-policy (Helm localRedirectPolicy / localRedirectPolicies.enabled): CiliumLocalRedirectPolicy honoured
    local_redirect_policy: bool = False

    def why_not(self, feature: Feature) -> str:
        """Why this cluster lacks ``feature``, when more can be said than its name ("" otherwise)."""
        if feature is Feature.CROSS_NODE_FORWARD and self.kind_nodes and self.xdp_acceleration not in ("", "Disabled"):
            return (f"on kind with NodePort XDP acceleration ({self.xdp_acceleration}) a node forwards such a request with XDP_TX "
                    "through its veth, whose host end needs a program of its own (Cilium's test/l4lb/test.sh attaches a dummy one; "
                    "the kind provider does not touch the runner's devices)")
        return ""

    def node(self, name: str) -> NodeFacts | None:
        return next((n for n in self.nodes if n.name == name), None)

    @property
    def cilium(self) -> Version:
        return Version.parse(self.cilium_version)

    @property
    def workers(self) -> tuple[NodeFacts, ...]:
        w = tuple(n for n in self.nodes if not n.control_plane)
        return w or self.nodes

    def min_kernel(self) -> tuple[NodeFacts, Version] | None:
        best: tuple[NodeFacts, Version] | None = None
        for n in self.nodes:
            try:
                v = Version.parse(n.kernel, kernel=True)
            except ValueError:
                continue
            if best is None or v < best[1]:
                best = (n, v)
        return best

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["features"] = sorted(f.value for f in self.features)
        return d

    def _xdp(self) -> str:
        """`` (XDP Native)`` when NodePort is accelerated; nothing when it is off or not reported."""
        return "" if self.xdp_acceleration in ("", "Disabled") else f" (XDP {self.xdp_acceleration})"

    def header_lines(self) -> list[str]:
        kernels = sorted({n.kernel for n in self.nodes})
        lines = [
            f"kpr cluster: {self.cluster} ({self.provider}{', created by this run' if self.created else ''}), "
            f"Kubernetes {self.kubernetes_version}, {len(self.nodes)} nodes, kernel {', '.join(kernels) or '?'}",
            f"kpr cilium: {self.cilium_version} ({self.agent_binary}), KubeProxyReplacement "
            f"{'True' if self.kube_proxy_replacement else 'False'}, socket LB {self.socket_lb_coverage}, "
            f"NodePort {self.nodeport_mode or 'off'}{self._xdp()}, routing {self.routing_mode or '?'}, attach {self.attach_mode or '?'}, "
            f"{'' if self.datapath_mode in ('', 'veth') else f'devices {self.datapath_mode}, '}"
            f"{'+'.join(self.ip_families) or 'no family'}, "
            f"ServiceNoBackendResponse {self.no_backend_response}"
            f"{'' if self.no_service_endpoints_routable else ' (enable-no-service-endpoints-routable false)'}",
            f"kpr features: {', '.join(sorted(f.value for f in self.features)) or '(none)'}",
            "kpr nodes: " + ", ".join(f"{n.name} {n.internal_ip}" for n in self.nodes),
        ]
        return lines

