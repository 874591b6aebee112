"""The fake cluster's configuration (what a conforming cluster looks like), holding its faults (what breaks).

A configuration is something real Cilium can be set to; a fault is something real Cilium must not do (each declared
beside the code that does it: :mod:`pytest_kpr.testing.faults`).
Every conforming behaviour follows a sourced rule in :mod:`pytest_kpr.rules.datapath`; a fault departs from
one rule, so the suite that checks that rule must fail on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .faults import Faults, check_faults

__all__ = ["FakeConfig", "Faults", "check_faults"]


@dataclass(frozen=True)
class FakeConfig:
    name: str = "fake"
    cilium_version: str = "1.20.2"
    kubernetes_version: str = "v1.34.0"
    workers: int = 2
    kernel: str = "6.8.0-49-generic"
    agent_binary: str = "cilium-dbg"
    socket_lb: bool = True
    socket_lb_hostns_only: bool = False
    nodeport_mode: str = "SNAT"
    #: the agents' inter-host routing mode (Helm routingMode: the chart's default tunnel; the dsr profile: native)
    routing_mode: str = "Tunnel"
    #: enable-no-service-endpoints-routable as the agents resolve it (None: unset, Cilium's default true)
    no_service_endpoints_routable: bool | None = None
    #: enable-internal-traffic-policy as the agents resolve it ("true" / "false"; None: not in the config map, Cilium's
    #: default true; datapath.SRC_ITP_ENABLED)
    enable_internal_traffic_policy: str | None = "true"
    #: the address families the agents serve (enable-ipv4 / enable-ipv6 in their config map; datapath.FAMILY_FILES)
    ip_families: tuple[str, ...] = ("IPv4",)
    #: enable-k8s-terminating-endpoint as the agents resolve it (None: not in the config map, on by default;
    #: datapath.SRC_TERMINATING_OPTION)
    k8s_terminating_endpoint: str | None = None
    #: enable-socket-lb-pod-connection-termination as the agents resolve it (None: not in the config map, on by default;
    #: datapath.SRC_UDP_SOCK_TERMINATION)
    socket_lb_pod_connection_termination: str | None = None
    lb_algorithm: str = "Random"
    #: bpf-lb-map-max as the agents resolve it (None: unset, Cilium's default 65536)
    lb_map_max: int | None = None
    #: default-lb-service-ipam as the agents resolve it (None: not in the config map, the agent's lbipam)
    default_lb_service_ipam: str | None = None
    #: bpf-lb-enable-wildcard-entries as the agents resolve it (None: not in the config map, on; datapath.SRC_WILDCARD)
    lb_wildcard_entries: str | None = None
    #: bpf-lb-rev-nat-map-max as the agents resolve it (None: unset, bpf-lb-map-max's size)
    lb_rev_nat_map_max: int | None = None
    #: bpf-lb-maglev-hash-seed as the agents resolve it (None: unset, the built-in default)
    maglev_seed: str | None = None
    attach_mode: str = "tcx"
    #: the pods' device type the agents report (Helm bpf.datapathMode; the netkit profile: netkit)
    datapath_mode: str = "veth"
    #: NodePort XDP acceleration the agents report (Helm loadBalancer.acceleration; the xdp profile: Native)
    acceleration: str = "Disabled"
    #: the nodes' spec.providerID scheme: "kind" (kind://docker/<cluster>/<node>, as kind's kubelets are started) or ""
    #: (none, as on a cluster of machines) -- not a Cilium setting. Decides the kind+XDP answer (datapath.SRC_XDP_KIND)
    node_provider: str = "kind"
    no_backend_response: str = "reject"
    #: the CVE-2020-8554 ExternalIP mitigation (agent: DisableExternalIPMitigation = not this). The kind values
    #: turn it off (bpf.disableExternalIPMitigation: true), so the default is off.
    external_ip_mitigation: bool = False
    #: status polls an agent answers "not ready" before it is healthy (exercises readiness polling)
    agent_ready_after: int = 0
    #: ticks from a pod's creation to Ready
    pod_ready_ticks: int = 2
    #: load-balancer control plane: "cilium-1.18" (no re-queue), "requeue" (a fixed Cilium), "steal" (broken)
    lb_variant: str = "cilium-1.18"
    #: ticks of the LB control plane's coalescing window (stream.Buffer's 500 ms)
    lb_window_ticks: int = 3
    #: seconds each agent takes to restart during a fake upgrade (the roll is node by node, in wall time)
    agent_restart_s: float = 0.3
    #: LB-IPAM gives a claimant whose ports now conflict on a shared IP another IP (instead of keeping it)
    lbipam_reassigns_on_conflict: bool = False
    #: access reviews the fake's API server denies: "VERB RESOURCE[/SUB]", "VERB URL" or either with " in NAMESPACE"
    rbac_denied: tuple[str, ...] = ()
    #: the runner (the outside client) has a route to the nodes' network (kind's docker bridge) -- not a Cilium setting
    runner_reaches_nodes: bool = True
    #: the runner may open raw sockets (CAP_NET_RAW) -- not a Cilium setting: a CI job that forgot to grant it
    runner_net_raw: bool = True
    #: the runner may route a VIP through a node (CAP_NET_ADMIN) -- not a Cilium setting
    runner_net_admin: bool = True
    #: enable-service-topology as the agents resolve it (Helm loadBalancer.serviceTopology; the topology profile sets it)
    service_topology: bool = False
    #: the zone (topology.kubernetes.io/zone) of each node by its index (control plane first), as clusters/kind/*.yaml label them
    zones: tuple[str, ...] = ("zone-a", "zone-a", "zone-b")
    #: enable-local-redirect-policy as the agents resolve it (the lrp profile sets it; datapath.SRC_LRP)
    local_redirect_policy: bool = False
    #: bpf-lb-mode-annotation as the agents resolve it (Helm bpf.lbModeAnnotation; the dsr profile sets it): a Service's
    #: service.cilium.io/forwarding-mode counts (datapath.SRC_FORWARDING_MODE_ANNOTATION)
    lb_mode_annotation: bool = False
    #: bpf-lb-source-range-all-types as the agents resolve it (Cilium's default false: from 1.19 a LoadBalancer Service's
    #: ranges are checked on its VIP and, from 1.20, its externalIPs only; 1.18 checks every type; datapath.SRC_SOURCE_RANGES_TYPES)
    lb_source_range_all_types: bool = False
    #: enable-health-check-loadbalancer-ip as the agents resolve it (the kind values set Helm
    #: nodePort.enableHealthCheckLoadBalancerIP: true; Cilium's default is false: datapath.SRC_HEALTH_LB_IP)
    health_check_lb_ip: bool = True
    faults: Faults = field(default_factory=Faults)
