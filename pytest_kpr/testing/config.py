"""The fake cluster's configuration (what a conforming cluster looks like) and its faults (what breaks).

A configuration is something real Cilium can be set to; a fault is something real Cilium must not do.
Every conforming behaviour follows a sourced rule in :mod:`pytest_kpr.datapath`; a fault departs from
one rule, so the suite that checks that rule must fail on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Faults:
    """Each flag breaks one property the suites check. All off = a conforming cluster."""

    kpr_disabled: bool = False  # agents report KubeProxyReplacement False
    kube_proxy_rules: str | None = None  # "nft" | "legacy": kube-proxy's KUBE-SVC/KUBE-SEP rules on every node
    #: the per-packet plane drops a backendless service's traffic although the agent says reject
    no_backend_silent_drop: bool = False
    #: the per-packet plane rejects with ICMP 3/<code> instead of 3/3 (port unreachable), e.g. 1 (host unreachable)
    reject_icmp_code: int | None = None
    #: the socket plane follows ServiceNoBackendResponse=drop (connect() times out) -- the belief the source disproves
    socket_lb_honours_drop: bool = False
    slots_cap: int | None = None  # the agents program at most this many backend slots per frontend (never converge)
    socket_lb_broken: bool = False  # the agent reports socket LB, yet pod connections take the per-packet path
    nodeport_listener: bool = False  # a process listens on every NodePort in the nodes' host namespace


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
    lb_algorithm: str = "Random"
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
    #: LB-IPAM gives a claimant whose ports now conflict on a shared IP another IP (instead of keeping it)
    lbipam_reassigns_on_conflict: bool = False
    faults: Faults = field(default_factory=Faults)
