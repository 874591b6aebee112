"""The fake cluster's workload pods: the connection holder, probe commands, curl and netstat in pods.

A holder pod (``kpr probe hold <ip>:<port> --sport N``) connects once a backend exists, as the real
one does after restarts: the agent on its node then holds an ``OUT`` conntrack entry to the backend,
the backend's node an ``IN`` entry, and its log the JSON line the real holder prints. With socket LB
in pod namespaces the application sees the service (``getpeername``) and the socket the backend; with
hostns-only coverage (or the ``socket_lb_broken`` fault) the connection takes the per-packet path: the
socket points at the service and a ``SVC`` conntrack entry translates it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..rules.datapath import (FORWARDING_MODE_ANNOTATION, NoRule, Plane, backend_sees, coverage_name, hairpin_source, hairpin_unjudged,
                              local_endpoint_count, plane_for, service_forwarding_mode)
from ..rules.workloads import seen_by
from .reach import ERRNO, Outcome, backend_listens, probe_result, reach
from ..parse.addr import family_of, hp, split_host_port
from .view import ClusterView, FakeFrontend, Obj, pod_ip
from .faults import Fails, Fault, declare


FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("snat_at_backend", "socket LB", "a backend sees the client's node address (SNAT) instead of its pod address",
          fails=Fails(name="snat-at-the-backend", tests="test_backend_sees_the_holder_pod_address",
                      says="*socket LB: the backend web-* sees [[]'172.18.0.3:61234'[]], not the holder's pod address 10.244.*:40404 (a node IP would mean SNAT)*")),
    Fault("getpeername_backend", "socket LB", "getpeername() returns the backend, not the service (no reverse translation)",
          fails=Fails(name="getpeername-returns-the-backend",
                      tests=("test_application_sees_the_service_while_its_socket_points_at_a_backend",
                             "udp::test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip"),
                      says=("*getpeername() returned 10.244.*:8080, not the service address 10.96.*:80: the reverse translation is missing*",
                            "*UDP (connected client to 10.96.*:53): getpeername() returned 10.244.*:5353, not 10.96.*:53: the getpeername4 reverse translation is missing*"))),
    Fault("snat_address_swapped", "DSR/SNAT", per_family=True,
          doc="the backend behind another node sees the other SNAT address than the routing mode gives: the receiving node's InternalIP in "
              "tunnel routing (instead of its CiliumInternalIP), its CiliumInternalIP in native routing (IPv6: ROUTER_IP and "
              "IPV6_DIRECT_ROUTING swapped)",
          fails=(
              # the SNAT source address (bpf/lib/nodeport.h tail_nodeport_nat_egress_ipv4): IPV4_GATEWAY in tunnel routing, the node's
              # direct-routing address in native routing
              Fails(name="snat-internal-ip-in-tunnel-mode", tests="test_the_backend_sees_the_address_the_nodeport_mode_promises",
                    says="*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw 172.18.0.3 (the receiving node's InternalIP), expected 10.244.1.118 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*"),
              Fails(name="snat-cilium-internal-ip-in-native-mode", fake="routing_mode='Native'",
                    tests="test_the_backend_sees_the_address_the_nodeport_mode_promises",
                    says="*DSR/SNAT (the agent reports NodePort mode SNAT, routing Native): the backend saw 10.244.1.118 (the receiving node's CiliumInternalIP), expected 172.18.0.3 (the receiving node's InternalIP: SNAT mode in native routing*"),
              Fails(name="ipv6-snat-to-the-other-address", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_the_backend_sees_the_address_the_nodeport_mode_promises[IPv6]",
                    says="*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw fc00:f853:ccd:e793::3 (the receiving node's InternalIP), expected fd00:10:244:1::76 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*ROUTER_IP for IPv6*"),
          )),
    Fault("mode_annotation_ignored", "forwarding mode",
          doc="the agents resolve bpf-lb-mode-annotation true, yet forward every Service in their own mode, whatever its "
              "service.cilium.io/forwarding-mode says",
          fails=(
              # the dsr profile (the agents' own mode DSR): fm-snat is forwarded in DSR too
              Fails(fake="nodeport_mode='DSR', routing_mode='Native', lb_mode_annotation=True",
                    tests="test_a_service_annotated_snat_is_source_natted",
                    says="*forwarding mode (service.cilium.io/forwarding-mode: snat): fm-snat (forwarding-mode snat): the backend saw 172.18.0.1 (the client's address), expected 172.18.0.3 (the receiving node's InternalIP: SNAT mode in native routing*"),
              # the agents' own mode SNAT, annotations on: fm-dsr is SNATed
              Fails(name="mode-annotation-ignored-under-snat", fake="routing_mode='Native', lb_mode_annotation=True",
                    tests="test_a_service_annotated_dsr_keeps_the_clients_address",
                    says="*forwarding mode (service.cilium.io/forwarding-mode: dsr): fm-dsr (forwarding-mode dsr): the backend saw 172.18.0.3 (the receiving node's InternalIP), expected 172.18.0.1 (the client: DSR mode*"),
          )),
    Fault("nodeport_mode_mismatch", "DSR/SNAT",
          doc="a request from outside for another node's backend is forwarded in the other mode than the agent reports (it reports SNAT and "
              "the backend sees the client, or DSR and the backend sees the node)",
          fails=(
              Fails(name="snat-reported-client-seen", tests="test_the_backend_sees_the_address_the_nodeport_mode_promises",
                    says="*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw 172.18.0.1 (the client's address), expected 10.244.1.118 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*"),
              Fails(name="dsr-reported-node-seen", fake="nodeport_mode='DSR', routing_mode='Native'",
                    tests="test_the_backend_sees_the_address_the_nodeport_mode_promises",
                    says="*DSR/SNAT (the agent reports NodePort mode DSR, routing Native): the backend saw 172.18.0.3 (the receiving node's InternalIP), expected 172.18.0.1 (the client: DSR*"),
          )),
    Fault("healthserver_v4_only", "eTP=Local",
          doc="IPv6 only (dual stack): the health-check NodePort server listens on IPv4 only (nothing answers it on a node's IPv6 address)",
          fails=Fails(name="ipv6-health-server-not-listening", fake="ip_families=('IPv4', 'IPv6')",
                      tests=("test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]",
                             "north_south::test_the_vip_health_frontend_says_which_nodes_have_a_backend[IPv6]"),
                      says="*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP nothing with localEndpoints None, expected 503 with 0*fake-worker2 answered HTTP nothing with localEndpoints None, expected 200 with 2 (its own backends' addresses and ports)*")),
    Fault("etp_snat", "eTP=Local", "traffic from outside to an eTP=Local Service is SNATed: the backend sees the node, not the client",
          fails=Fails(tests=("test_the_backend_sees_the_clients_own_address",
                             "north_south::test_etp_local_on_a_vip_is_served_only_where_the_backend_is"),
                      says="*eTP=Local (client address): the backend saw 172.18.0.4 (the receiving node's InternalIP), expected 172.18.0.1 (the client*")),
    Fault("healthcheck_cluster_count", "eTP=Local",
          doc="the health-check NodePort answers 200 with the cluster-wide backend count on every node",
          fails=(
              # the VIP's health frontend is answered by the same health server
              Fails(tests=("test_the_health_check_node_port_reports_each_nodes_local_endpoints",
                           "north_south::test_the_vip_health_frontend_says_which_nodes_have_a_backend"),
                    says="*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP 200 with localEndpoints 1, expected 503 with 0 (its own backends' addresses and ports)*"),
          )),
    Fault("healthcheck_one_family", "eTP=Local",
          doc="the health-check NodePort counts the backends of the Service's first family only (dual stack)",
          fails=(
              # a dual-stack pod is one backend per address: the health server counts both (datapath.SRC_HEALTHSERVER)
              Fails(name="health-count-one-family", fake="ip_families=('IPv4', 'IPv6')",
                    tests=("test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv4]",
                           "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]"),
                    says="*eTP=Local (health-check NodePort *): fake-worker2 answered HTTP 200 with localEndpoints 1, expected 200 with 2 (its own backends' addresses and ports)*"),
          )),
    Fault("udp_reply_from_backend", "UDP", per_family=True,
          doc="the socket LB translates UDP datagrams but not their replies' source (no recvmsg4 / recvmsg6 hook): a client reads the "
              "backend's address",
          fails=(
              Fails(name="udp-reply-from-the-backend",
                    tests=("test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip",
                           "test_an_unconnected_client_reads_the_reply_from_the_cluster_ip"),
                    says=("*UDP (unconnected client to 10.96.*:53): the reply came from 10.244.*:5353, not from 10.96.*:53 (the backend's own address: the socket LB's recvmsg4 reverse translation is missing); a resolver that sent to 10.96.*:53 drops it*",
                          "*UDP (connected client to 10.96.*:53): the reply came from 10.244.*:5353*")),
              Fails(name="ipv6-udp-reply-from-the-backend", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests=("test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip[IPv6]",
                           "test_an_unconnected_client_reads_the_reply_from_the_cluster_ip[IPv6]"),
                    says="*UDP (unconnected client to [[]fd00:10:96::*]:53): the reply came from [[]fd00:10:244:*]:5353, not from [[]fd00:10:96::*]:53 (the backend's own address: the socket LB's recvmsg6 reverse translation is missing)*"),
          )),
    Fault("udp_no_backend_passes", "UDP",
          doc="sendmsg4 lets a datagram to a backendless UDP Service through untranslated instead of failing sendto() (it times out)",
          fails=Fails(name="udp-backendless-datagram-passes", tests="test_a_backendless_udp_service_fails_the_datagram_at_once",
                      says="*no backend (pod sendto() to UDP ClusterIP 10.96.*:53; socket plane, ServiceNoBackendResponse=reject): sendto() gave timeout after 2.00s; expected unreachable at once (under 1s)*")),
    Fault("affinity_ignored", "affinity", per_family=True,
          doc="sessionAffinity ClientIP is not honoured: every connect() picks a random backend",
          fails=(
              Fails(tests="test_a_client_stays_on_one_backend_with_session_affinity",
                    says="*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends * despite sessionAffinity ClientIP*"),
              Fails(name="ipv6-affinity-ignored", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_a_client_stays_on_one_backend_with_session_affinity[IPv6]",
                    says="*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends [[]'[[]fd00:10:244:*]:8080'*despite sessionAffinity ClientIP*"),
              # the family field the other way round: set for IPv4, a dual-stack run's IPv6 affinity holds
              Fails(name="ipv4-affinity-ignored", value="IPv4", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_a_client_stays_on_one_backend_with_session_affinity[IPv4]",
                    says="*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends [[]'10.244.*:8080'*despite sessionAffinity ClientIP*"),
          )),
    Fault("lb_always_first", "affinity", "the socket LB always picks the first backend slot (no spreading without affinity)",
          fails=Fails(tests=("test_the_affinity_expires_after_its_timeout", "test_without_affinity_connections_spread_over_the_backends"),
                      says="*affinity (none): all 20 connections without affinity reached * of 4 backends (chance: 3.6e-12)*")),
    Fault("affinity_no_timeout", "affinity", "sessionAffinity ClientIP never expires: timeoutSeconds is ignored",
          fails=Fails(tests="test_the_affinity_expires_after_its_timeout",
                      says="*affinity (timeoutSeconds 1): all 10 connections, 2.5 s apart (past the 1 s timeout), reached *: the affinity never expired (chance if it does: 3.8e-06)*")),
    Fault("hairpin_no_loopback_nat", "hairpin", "per packet, a pod's packet to its own Service is not NATed to the loopback address",
          fails=Fails(name="hairpin-not-nated-per-packet", fake="socket_lb_hostns_only=True",
                      tests=("test_a_backend_reaches_its_own_service", "test_the_backend_sees_the_source_its_plane_gives"),
                      says=("*hairpin: hairpin could not reach its own Service 10.96.*:80 (per-packet plane): connect timeout, HTTP nothing; per packet a packet from a pod to itself must be source-NATed to the loopback address*",
                            "*hairpin: hairpin logged no request from itself to 10.96.*:80, so the source it saw is unknown*"))),
    Fault("hairpin_socket_snat", "hairpin", "a pod connected to itself by the socket hook sees the loopback address, as if NATed",
          fails=Fails(tests="test_the_backend_sees_the_source_its_plane_gives",
                      says="*hairpin: hairpin saw its own request to 10.96.*:80 come from 169.254.42.1, expected 10.244.* (socket plane: socket LB connects the pod straight to itself (no NAT))*")),
)


def _plain(addr: str) -> str:
    """``[v6]:port`` -> ``v6:port``, as netstat prints an IPv6 socket."""
    return addr.replace("[", "").replace("]", "")


@dataclass
class Connection:
    client_pod: str
    client: tuple[str, int]
    server: tuple[str, int]  # the kernel socket's peer
    app_peer: tuple[str, int]  # what getpeername() returns
    backend: tuple[str, int]
    backend_pod: str
    namespace: str


def split_target(target: str) -> tuple[str, int]:
    """``ip:port`` or ``[v6]:port`` -> (ip, port)."""
    parsed = split_host_port(target)
    if parsed is None:
        raise ValueError(f"not an address and port: {target!r}")
    return parsed


class FakeWorkloads:
    def __init__(self, cluster: ClusterView):
        self.c = cluster
        self.connections: dict[str, Connection] = {}
        self.logs: dict[tuple[str, str], list[str]] = {}
        #: (client namespace, client pod, service, port) -> (the backend its affinity remembers, last used: whole seconds)
        self.affinity: dict[tuple[str, str, str, int], tuple[str, int]] = {}
        #: seconds a probe's --interval has let pass (the fake does not sleep: its affinity clock runs ahead instead)
        cluster.pod_exec_handlers["*"] = self.exec

    # -- holder ------------------------------------------------------------------------------------

    @staticmethod
    def hold_args(pod: Obj) -> tuple[str, int, int] | None:
        cmd = (pod.get("spec", {}).get("containers") or [{}])[0].get("command") or []
        if cmd[:3] != ["kpr", "probe", "hold"] or "--sport" not in cmd:
            return None
        host, port = split_target(cmd[3])
        return host, port, int(cmd[cmd.index("--sport") + 1])

    def per_packet(self, family: str = "IPv4") -> bool:
        """Does a pod's connect() to a ClusterIP of ``family`` take the per-packet path? (the sourced rule; the
        ``socket_lb_broken`` fault sends it there, for the family it is set for, while the agent reports Full coverage)"""
        cfg = self.c.cfg
        hostns = (cfg.socket_lb_hostns_only and not cfg.faults.socket_lb_reverse) or cfg.faults.on("socket_lb_broken", family)
        coverage = coverage_name(hostns)
        return plane_for("pod", "connect", "ClusterIP", coverage).plane is Plane.PER_PACKET

    def reconcile(self) -> None:
        # a connection whose backend pod is gone was reset; the holder restarts and connects again
        alive = {p["metadata"]["name"] for p in self.c.pods()}
        for name, conn in list(self.connections.items()):
            if conn.backend_pod not in alive or conn.client_pod not in alive:
                del self.connections[name]
                for entries in self.c.ct.values():
                    entries[:] = [e for e in entries if (e["src_ip"], e["src_port"]) != conn.client]
        for pod in self.c.pods():
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            args = self.hold_args(pod)
            if args is None or pod["status"].get("phase") != "Running" or key[1] in self.connections:
                continue
            ip, port, sport = args
            node = pod["spec"]["nodeName"]
            fe = self.c.lb.find(node, ip, port)
            if fe is None or not fe.backends:
                line = {"event": "error", "target": hp(ip, port), "errno": 113, "errno_name": "EHOSTUNREACH", "detail": "[Errno 113] No route to host"}
                if json.dumps(line) not in self.logs.get(key, []):
                    self.logs.setdefault(key, []).append(json.dumps(line))
                continue
            be = fe.backends[0]
            if not backend_listens(self.c, be, family_of(ip)):  # the backend's kernel resets the SYN
                line = {"event": "error", "target": hp(ip, port), "errno": 111, "errno_name": "ECONNREFUSED", "detail": "[Errno 111] Connection refused"}
                if json.dumps(line) not in self.logs.get(key, []):
                    self.logs.setdefault(key, []).append(json.dumps(line))
                continue
            client = (pod_ip(pod, family_of(ip)) or pod["status"]["podIP"], sport)
            per_packet = self.per_packet(family_of(ip))
            socket_peer = (ip, port) if per_packet else (be.ip, be.port)
            app_peer = (be.ip, be.port) if self.c.cfg.faults.getpeername_backend else (ip, port)  # fault: no reverse translation
            conn = Connection(key[1], client, socket_peer, app_peer, (be.ip, be.port), be.pod, key[0])
            self.connections[key[1]] = conn
            self.logs.setdefault(key, []).append(json.dumps({"event": "connected", "target": hp(ip, port), "local": hp(*client),
                                                            "app_peer": hp(*conn.app_peer), "peer": hp(*conn.app_peer)}))
            self._conntrack(node, be.node, conn, fe, per_packet)

    def _conntrack(self, client_node: str, backend_node: str, conn: Connection, fe: FakeFrontend, per_packet: bool) -> None:
        base = {"proto": "TCP", "rx_flags_seen": 0x1A, "tx_flags_seen": 0x1A, "flags": 0x10, "flag_names": ("SeenNonSyn",), "expires": 21600}
        ct = self.c.ct
        ct.setdefault(client_node, []).append({**base, "dir": "OUT", "src_ip": conn.client[0], "src_port": conn.client[1],
                                               "dst_ip": conn.backend[0], "dst_port": conn.backend[1], "source_security_id": 4242,
                                               "rev_nat": fe.id if per_packet else 0})
        if per_packet:
            ct[client_node].append({**base, "dir": "SVC", "src_ip": conn.client[0], "src_port": conn.client[1],
                                    "dst_ip": fe.ip, "dst_port": fe.port, "rev_nat": fe.id, "backend_id": 1})
        ct.setdefault(backend_node, []).append({**base, "dir": "IN", "src_ip": conn.client[0], "src_port": conn.client[1],
                                                "dst_ip": conn.backend[0], "dst_port": conn.backend[1], "source_security_id": 4242})

    def served(self, outcome: Outcome, client: str, path: str) -> None:
        """A web backend answered ``GET path`` from ``client`` (outside the cluster): its log gets the line Python's
        http.server writes, with the address the backend saw (datapath.backend_sees; faults etp_snat, nodeport_mode_mismatch)."""
        be, handler = outcome.backend, outcome.handler
        if be is None or handler is None:
            return
        cfg = self.c.cfg
        svc = self.c.service(outcome.service or "")
        etp_local = (svc.get("spec") or {}).get("externalTrafficPolicy") == "Local"
        # the Service's own forwarding mode where the agents honour the annotation (datapath.SRC_FORWARDING_MODE_ANNOTATION; the
        # fault: ignored)
        annotation = ((svc.get("metadata") or {}).get("annotations") or {}).get(FORWARDING_MODE_ANNOTATION)
        mode = service_forwarding_mode(cfg.nodeport_mode, cfg.lb_mode_annotation and not cfg.faults.mode_annotation_ignored, annotation)
        rule = backend_sees(mode, etp_local, be.node == handler, cfg.routing_mode)
        family = family_of(client)  # the request's family: the node's addresses of that family (IPV6_DIRECT_ROUTING, ROUTER_IP)
        node_ip, gateway = self.c.node_ip_of(handler, family), self.c.cilium_internal_ip(handler, family)
        seen = {"client": client, "node": node_ip, "cilium-internal-ip": gateway}[rule.sees]
        swapped = cfg.faults.on("snat_address_swapped", family)
        if swapped and rule.sees in ("node", "cilium-internal-ip"):  # faults: the other SNAT address (of IPv6 only)
            seen = gateway if seen == node_ip else node_ip
        if cfg.faults.etp_snat and etp_local:
            seen = node_ip  # fault: SNAT where the client's address should be kept
        if cfg.faults.nodeport_mode_mismatch and be.node != handler:  # fault: the other forwarding mode than reported
            snat = gateway if cfg.routing_mode == "Tunnel" else node_ip
            seen = client if seen in (node_ip, gateway) else snat
        pod = next((p for p in self.c.pods() if p["metadata"]["name"] == be.pod), None)
        if pod is not None:
            key = (pod["metadata"]["namespace"], be.pod)
            seen = seen_by((pod["spec"].get("containers") or [{}])[0].get("command") or [], seen)  # ::ffff: on a dual-stack socket
            self.logs.setdefault(key, []).append(f'{seen} - - [01/Dec/2026 06:00:00] "GET {path} HTTP/1.1" 200 -')

    def health_answer(self, ip: str, port: int) -> tuple[int, dict[str, Any]] | None:
        """The agent's health server on the node with address ``ip`` for the Service whose healthCheckNodePort is ``port``
        (datapath.SRC_HEALTHSERVER): (HTTP code, JSON body), or None if nothing of the kind listens there."""
        node = self.c.node_addresses().get(ip)  # the health server listens on every address of both families
        if node is None or (self.c.cfg.faults.healthserver_v4_only and family_of(ip) == "IPv6"):  # fault: IPv4 only
            return None
        for svc in self.c.services():
            spec = svc["spec"]
            if spec.get("healthCheckNodePort") != port or spec.get("externalTrafficPolicy") != "Local":
                continue
            slices = self.c.endpointslices(svc)
            if self.c.cfg.faults.healthcheck_one_family:  # fault: the count leaves out the Service's second family
                slices = slices[:1]
            # one per active backend address and port on this node (datapath.SRC_HEALTHSERVER); fault: every node's
            nodes = sorted(self.c.node_names()) if self.c.cfg.faults.healthcheck_cluster_count else [node]
            n = sum(local_endpoint_count(slices, name) for name in nodes)
            body = {"service": {"namespace": svc["metadata"]["namespace"], "name": svc["metadata"]["name"]}, "localEndpoints": n}
            return (200 if n else 503), body
        return None

    def hairpin(self, pod: Obj, outcome: Outcome, path: str | None = None) -> Outcome:
        """A connection from ``pod`` that reached ``pod`` itself through its Service: the source its server sees
        (datapath.hairpin_source) -- its own address on the socket plane, the service loopback address per packet, where
        without that NAT the kernel drops the packet (source and destination its own). With ``path`` (an HTTP GET) the
        server logs the request. Faults: hairpin_no_loopback_nat (per packet), hairpin_socket_snat (socket plane)."""
        be = outcome.backend
        if outcome.result != "answered" or be is None or be.pod != pod["metadata"]["name"] or pod["spec"].get("hostNetwork"):
            return outcome
        family, faults = family_of(be.ip), self.c.cfg.faults
        plane = Plane.PER_PACKET if self.per_packet(family) else Plane.SOCKET
        if plane is Plane.PER_PACKET and (faults.hairpin_no_loopback_nat or hairpin_unjudged(plane, family, self.c.cfg.cilium_version)):
            # no NAT: a martian, dropped -- the fault, or an IPv6 pod before 1.19, which has no IPv6 service loopback
            # (datapath.SRC_HAIRPIN_LOOPBACK6)
            return Outcome("timeout", plane, frontend=outcome.frontend)
        seen = hairpin_source(plane, be.ip, family).sees
        if plane is Plane.SOCKET and faults.hairpin_socket_snat:  # fault: NATed although the socket hook connected it to itself
            seen = hairpin_source(Plane.PER_PACKET, be.ip, family).sees
        if path is not None:
            seen = seen_by((pod["spec"].get("containers") or [{}])[0].get("command") or [], seen)  # ::ffff: on a dual-stack socket
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            self.logs.setdefault(key, []).append(f'{seen} - - [01/Dec/2026 06:00:00] "GET {path} HTTP/1.1" 200 -')
        return outcome

    def pod_logs(self, namespace: str, pod: str) -> str:
        return "".join(line + "\n" for line in self.logs.get((namespace, pod), []))

    # -- exec in workload pods ---------------------------------------------------------------------

    def exec(self, pod: Obj, argv: list[str]) -> tuple[int, str, str]:
        if not argv:
            return 127, "", "no command"
        if argv[0] == "netstat":
            return self.netstat(pod)
        if argv[0] == "curl":
            url = next((a for a in argv if a.startswith("http://")), "")
            m = re.fullmatch(r"http://\[?([0-9a-f.:]+?)\]?:(\d+)/?", url)
            health = self.health_answer(m.group(1), int(m.group(2))) if m else None
            if health is not None:
                fmt = argv[argv.index("-w") + 1] if "-w" in argv else ""
                return 0, json.dumps(health[1]) + "\n" + fmt.replace("\\n", "\n").replace("%{http_code}", str(health[0])), ""
            return self.c.curl_from_node(pod["spec"]["nodeName"], argv[1:], host_network=bool(pod["spec"].get("hostNetwork")), pod=pod)
        if argv[:2] == ["kpr", "probe"] and len(argv) >= 4:
            return self.probe(pod, argv[2], argv[3:])
        if argv == ["kill", "-TERM", "1"]:  # ends a flow pod's `kpr probe flow` (it prints its summary)
            self.c.upgrades.stop(pod)
            return 0, "", ""
        return 127, "", f'exec: "{argv[0]}": executable file not found in $PATH'

    def netstat(self, pod: Obj) -> tuple[int, str, str]:
        ips = {pod_ip(pod, "IPv4"), pod_ip(pod, "IPv6")} - {None}
        rows = []
        for conn in self.connections.values():
            if conn.client[0] in ips:
                rows.append((hp(*conn.client), hp(*conn.server)))
            if conn.backend[0] in ips:
                seen = conn.client
                if self.c.cfg.faults.snat_at_backend:  # fault: the client's node address, as after SNAT
                    holder = next((p for p in self.c.pods() if p["metadata"]["name"] == conn.client_pod), None)
                    seen = (self.c.node_ip(holder["spec"]["nodeName"]) if holder else "0.0.0.0", 61234)
                rows.append((hp(*conn.backend), hp(*seen)))
        out = "Active Internet connections (w/o servers)\nProto Recv-Q Send-Q Local Address           Foreign Address         State       \n"
        # net-tools and busybox print an IPv6 socket as tcp6, its addresses unbracketed
        out += "".join(f"{'tcp6' if local.startswith('[') else 'tcp ':<4}       0      0 {_plain(local):<23} {_plain(peer):<23} ESTABLISHED \n"
                       for local, peer in rows)
        return 0, out, ""

    def probe(self, pod: Obj, kind: str, args: list[str]) -> tuple[int, str, str]:
        """``kpr probe syn|connect|http|udp TARGET --json [--timeout T] [--count N]`` from a pod, answered by the sourced rules."""
        if "--json" not in args:
            return 2, "", "the fake answers --json probes only\n"
        timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 2.0
        if kind == "udp":
            return 0, json.dumps(self.udp(pod, args[0], "--connected" in args, timeout)) + "\n", ""
        count = int(args[args.index("--count") + 1]) if "--count" in args else 1
        interval = float(args[args.index("--interval") + 1]) if "--interval" in args else 0.0
        target = args[0]
        ip_port = target.split("//", 1)[-1].split("/", 1)[0] if kind == "http" else target
        ip, port = split_target(ip_port)
        port_s = str(port)
        out = ""
        for i in range(count):
            if i:
                self.c.clock.advance(interval)  # the probe's pause between attempts, in the fake's time
            outcome = reach(self.c, pod["spec"]["nodeName"], host_network=bool(pod["spec"].get("hostNetwork")),
                            access="raw" if kind == "syn" else "connect", ip=ip, port=int(port_s))
            if kind != "syn":
                outcome = self.hairpin(pod, outcome)
            result: dict[str, Any] = {"probe": kind, "target": target, **probe_result(outcome, kind, timeout)}
            if kind == "connect" and result.get("verdict") == "connected" and not pod["spec"].get("hostNetwork"):
                # socket LB: the kernel socket points at the backend it chose; per-packet: at the Service (NAT is on the wire)
                be = ip_port if self.per_packet(family_of(ip)) else self.pick_backend(pod, ip, int(port_s))
                if be is not None:
                    result["socket_peer"] = be
            out += json.dumps(result) + "\n"
        return 0, out, ""

    def udp(self, pod: Obj, target: str, connected: bool, timeout: float) -> dict[str, Any]:
        """``kpr probe udp TARGET [--connected]``: one datagram to an echo backend and the reply, as recvfrom() reports it.
        The socket plane translates the datagram (connect4 or sendmsg4) and reverses the reply's source (recvmsg4) and a
        connected socket's getpeername() (getpeername4): datapath.SRC_SOCK_SENDMSG, SRC_SOCK_RECVMSG, SRC_SOCK_GETPEERNAME.
        On the per-packet plane the socket is never translated and bpf_lxc reverse-NATs the reply (SRC_LXC_REV_NAT); a
        backendless UDP Service there has no sourced rule here: NoRule, never a guess.
        Faults: udp_reply_from_backend (no recvmsg4 / recvmsg6), getpeername_backend, udp_no_backend_passes."""
        ip, port = split_target(target)
        port_s = str(port)
        node, hostnet = pod["spec"]["nodeName"], bool(pod["spec"].get("hostNetwork"))
        outcome = reach(self.c, node, host_network=hostnet, access="connect" if connected else "sendmsg", ip=ip, port=int(port_s), proto="UDP")
        faults = self.c.cfg.faults
        out: dict[str, Any] = {"probe": "udp", "target": target, "mode": "connected" if connected else "unconnected"}
        if outcome.plane is Plane.PER_PACKET and outcome.result != "answered":
            raise NoRule(f"a UDP datagram to a backendless {target} on the per-packet plane: no sourced rule for what the client sees yet")
        if outcome.result == "answered" and outcome.backend is not None:  # per-packet: bpf_lxc reverse-NATs the reply (SRC_LXC_REV_NAT)
            be = hp(outcome.backend.ip, outcome.backend.port)
            socket = outcome.plane is Plane.SOCKET
            no_recvmsg = faults.on("udp_reply_from_backend", family_of(ip))  # fault: no recvmsg4 / recvmsg6
            out.update(verdict="answered", elapsed_ms=0.4, reply_from=be if socket and no_recvmsg else target,
                       echoed=True)
            if connected:
                out["peer"] = be if socket and faults.getpeername_backend else target
            client = (pod_ip(pod, family_of(ip)) or self.c.node_ip_of(node, family_of(ip)), 40000 + len(self.c.ct.get(node, [])))
            # bpf_lxc tracks the pod's datagram to the backend it was translated to (the socket plane left no service entry)
            self.c.ct.setdefault(node, []).append({"proto": "UDP", "dir": "OUT", "src_ip": client[0], "src_port": client[1],
                                                   "dst_ip": outcome.backend.ip, "dst_port": outcome.backend.port, "rx_flags_seen": 0,
                                                   "tx_flags_seen": 0, "flags": 0, "flag_names": (), "expires": 60,
                                                   "source_security_id": 4242, "rev_nat": 0})
            return out
        if outcome.result == "unreachable" and faults.udp_no_backend_passes:
            outcome = Outcome("timeout", outcome.plane, frontend=outcome.frontend)
        if outcome.result == "timeout":
            return {**out, "verdict": "timeout", "elapsed_ms": timeout * 1000.0}
        if outcome.result in ("unreachable", "refused"):
            return {**out, "verdict": outcome.result, "elapsed_ms": 0.05, "errno": ERRNO.get(outcome.errno or "", 0),
                    "errno_name": outcome.errno}
        raise NoRule(f"a UDP datagram to {target}: outcome {outcome.result} has no sourced rule")

    def pick_backend(self, pod: Obj, ip: str, port: int) -> str | None:
        """The backend socket LB picks for a connect() (cilium/cilium bpf/bpf_sock.c ``__sock4_xlate_fwd``): for a
        Service with sessionAffinity ClientIP the one remembered for this client's network namespace (the affinity map
        is keyed by the netns cookie: ``lb4_affinity_backend_id_by_netns``), else a random slot (``sock_select_slot``).
        The remembered backend expires timeoutSeconds after its last use (bpf/lib/lb.h ``__lb4_affinity_backend_id``).
        Faults: affinity_ignored (always random), lb_always_first (always slot 1), affinity_no_timeout (never expires)."""
        import random

        fe = self.c.lb.find(pod["spec"]["nodeName"], ip, port)
        if fe is None or not fe.backends:
            return None
        faults = self.c.cfg.faults
        svc = self.c.service(fe.service)
        spec = svc.get("spec", {})
        ignored = faults.on("affinity_ignored", family_of(ip))  # fault: the (family's) affinity ignored
        sticky = spec.get("sessionAffinity") == "ClientIP" and not ignored
        timeout = int(((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds") or 10800)
        # per frontend (its rev-NAT ID), in a map per family (LB4_AFFINITY_MAP / LB6_AFFINITY_MAP)
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"], fe.service, fe.ip, fe.port)
        backends = [hp(b.ip, b.port) for b in fe.backends]
        now = int(self.c.clock.monotonic())  # bpf_mono_now(): whole seconds
        remembered = self.affinity.get(key)
        # lb.h __lb4_affinity_backend_id: an entry is used while now < last_used + timeout, and each use renews it
        if sticky and remembered is not None and remembered[0] in backends and (now < remembered[1] + timeout or faults.affinity_no_timeout):
            self.affinity[key] = (remembered[0], now)
            return remembered[0]
        chosen = backends[0] if faults.lb_always_first else random.choice(backends)
        if sticky:
            self.affinity[key] = (chosen, now)
        return chosen
