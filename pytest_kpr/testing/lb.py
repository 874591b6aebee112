"""The fake agent's load-balancer state, derived from the fake cluster's Services and ready pods.

It mirrors what Cilium programs: one frontend per (address, port, protocol), a service ID (= RevNAT
ID) per frontend that stays stable while the frontend exists, backend slots 1..N for the ready
endpoints. NodePort services get ``0.0.0.0:<nodePort>`` and ``<node InternalIP>:<nodePort>`` frontends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .fake import FakeCluster


@dataclass(frozen=True)
class FakeBackend:
    ip: str
    port: int
    node: str
    pod: str


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

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.ip, self.port, self.proto)


class LbState:
    """Allocates stable IDs and computes each node's frontends on demand."""

    def __init__(self, cluster: "FakeCluster"):
        self.cluster = cluster
        self._ids: dict[tuple[str, int, str], int] = {}
        self._next_id = 1

    def _id(self, key: tuple[str, int, str]) -> int:
        if key not in self._ids:
            self._ids[key] = self._next_id
            self._next_id += 1
        return self._ids[key]

    def backends_of(self, svc: dict, port: dict) -> list[FakeBackend]:
        c = self.cluster
        target = int(port.get("targetPort", port["port"]))
        bes = [
            FakeBackend(p["status"]["podIP"], target, p["spec"]["nodeName"], p["metadata"]["name"])
            for p in c.endpoints_of(svc)
            if c.pod_ready(p)
        ]
        cap = c.cfg.faults.slots_cap
        return bes[:cap] if cap is not None else bes

    def frontends(self, node: str) -> list[FakeFrontend]:
        """The frontends the agent on ``node`` has programmed, sorted by ID."""
        c = self.cluster
        out: list[FakeFrontend] = []
        node_ip = c.node_ip(node)
        for svc in c.services():
            spec = svc["spec"]
            name = f"{svc['metadata']['namespace']}/{svc['metadata']['name']}"
            for port in spec.get("ports", []):
                proto = port.get("protocol", "TCP")
                bes = self.backends_of(svc, port)
                pname = port.get("name", "")

                def add(ip: str, p: int, typ: str) -> None:
                    fe = FakeFrontend(ip, p, proto, typ, name, pname, list(bes))
                    out.append(fe)

                if spec.get("clusterIP") and spec["clusterIP"] != "None":
                    add(spec["clusterIP"], int(port["port"]), "ClusterIP")
                if spec.get("type") in ("NodePort", "LoadBalancer") and port.get("nodePort"):
                    add("0.0.0.0", int(port["nodePort"]), "NodePort")
                    add(node_ip, int(port["nodePort"]), "NodePort")
                for eip in spec.get("externalIPs") or []:
                    add(eip, int(port["port"]), "ExternalIPs")
                for ing in (svc.get("status", {}).get("loadBalancer", {}).get("ingress") or []):
                    if ing.get("ip"):
                        add(ing["ip"], int(port["port"]), "LoadBalancer")
        for fe in out:
            fe.id = self._id(fe.key)
        live = {fe.key for fe in out}
        for key in [k for k in self._ids if k not in live]:  # a deleted frontend frees its ID
            del self._ids[key]
        return sorted(out, key=lambda f: f.id)

    def find(self, node: str, ip: str, port: int, proto: str = "TCP") -> FakeFrontend | None:
        for fe in self.frontends(node):
            if fe.key == (ip, port, proto):
                return fe
        return None
