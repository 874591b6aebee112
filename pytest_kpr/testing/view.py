"""What the fake cluster's parts (agents, load balancer, node tools, workloads, reachability) may see of
the cluster: a protocol, so that they depend on this and not on :mod:`.fake`, which builds them.

Imports run one way only: ``fake`` -> ``agent``/``lb``/``node``/``pods``/``reach`` -> ``view``/``config``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..rules.lbmodel import LbModel
from ..core.versions import Version
from ..parse.addr import family_of
from .config import FakeConfig

Obj = dict[str, Any]


@dataclass(frozen=True)
class FakeBackend:
    ip: str
    port: int
    node: str
    pod: str
    #: active | terminating (its EndpointSlice entry serving and terminating: datapath.SRC_TERMINATING_STATE) |
    #: terminating-not-serving | maintenance (not ready): lbcp's backend states
    state: str = "active"
    #: the zones its EndpointSlice entry's hints name (hints.forZones)
    zones: tuple[str, ...] = ()


@dataclass
class FakeFrontend:
    ip: str
    port: int
    proto: str
    type: str
    service: str  # ns/name
    port_name: str
    backends: list[FakeBackend] = field(default_factory=list)
    id: int = 0
    status: str = "Done"
    error: str = ""
    #: the internal scope's backends when they differ from the external scope's (externalTrafficPolicy=Local): what
    #: east-west lookups (socket plane, pods) pick from; ``backends`` is what traffic from outside sees
    internal: list[FakeBackend] | None = None
    #: terminating backends while an active one exists: they keep their slots after ``backends`` (the master's count
    #: leaves them out), so established connections still find them but new ones never pick them (SRC_TERMINATING_SLOTS)
    draining: list[FakeBackend] = field(default_factory=list)
    #: backends in maintenance (not ready, not terminating): a backend entry in the maps, no slot
    maintenance: list[FakeBackend] = field(default_factory=list)
    #: False: the service map was full when this frontend was reconciled (it has no entry; datapath.SRC_MAP_FULL)
    in_map: bool = True
    #: its reverse-NAT entry was written (before the master: it stays when the master entry did not fit)
    rev_in_map: bool = True
    #: its backend slots were written (they come first)
    slots_in_map: bool = True
    #: its Service's spec.loadBalancerClass (None: none)
    lb_class: str | None = None
    #: the internal scope's backends that only keep their slots (as ``draining`` is for ``backends``)
    internal_draining: list[FakeBackend] = field(default_factory=list)
    #: the ID of its internal-scope twin (``<addr>/i``, a frontend of its own: a NodePort or LoadBalancer with one Local
    #: traffic policy), whose backends are ``internal``; 0: none
    internal_id: int = 0
    #: its Service's sessionAffinity timeout in seconds, written on the master entry (0: no session affinity)
    affinity_timeout: int = 0
    #: its Service's loadBalancerSourceRanges (normalised CIDRs): the agent writes them for every frontend of the Service,
    #: whether its type checks them (its flags say) or not
    source_ranges: tuple[str, ...] = ()
    #: the ServiceFlags of its master and slot entries (lbcp.bpf.master_flags; printed by lbcp.bpf.flags_string)
    flags: int = 0
    #: it wrote its address's wildcard entry (``<ip>:0/ANY``, 1.19+: datapath.SRC_WILDCARD), the first frontend of that address
    wildcard_in_map: bool = False

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.ip, self.port, self.proto)

    @property
    def internal_key(self) -> tuple[str, int, str]:
        return (self.ip, self.port, f"{self.proto}/i")



def pod_ip(pod: Obj, family: str = "IPv4") -> str | None:
    """A pod's address of ``family`` (``status.podIPs``; ``podIP`` alone for IPv4), None if it has none."""
    ips = [i.get("ip") for i in pod.get("status", {}).get("podIPs") or []] or [pod.get("status", {}).get("podIP")]
    return next((i for i in ips if i and family_of(i) == family), None)


class LbView(Protocol):
    model: LbModel

    def now_ms(self) -> float: ...

    def backend_id(self, ip: str, port: int, proto: str) -> int: ...

    def renumber(self) -> None: ...

    def frontends(self, node: str) -> list[FakeFrontend]: ...

    def find(self, node: str, ip: str, port: int, proto: str = "TCP") -> FakeFrontend | None: ...


class NodeToolsView(Protocol):
    def handle(self, node: str, argv: list[str]) -> tuple[int, str, str]: ...



class ClusterView(Protocol):
    cfg: FakeConfig
    tick: int
    clock: Any  # pytest_kpr.core.clock.VirtualClock: the fake's time, shared with whatever waits on it
    pod_exec_handlers: dict[str, Callable[[Obj, list[str]], tuple[int, str, str]]]
    node_exec_handlers: dict[str, Callable[[str, list[str]], tuple[int, str, str]]]
    node_listeners: dict[str, list[int]]
    node_nft_tables: dict[str, str]
    kube_proxy_nodes: set[str]
    kube_proxy_cleaned: set[str]

    @property
    def lb(self) -> LbView: ...

    @property
    def node_tools(self) -> NodeToolsView: ...
    ct: dict[str, list[dict[str, Any]]]
    upgrades: Any  # pytest_kpr.testing.upgrade.FakeUpgrades
    agents: dict[str, Any]  # node -> pytest_kpr.testing.agent.FakeAgent

    @property
    def version(self) -> Version: ...

    def node_names(self) -> list[str]: ...

    def node_ip(self, node: str) -> str: ...

    @property
    def dual_stack(self) -> bool: ...

    def node_ip6(self, node: str) -> str: ...

    def node_ip_of(self, node: str, family: str) -> str: ...

    def zone_of(self, node: str) -> str | None: ...

    def node_labels(self, node: str) -> dict[str, str]: ...

    def node_addresses(self) -> dict[str, str]: ...

    def cilium_internal_ip(self, node: str, family: str = "IPv4") -> str: ...

    def services(self) -> list[Obj]: ...

    def local_redirect_policies(self) -> list[Obj]: ...

    def service(self, key: str) -> Obj: ...

    def endpoints_of(self, svc: Obj) -> list[Obj]: ...

    def endpointslices(self, svc: Obj) -> list[Obj]: ...

    def pods(self, ns: str | None = None) -> list[Obj]: ...

    def pod_ready(self, pod: Obj) -> bool: ...

    def endpoints_on(self, node: str) -> list[dict[str, Any]]: ...

    def ct_entries(self, node: str) -> list[dict[str, Any]]: ...

    def curl_from_node(self, node: str, args: list[str], host_network: bool = True) -> tuple[int, str, str]: ...
