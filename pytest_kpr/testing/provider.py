""":class:`FakeProvider`: the provider interface over a :class:`FakeCluster`."""

from __future__ import annotations

import json

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from ..cluster.provider import ClusterHandle, Progress
from ..core.errors import ProvisioningError, Unavailable
from ..parse.addr import hp
from ..traffic.probes import ProbeResult, Verdict
from .fake import FakeCluster
from ..parse.addr import family_of
from .reach import curl_result, probe_result, reach
from .faults import Fails, Fault, declare


FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("helm_install_fails", "setup", "the helm install of Cilium fails (the run stops in its install phase)",
          proven_by="tests/evidence/test_run_record.py::test_a_failed_setup_leaves_its_phase_error_and_diagnostics_exits_3_and_shows_red_in_the_matrix"),
    Fault("icmp_error_not_revnatted", "ICMP errors",
          doc="an ICMP error about a NodePort request the node source-NATed is not reverse-translated: the client never gets it",
          fails=Fails(tests="test_a_fragmentation_needed_error_reaches_the_client_reverse_translated",
                      says="*ICMP errors (fragmentation needed through a SNATed NodePort): no ICMP error came back to 172.18.0.1:* for its datagram to 172.18.0.3:* (timeout), though ie-backend on fake-worker2 answered it with fragmentation needed*")),
    Fault("icmp_error_inner_untranslated", "ICMP errors",
          doc="an ICMP error about a source-NATed NodePort request reaches the client with the header inside it still as the backend "
              "saw it (the node's SNAT address and port, the backend's address)",
          fails=Fails(tests="test_a_fragmentation_needed_error_reaches_the_client_reverse_translated",
                      says="*ICMP errors (fragmentation needed through a SNATed NodePort): the error carries 10.244.1.*:32768 -> 10.244.2.*:7000, not the datagram as sent, 172.18.0.1:* -> 172.18.0.3:*: its inner header was not reverse-translated*")),
    Fault("vip_health_frontend_missing", "north-south",
          doc="the agents report enable-health-check-loadbalancer-ip true, yet nothing answers <VIP>:<healthCheckNodePort> from outside",
          fails=Fails(tests="test_the_vip_health_frontend_says_which_nodes_have_a_backend",
                      says="*north-south (health frontend 198.18.21.11:*): 198.18.21.11:* through fake-control-plane (0 local endpoints): no answer (timeout), expected HTTP 503*")),
)


class FakeOutside:
    """The runner host of the fake: it reaches the nodes' InternalIPs and nothing else, and its probes
    are answered from the fake's load-balancer state (no packet is sent anywhere)."""

    def __init__(self, cluster: FakeCluster):
        self.cluster = cluster
        self.raw = cluster.cfg.runner_net_raw

        #: the addresses routed through a node (:meth:`via`): address -> node
        self.routes: dict[str, str] = {}

    def reaches(self, ip: str) -> bool:
        return self.cluster.cfg.runner_reaches_nodes and (ip in self.cluster.node_addresses() or ip in self.routes)

    @contextmanager
    def via(self, node_ip: str, addresses: Sequence[str]) -> Iterator[str | None]:
        """As the runner's routes (cluster.outside.LocalOutside.via): each address goes to that node while the context lasts."""
        node = self.cluster.node_addresses().get(node_ip)
        why = None
        if not self.cluster.cfg.runner_reaches_nodes or node is None:
            why = f"no specific route to the node {node_ip}"
        elif not self.cluster.cfg.runner_net_admin:
            why = "the runner lacks CAP_NET_ADMIN, needed to route a VIP through a node (ip route add)"
        elif any(a in self.routes for a in addresses):
            why = f"{', '.join(a for a in addresses if a in self.routes)} already has a route on the runner"
        added = [] if why is not None or node is None else list(addresses)
        self.routes.update({a: node for a in added if node is not None})
        try:
            yield why
        finally:
            for a in added:
                self.routes.pop(a, None)

    def _health(self, ip: str, port: int, node: str) -> int | None:
        """The answer through a VIP's health frontend (datapath.SRC_HEALTH_LB_IP): its backend is the receiving node's own
        address at the port, so ``node``'s health server answers (pods.health_answer); None when ``ip:port`` is no such
        frontend."""
        if not self.cluster.cfg.health_check_lb_ip or self.cluster.cfg.faults.vip_health_frontend_missing:
            return None
        for svc in self.cluster.services():
            spec = svc.get("spec") or {}
            ingress = [i.get("ip") for i in (svc.get("status") or {}).get("loadBalancer", {}).get("ingress") or []]
            if ip in ingress and spec.get("externalTrafficPolicy") == "Local" and spec.get("healthCheckNodePort") == port:
                answer = self.cluster.workloads.health_answer(self.cluster.node_ip_of(node, family_of(ip)), port)
                return answer[0] if answer else 0
        return None

    #: the runner's address on the nodes' network (kind's docker bridge gateway)
    ADDRESS = "172.18.0.1"

    #: its IPv6 address there (a dual-stack fake)
    ADDRESS6 = "fc00:f853:ccd:e793::1"

    def source_address(self, ip: str) -> str | None:
        return (self.ADDRESS6 if ":" in ip else self.ADDRESS) if self.reaches(ip) else None

    def http(self, url: str, timeout: float, source_port: int | None = None) -> ProbeResult:
        import re

        m = re.fullmatch(r"http://(?:([0-9.]+)|\[([0-9a-fA-F:]+)\]):(\d+)(/.*)?", url)
        assert m, url
        ip, port = m.group(1) or m.group(2), int(m.group(3))
        node = self.cluster.node_addresses().get(ip) or self.routes.get(ip)
        if node is None or not self.reaches(ip):  # nothing routes it here: it would take the default route (never sent)
            return ProbeResult("http", url, Verdict.TIMEOUT, timeout * 1000, detail="no route")
        health = self._health(ip, port, node) if ip in self.routes else None
        if health == 0:  # nothing listens on the node's address: its stack resets
            return ProbeResult("http", url, Verdict.REFUSED, 1.0, detail="connection refused")
        if health is not None:
            return ProbeResult("http", url, Verdict.HTTP, 1.0, http_code=health)
        source = self.source_address(ip) or self.ADDRESS
        flow = (source, source_port) if source_port else None
        outcome = reach(self.cluster, node, host_network=True, access="connect", ip=ip, port=port, outside=True, flow=flow,
                        source=source)
        code, secs, rc, err = curl_result(outcome, ip, port, timeout)
        if rc == 0:
            self.cluster.workloads.served(outcome, source, m.group(4) or "/")
            return ProbeResult("http", url, Verdict.HTTP, secs * 1000, http_code=code)
        return ProbeResult("http", url, Verdict.TIMEOUT if rc == 28 else Verdict.REFUSED, secs * 1000, detail=err.strip())

    def can_send_raw(self) -> bool:
        return self.raw

    def raw_syn(self, ip: str, port: int, timeout: float) -> ProbeResult:
        node = self.cluster.node_addresses()[ip]
        r = probe_result(reach(self.cluster, node, host_network=True, access="raw", ip=ip, port=port, outside=True), "syn", timeout)
        return ProbeResult("syn", hp(ip, port), Verdict(r["verdict"]), float(r["elapsed_ms"]),  # type: ignore[arg-type]
                           icmp_type=r.get("icmp_type"), icmp_code=r.get("icmp_code"))  # type: ignore[arg-type]


    def udp_icmp(self, ip: str, port: int, timeout: float, sport: int | None = None) -> ProbeResult:
        """A UDP datagram to a node's NodePort and the ICMP error about it: a backend pod running ``kpr probe
        frag-needed-responder`` answers it with fragmentation needed; the receiving node, which source-NATed the request to a
        backend on another node, reverse-translates the error (datapath.SRC_ICMP_ERROR_REVNAT; the fault: it does not, and the
        client gets nothing)."""
        node = self.cluster.node_addresses().get(ip)
        source = hp(self.source_address(ip) or self.ADDRESS, sport or 45123)
        if node is None or not self.reaches(ip) or family_of(ip) != "IPv4":  # the probe and the responder speak ICMPv4 only
            return ProbeResult("udp-icmp", hp(ip, port), Verdict.TIMEOUT, timeout * 1000, source=source,
                               detail="IPv4 only" if node is not None and family_of(ip) != "IPv4" else "no route")
        outcome = reach(self.cluster, node, host_network=True, access="raw", ip=ip, port=port, outside=True, proto="UDP",
                        source=self.source_address(ip))
        be = outcome.backend
        pod = next((p for p in self.cluster.pods() if be is not None and p["metadata"]["name"] == be.pod), None)
        command = " ".join(((pod or {}).get("spec", {}).get("containers") or [{}])[0].get("command") or [])
        if outcome.result != "answered" or be is None or pod is None or "frag-needed-responder" not in command:
            return ProbeResult("udp-icmp", hp(ip, port), Verdict.TIMEOUT, timeout * 1000, source=source,
                               detail=f"no ICMP error within {timeout:g}s")
        mtu = int(command.split("--mtu", 1)[1].split()[0]) if "--mtu" in command else 1200
        # the responder logs what it answered (traffic.probes.frag_needed_responder: a JSON line per datagram), as it saw it
        seen_from = hp(self.cluster.cilium_internal_ip(node, family_of(ip)), 32768) if be.node != node else source
        self.cluster.workloads.logs.setdefault((pod["metadata"]["namespace"], be.pod), []).append(
            json.dumps({"from": seen_from, "to": hp(be.ip, be.port), "icmp": "3/4", "mtu": mtu}))
        if be.node != node and self.cluster.cfg.faults.icmp_error_not_revnatted:  # fault: the error is lost on its way back
            return ProbeResult("udp-icmp", hp(ip, port), Verdict.TIMEOUT, timeout * 1000, source=source,
                               detail=f"no ICMP error within {timeout:g}s")
        inner_src, inner_dst = source, hp(ip, port) if be.node != node else hp(be.ip, be.port)  # a local backend: no SNAT
        if self.cluster.cfg.faults.icmp_error_inner_untranslated and be.node != node:  # fault: the header as the backend saw it
            inner_src, inner_dst = hp(self.cluster.cilium_internal_ip(node, family_of(ip)), 32768), hp(be.ip, be.port)
        return ProbeResult("udp-icmp", hp(ip, port), Verdict.ICMP_UNREACHABLE, 1.0, icmp_type=3, icmp_code=4, source=source,
                           extra={"from": be.ip, "inner_src": inner_src, "inner_dst": inner_dst, "mtu": mtu})


class FakeProvider:
    name = "fake"

    def __init__(self, cluster: FakeCluster, *, created: bool = True, unavailable: str | None = None, values: dict[str, Any] | None = None):
        self.cluster = cluster
        self.created = created
        self.unavailable = unavailable
        self.events: list[str] = []
        self.values = values or {"kubeProxyReplacement": True, "k8sServiceHost": f"{cluster.cfg.name}-control-plane", "k8sServicePort": 6443}

    @property
    def clock(self) -> Any:
        """The fake cluster's virtual clock: the session makes it the run's, so waits on the fake cost no real time."""
        return self.cluster.clock

    def helm_values(self) -> dict[str, Any]:
        return dict(self.values)

    def upgrade(self, to_version: str, from_version: str, progress: Progress) -> None:
        """The fake's roll: agents replaced node by node in wall time (pytest_kpr.testing.upgrade)."""
        self.events.append(f"upgrade {from_version} -> {to_version}")
        progress(f"fake cluster: rolling the agents from Cilium {from_version} to {to_version}")
        self.cluster.start_roll(to_version)

    def preflight(self) -> None:
        self.events.append("preflight")
        if self.unavailable:
            raise Unavailable(self.unavailable)

    #: told when the install begins (the session records it as its own phase)
    on_phase: Any = staticmethod(lambda phase: None)

    @property
    def cluster_name(self) -> str:
        return self.cluster.cfg.name

    def diagnostics_kube(self) -> FakeCluster:
        return self.cluster

    def diagnostics(self) -> dict[str, str]:
        """What ``helm status cilium`` says about the fake's install."""
        failed = self.cluster.cfg.faults.helm_install_fails
        return {"helm-status.txt": f"NAME: cilium\nNAMESPACE: kube-system\nSTATUS: {'failed' if failed else 'deployed'}\n"
                                   f"CHART: cilium-{self.cluster.cfg.cilium_version}\n"}

    def provision(self, progress: Progress) -> ClusterHandle:
        self.events.append("provision")
        progress(f"using fake cluster {self.cluster.cfg.name}")
        self.on_phase("install")
        if self.cluster.cfg.faults.helm_install_fails:  # as cluster/cilium.py helm_install words helm's failure
            raise ProvisioningError(f"helm install of Cilium {self.cluster.cfg.cilium_version} failed: Error: INSTALLATION FAILED: "
                                    "context deadline exceeded (fake fault helm_install_fails)")
        return ClusterHandle(self.cluster.cfg.name, self.name, self.cluster, self.cluster, self.created, outside=FakeOutside(self.cluster))

    def share(self, handle: ClusterHandle) -> dict[str, Any]:
        return {"name": self.cluster.cfg.name, "created": self.created}

    def attach(self, shared: dict[str, Any], progress: Progress) -> ClusterHandle:
        """Another process provisioned "the" cluster. The fake lives in this process's memory, so each worker
        has its own copy; what is shared (and counted by the xdist tests) is who provisions and who tears down."""
        self.events.append("attach")
        self.created = bool(shared["created"])
        progress(f"attaching to fake cluster {shared['name']}")
        return ClusterHandle(self.cluster.cfg.name, self.name, self.cluster, self.cluster, self.created, outside=FakeOutside(self.cluster))

    def teardown(self, progress: Progress) -> None:
        self.events.append("teardown")
