"""The fake cluster's configuration (what a conforming cluster looks like) and its faults (what breaks).

A configuration is something real Cilium can be set to; a fault is something real Cilium must not do.
Every conforming behaviour follows a sourced rule in :mod:`pytest_kpr.rules.datapath`; a fault departs from
one rule, so the suite that checks that rule must fail on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Faults:
    """Each flag breaks one property the suites check. All off = a conforming cluster."""

    kpr_disabled: bool = False  # agents report KubeProxyReplacement False
    helm_install_fails: bool = False  # the helm install of Cilium fails (the run stops in its install phase)
    agents_never_ready: bool = False  # the agents never report Ok (the run stops in its readiness phase)
    #: kube-proxy's rules on every node: "nft" / "legacy" (iptables mode, in that backend), "sep-only" (only
    #: KUBE-SEP chains), "nodeports" (only a KUBE-NODEPORTS chain for the NodePort services), "nftables"
    #: (kube-proxy in nftables mode: its "kube-proxy" table)
    kube_proxy_rules: str | None = None
    #: kube-proxy's service rules in ip6tables only ("nft" / "legacy"): what it programs for an IPv6 Service
    kube_proxy_rules_v6: str | None = None
    #: "iptables-nft" | "iptables-legacy" | "ip6tables-nft" | "ip6tables-legacy" | "nft": that view's tool is missing
    unreadable_rule_view: str | None = None
    missing_agent_on: str | None = None  # this node runs no cilium-agent pod
    snat_at_backend: bool = False  # a backend sees the client's node address (SNAT) instead of its pod address
    getpeername_backend: bool = False  # getpeername() returns the backend, not the service (no reverse translation)
    #: the agent reports Hostns-only coverage (configure socket_lb_hostns_only=True), yet pods take the socket path
    socket_lb_reverse: bool = False
    slow_reject_ms: int | None = None  # the per-packet plane's reject arrives this late
    stale_slots: bool = False  # backends removed by scaling down stay in the BPF slots
    #: this node's agent lacks one backend of every service that has more than two (a scale-up never converges there)
    backend_missing_on: str | None = None
    backend6_missing: bool = False  # IPv6 only (dual stack): every agent's IPv6 frontends with more than 2 backends lack one
    nodeport_wrong_port: bool = False  # NodePort frontends are programmed on nodePort+1
    health_without_error: bool = False  # db/show health shows the reflector Degraded, but without the conflict error
    error_without_degraded: bool = False  # db/show health carries the error, but status counts no degraded module
    #: the per-packet plane drops a backendless service's traffic although the agent says reject
    no_backend_silent_drop: bool = False
    #: the per-packet plane rejects with ICMP 3/<code> instead of 3/3 (port unreachable), e.g. 1 (host unreachable)
    reject_icmp_code: int | None = None
    #: the socket plane follows ServiceNoBackendResponse=drop (connect() times out) -- the belief the source disproves
    socket_lb_honours_drop: bool = False
    #: this node's per-packet plane drops the service traffic it handles although the service has backends, counting it
    #: in its BPF metrics as "Service backend not found" (DROP_NO_SERVICE, 158: cilium/cilium pkg/monitor/api/drop.go)
    per_packet_drop_on: str | None = None
    slots_cap: int | None = None  # the agents program at most this many backend slots per frontend (never converge)
    socket_lb_broken: bool = False  # the agent reports socket LB, yet pod connections take the per-packet path
    nodeport_listener: bool = False  # a process listens on every NodePort in the nodes' host namespace
    #: the backend behind another node sees the other SNAT address than the routing mode gives: the receiving node's
    #: InternalIP in tunnel routing (instead of its CiliumInternalIP), its CiliumInternalIP in native routing
    snat_address_swapped: bool = False
    #: IPv6 only (dual stack): the same for IPv6 requests (ROUTER_IP and IPV6_DIRECT_ROUTING swapped)
    snat6_address_swapped: bool = False
    #: IPv6 only (dual stack): the health-check NodePort server listens on IPv4 only (nothing answers it on a node's IPv6 address)
    healthserver_v4_only: bool = False
    #: the socket plane's no-backend connect() fails with EPERM on a kernel that lets it set EHOSTUNREACH (6.1+)
    eperm_on_new_kernel: bool = False
    #: the per-packet plane hands a backendless Cluster-policy service's traffic to the node's stack (a reset) although the
    #: agent resolves enable-no-service-endpoints-routable true (the ICMP/drop answer is expected)
    no_backend_not_routable: bool = False
    #: the agent resolves enable-no-service-endpoints-routable false, yet the per-packet plane answers as if it were true
    not_routable_ignored: bool = False
    #: the agent's `config -a` lacks ServiceNoBackendResponse and its config-map has no service-no-backend-response
    no_backend_response_unreported: bool = False
    #: a rejected claimant gets its frontend this many (wall-clock) seconds after a Service is deleted: a re-queue
    #: that comes late (the shared-VIP watch must still see it) instead of never (Cilium 1.18) or at once (fixed)
    late_requeue_s: float | None = None
    #: this node's agent programs a new backend only slow_agent_s (wall-clock) seconds after it became ready
    slow_agent_on: str | None = None
    slow_agent_s: float = 2.0
    #: the socket LB translates UDP datagrams but not their replies' source (no recvmsg4): a client reads the backend's address
    udp_reply_from_backend: bool = False
    #: IPv6 only (dual stack): the recvmsg6 hook is missing, so an IPv6 datagram's reply comes from the backend's address
    recvmsg6_missing: bool = False
    #: IPv6 only (dual stack): pods' connections to an IPv6 ClusterIP take the per-packet path (no connect6 translation)
    #: while the agent reports Full coverage
    socket_lb_v6_broken: bool = False
    #: IPv6 only (dual stack): the agents program no ``[::]:<port>`` NodePort frontend (a NodePort Service is served over IPv4 only)
    nodeport_v6_missing: bool = False
    #: the agents ignore the service.kubernetes.io/headless label: a labelled Service's ClusterIP (and NodePorts) are programmed
    headless_label_ignored: bool = False
    #: the label is honoured for the ClusterIP only: a labelled NodePort Service's NodePort frontends are programmed
    headless_nodeport_programmed: bool = False
    #: IPv6 only (dual stack): under reject, a backendless IPv6 frontend drops the packet instead of answering ICMPv6 1/4
    no_backend_v6_drops: bool = False
    #: sendmsg4 lets a datagram to a backendless UDP Service through untranslated instead of failing sendto() (it times out)
    udp_no_backend_passes: bool = False
    affinity_ignored: bool = False  # sessionAffinity ClientIP is not honoured: every connect() picks a random backend
    affinity6_ignored: bool = False  # IPv6 only (dual stack): the same for connections to an IPv6 ClusterIP (no LB6 affinity)
    lb_always_first: bool = False  # the socket LB always picks the first backend slot (no spreading without affinity)
    kube_proxy_daemonset: bool = False  # kube-proxy runs as a DaemonSet in kube-system beside the replacement
    #: "namespace/name" of a kube-proxy DaemonSet as a distribution may ship it: its own name, no k8s-app label, only
    #: kube-proxy's image and command tell what it is
    kube_proxy_daemonset_as: str | None = None
    ipvs_services: bool = False  # every node has IPVS virtual services (kube-proxy's IPVS mode or its leftovers)
    #: the external scope of an externalTrafficPolicy=Local Service keeps every backend: a node without a local backend serves it
    etp_local_ignored: bool = False
    etp_snat: bool = False  # traffic from outside to an eTP=Local Service is SNATed: the backend sees the node, not the client
    etp_breaks_cluster_ip: bool = False  # an eTP=Local Service's ClusterIP is served from local backends only (iTP treated as Local)
    #: internalTrafficPolicy=Local is not honoured: the ClusterIP keeps every backend (a pod reaches another node's backend)
    itp_local_ignored: bool = False
    #: IPv6 only (dual stack): the same for the IPv6 ClusterIP
    itp6_local_ignored: bool = False
    #: a pod on a node without a local backend of an internalTrafficPolicy=Local Service gets a silent drop (connect() times
    #: out) instead of its plane's no-backend answer
    itp_no_local_drops: bool = False
    #: internalTrafficPolicy=Local narrows the external scope too: outside traffic through a node without a local backend fails
    itp_narrows_external: bool = False
    #: a terminating backend stays selectable while active ones exist: new connections may pick it
    terminating_selected: bool = False
    #: IPv6 only (dual stack): the same on an IPv6 frontend
    terminating6_selected: bool = False
    #: when only terminating backends remain they are not used: new connections get the no-backend answer
    terminating_never_used: bool = False
    #: a backend's established connections are reset the moment it starts terminating (its datapath state dropped at once)
    terminating_cuts_connections: bool = False
    #: a terminating backend's established connections go silent for 3 s when it starts terminating (no reset)
    terminating_stalls_connections: bool = False
    healthcheck_cluster_count: bool = False  # the health-check NodePort answers 200 with the cluster-wide backend count on every node
    #: with enable-no-service-endpoints-routable false, a pod's SYN to a backendless ClusterIP (per packet) gets a reset
    #: from the node's stack, as one to a NodePort does, though nothing on the node owns the ClusterIP
    not_routable_resets_anywhere: bool = False
    #: a pod's connected UDP socket to a deleted backend is not terminated: it keeps sending into the deleted pod
    udp_sockets_not_terminated: bool = False
    hairpin_no_loopback_nat: bool = False  # per packet, a pod's packet to its own Service is not NATed to the loopback address
    hairpin_socket_snat: bool = False  # a pod connected to itself by the socket hook sees the loopback address, as if NATed
    healthcheck_one_family: bool = False  # the health-check NodePort counts the backends of the Service's first family only (dual stack)
    #: a request from outside for another node's backend is forwarded in the other mode than the agent reports (it reports
    #: SNAT and the backend sees the client, or DSR and the backend sees the node)
    nodeport_mode_mismatch: bool = False
    hostport_v6_unserved: bool = False  # IPv6 only (dual stack): a dual-stack pod's hostPort gets no IPv6 HostPort frontend
    hostport_unserved: bool = False  # a pod's hostPort gets no HostPort frontend: nothing answers on the node's address
    hostport_portmap: bool = False  # the CNI portmap plugin's iptables DNAT rules serve the hostPort instead of BPF
    hostport_listener: bool = False  # a process listens on each hostPort in the node's host namespace (a userspace forwarder)
    hostport_double_admit: bool = False  # a second pod asking for a hostPort already taken on its node is admitted there
    maglev_seed_per_node: bool = False  # every agent resolves its own Maglev hash seed (a CiliumNodeConfig override per node)
    maglev_no_table: bool = False  # the agents report Maglev but program no lookup table (selection falls back to random)
    maglev_ignored: bool = False  # the agents report Maglev but pick a random backend per connection
    maglev_cluster_ip: bool = False  # ClusterIP frontends get a Maglev table too (as with bpf-lb-external-clusterip)
    maglev6_no_table: bool = False  # IPv6 only (dual stack): no Maglev table for IPv6 frontends (their selection falls back to random)
    #: the service map holds only this many entries, whatever size the agents report (other users filled it)
    service_map_capacity: int | None = None
    #: IPv6 only (dual stack): the lb6 service map holds only this many entries (the lb4 one what the agents report)
    service6_map_capacity: int | None = None
    #: the reverse-NAT map holds only this many entries, whatever size the agents report (it fills before the service map)
    rev_nat_map_capacity: int | None = None
    map_full_silent: bool = False  # frontends that do not fit in the service map show Done, no error, and health stays OK
    #: 1.19+: the agents write no wildcard entry for a ClusterIP or LoadBalancer address (datapath.SRC_WILDCARD says they do)
    no_wildcard_entries: bool = False
    map_entries_leak: bool = False  # a deleted Service's entries stay in the service map (and its frontend in the agent)
    kube_proxy_no_rules: bool = False  # a kube-proxy installed into the cluster runs but never programs its rules
    kube_proxy_cleanup_fails: bool = False  # kube-proxy --cleanup exits 0 and leaves its rules on the node
    affinity_no_timeout: bool = False  # sessionAffinity ClientIP never expires: timeoutSeconds is ignored
    # -- during an upgrade (pytest_kpr.testing.upgrade) --
    upgrade_renumbers_ids: bool = False  # the new agents give services and backends new IDs (not restored: PR #18119)
    upgrade_flushes_ct: bool = False  # the new agents start with an empty conntrack table (cf. #29667)
    upgrade_flushes_ct6: bool = False  # the new agents start with empty IPv6 conntrack maps (cilium_ct6_global), IPv4's kept
    upgrade_renumbers_ids6: bool = False  # the new agents give IPv6 services and backends new IDs, IPv4's restored
    upgrade_resets_flow: str | None = None  # this flow pod's connection is reset when its node's agent restarts
    upgrade_blackhole_flow: str | None = None  # this flow pod's path drops everything for 3 s from its node's restart
    upgrade_regresses_no_backend: bool = False  # the new agents answer a backendless service with drop, not reject


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
    faults: Faults = field(default_factory=Faults)


def check_faults(pairs: "tuple[tuple[str, object], ...]") -> tuple[tuple[str, object], ...]:
    """``--kpr-fake-faults`` as parsed ((name, value or None), ...), checked against :class:`Faults`: an unknown name or a
    missing value is a ValueError of one line; a flag given without a value is True."""
    from dataclasses import MISSING, fields

    known = {f.name: f for f in fields(Faults)}
    out = []
    for name, value in pairs:
        if name not in known:
            raise ValueError(f"no fake fault {name!r} (known: {', '.join(sorted(known))})")
        if value is None:
            default = known[name].default if known[name].default is not MISSING else None
            if not isinstance(default, bool):
                raise ValueError(f"fake fault {name} needs a value ({name}=VALUE)")
            value = True
        out.append((name, value))
    return tuple(out)
