"""VIPs reached from outside: a suite's own LB-IPAM pool, its LoadBalancer Services' addresses, and HTTP requests from the
runner routed through a chosen node.

How the runner reaches a VIP on kind: a route through a node (``ip route add <VIP>/32 via <node>``), as Cilium's own LB test
on kind does (rules.datapath.SRC_VIA_NODE) -- not L2 announcements, which are incompatible with externalTrafficPolicy Local
(SRC_L2_LIMITS), a thing the suites check, and answer IPv6 neighbour discovery only from 1.19. Choosing the node
is what lets a suite ask each node in turn. The route is the outside view's (cluster.outside.LocalOutside.via): only over a
specific route to the node, with CAP_NET_ADMIN, removed when the requests are done.

Each suite's pool selects its own namespace's Services (``io.kubernetes.service.namespace``: SRC_LBIPAM_SELECTOR) and holds
a block of each family the run tests; a PreferDualStack Service gets a VIP of each (SRC_LBIPAM_FAMILIES). The blocks are
from the benchmarking ranges (198.18.0.0/15, 2001:2::/48), which no cluster routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.errors import ForeignObject
from ..core.tokens import token
from ..core.wait import eventually
from ..judge.north_south import OutsideHttp
from ..observe.lab import Lab
from ..parse.addr import family_of, hp, valid_ip
from ..parse.metrics import drops_that_rose


#: the label by which a suite's LB-IPAM pool selects the suite's Services (its value: the pool's name)
POOL_LABEL = "kpr.cilium.io/pool"


@dataclass(frozen=True)
class Blocks:
    """A suite's addresses: its pool's block per family (start, stop) and a spare address per family outside the pool
    (for externalIPs)."""
    ipv4: tuple[str, str]
    ipv6: tuple[str, str]
    spare4: str
    spare6: str

    def block(self, family: str) -> tuple[str, str]:
        return self.ipv6 if family == "IPv6" else self.ipv4

    def spare(self, family: str) -> str:
        return self.spare6 if family == "IPv6" else self.spare4


def suite_blocks(base: str, k: int) -> Blocks:
    """The addresses of outside suite ``k`` (0 north-south, 1 source ranges, 2 protocols) from --kpr-outside-vip-base
    ``IPV4,IPV6``: IPv4 base + k*256 + 10..19 and + 30, IPv6 base + k*0x10000 + 0x10..0x19 and + 0x30."""
    from ipaddress import ip_address

    b4, b6 = (ip_address(x.strip()) for x in base.split(","))
    four, six = b4 + k * 256, b6 + k * 0x10000
    return Blocks((str(four + 10), str(four + 19)), (str(six + 0x10), str(six + 0x19)), str(four + 30), str(six + 0x30))


class Vips:
    def __init__(self, lab: Lab, labels: dict[str, str], track: Callable[[dict[str, Any]], None], blocks: Blocks, name: str):
        """``labels``: the run's (its pool carries them and selects its Services by them); ``track``: deletes the pool at
        the end; ``name``: the pool's (with the run's id: pools are cluster-wide)."""
        self.lab, self.labels, self.track, self.blocks, self.name = lab, dict(labels), track, blocks, name

    def pool(self) -> dict[str, Any]:
        api = "cilium.io/v2" if self.lab.minor >= (1, 18) else "cilium.io/v2alpha1"
        families = [f for f in self.lab.ip_families if f in ("IPv4", "IPv6")] or ["IPv4"]
        return {"apiVersion": api, "kind": "CiliumLoadBalancerIPPool",
                "metadata": {"name": self.name, "labels": self.labels},
                "spec": {"blocks": [{"start": self.blocks.block(f)[0], "stop": self.blocks.block(f)[1]} for f in families],
                         "serviceSelector": {"matchLabels": {**self.labels, "io.kubernetes.service.namespace": self.lab.ns,
                                                             POOL_LABEL: self.name}}}}

    def create_pool(self) -> None:
        """The suite's pool; from here on the lab's Services carry its :data:`POOL_LABEL` (the pool selects only those:
        in a named --kpr-namespace the suites share one namespace, and another suite's pool must not hand them VIPs)."""
        pool = self.pool()
        self.lab.kube.create(pool)
        self.track(pool)
        self.lab.service_labels[POOL_LABEL] = self.name

    def vip(self, lab: Lab, service: str) -> str:
        """The VIP of ``lab``'s family LB-IPAM gave ``service`` (waited for)."""
        def ingress() -> list[str]:
            svc = lab.kube.get("Service", service, lab.ns) or {}
            return [str(i.get("ip")) for i in (svc.get("status") or {}).get("loadBalancer", {}).get("ingress") or [] if i.get("ip")]

        start, stop = self.blocks.block(lab.family or "IPv4")
        ips = eventually(ingress, until=lambda ips: any(family_of(i) == (lab.family or "IPv4") for i in ips),
                         timeout=lab.t.DATAPATH_CONVERGENCE, what=f"LB-IPAM to give {service} an {lab.family or 'IPv4'} VIP from "
                         f"{start}-{stop}", describe=lambda ips: ", ".join(ips) or "none", progress=lab.progress).value or []
        return self.owned(lab.address_of(ips, f"Service {service}'s VIP"), f"Service {service}'s VIP")

    def owned(self, ip: str, what: str) -> str:
        """``ip`` when it is one of the run's own addresses (in its pool's block of that family, or its spare one), else
        ForeignObject: the run routes only addresses it allocated. A cluster-wide pool of someone else's that handed
        the Service a public address, or an address in another spelling, is refused in one line and nothing is routed."""
        from ipaddress import ip_address

        family = "IPv6" if ":" in ip else "IPv4"
        start, stop = self.blocks.block(family)
        if valid_ip(ip) == ip and (ip == self.blocks.spare(family) or ip_address(start) <= ip_address(ip) <= ip_address(stop)):
            return ip
        raise ForeignObject(f"not routing {ip}: {what} is not from this run's pool {self.name} ({start}-{stop}) nor its spare "
                            f"address: another pool selects the run's Services (narrow that pool's serviceSelector to leave "
                            f"namespaces named kpr-* alone)")


def request(lab: Lab, outside: Any, ip: str, port: int, node: str, pods: list[str], timeout: float) -> OutsideHttp:
    """One HTTP GET from the runner to ``ip:port`` (routed through ``node`` by the caller), the backend that logged it
    among ``pods`` and the client address it saw."""
    mark = token()
    r = outside.http(f"http://{hp(ip, port)}/?kpr={mark}", timeout)
    served = lab.who_served(pods, mark) if pods and r.http_code == 200 else None
    return OutsideHttp(hp(ip, port), node, r.http_code if r.http_code else None, str(getattr(r.verdict, "value", r.verdict)),
                       served[0] if served else None, served[1] if served else None)


def drops_during(lab: Lab, node: str, fn: Callable[[], Any]) -> tuple[Any, tuple[str, ...]]:
    """``fn()``'s result and the drop reasons that rose on ``node``'s agent meanwhile (``bpf metrics list`` before and
    after: "reason xN on node (direction, file:line)")."""
    agent = lab.agent(node)
    before = agent.read("metrics")[0]
    out = fn()
    after = agent.read("metrics")[0]
    return out, tuple(str(d) for d in drops_that_rose({node: before}, {node: after}))
