"""Which of Cilium's planes answers a client, and what the client then sees: the rules that both the
suites' expectations and the fake cluster follow, each with the cilium/cilium source it was read from.

Nothing here is a belief: every row names the file (and the PR or release) that justifies it, and
``tests/rules/test_datapath_rules.py`` fails on a row without one. A path no row covers is a
:class:`NoRule` error, never a guess. Library code: no pytest, no I/O.

Vocabulary:

- **client**: ``pod`` (a pod's own network namespace), ``host`` (a node's host namespace: a
  host-network pod), ``outside`` (a packet that arrives at a node from elsewhere: a host-network pod
  on *another* node, or the runner, sending to the node's InternalIP).
- **access**: ``connect`` (an application's ``connect()``: curl, ``kpr probe connect``, a connected UDP socket),
  ``sendmsg`` (an unconnected UDP ``sendto()``: ``kpr probe udp``) or ``raw`` (a crafted packet that never meets a
  socket hook: ``kpr probe syn``).
- **frontend**: ``ClusterIP``, ``NodePort`` (a node's InternalIP:nodePort), ``ExternalIP`` (an
  ``externalIPs`` address that is not a node address), ``LoadBalancer`` (an LB-IPAM VIP).
- **coverage**: socket-LB coverage as the agent reports it (``Full`` | ``Hostns-only``).
"""

from __future__ import annotations

import ipaddress
import enum
from dataclasses import dataclass, replace
from typing import Any


class Plane(str, enum.Enum):
    SOCKET = "socket"  # bpf_sock.c cgroup hooks: connect4/sendmsg4/getpeername4
    PER_PACKET = "per-packet"  # bpf_lxc (pod veth) or bpf_host (native device) per-packet LB
    NONE = "none"  # no Cilium LB looks at it: the packet is routed as addressed

    def __str__(self) -> str:
        return self.value


ANY = "*"

# Sources, written once and referenced by the rows and by each suite's contract (``pytest.mark.kpr(sources=...)``): the
# cilium/cilium path @ what was read and the line that decides the rule.
SRC_SOCK_FWD = ("cilium/cilium bpf/bpf_sock.c __sock4_xlate_fwd / cil_sock4_connect (1.16+ layout, read via the code index): "
                "ENABLE_SOCKET_LB_HOST_ONLY && !in_hostns -> -ENXIO (no translation); svc->count == 0 -> -EHOSTUNREACH; "
                "connect4 rejects -EHOSTUNREACH/-ENOMEM with try_set_retval, proceeds on anything else")
SRC_SOCK_WILDCARD = ("cilium/cilium bpf/bpf_sock.c sock4_wildcard_lookup_full: a connect() to a NodePort on an address with HOST_ID "
                     "or REMOTE_NODE_ID (or loopback from the host namespace) is looked up as the 0.0.0.0:<port> wildcard service")
SRC_LXC_PER_PACKET = ("cilium/cilium bpf/bpf_lxc.c: ENABLE_PER_PACKET_LB only if !ENABLE_SOCKET_LB_FULL || ENABLE_SOCKET_LB_HOST_ONLY "
                      "|| ENABLE_L7_LB || ENABLE_SCTP || ENABLE_CLUSTER_AWARE_ADDRESSING (main; the same test without SCTP/"
                      "cluster-aware addressing since v1.12)")
SRC_LXC_XLATE = ("cilium/cilium bpf/bpf_lxc.c (the index's newest copy, commit not reported) __per_packet_lb_svc_xlate_4: "
                 "`svc = lb4_lookup_service(&key, is_defined(ENABLE_NODEPORT)); if (svc) {` ... `ret = lb4_local(...)` (only L7 LB "
                 "and, under full socket LB, local-redirect services skip it); compiled in under hostns-only (SRC_LXC_PER_PACKET)")
SRC_LXC_NODEPORT = ("cilium/cilium bpf/bpf_lxc.c@d7be9552 __per_packet_lb_svc_xlate_4: `svc = lb4_lookup_service(&key, "
                    "is_defined(ENABLE_NODEPORT));` finds a NodePort frontend on one of this node's addresses: "
                    "pkg/loadbalancer/healthserver/testdata/healthserver.txtar@035b1474 lists the node address's own entry "
                    "`SVC: ID=2 ADDR=1.1.1.1:30781/TCP ... FLAGS=NodePort+Local+InternalLocal` beside 0.0.0.0:30781; no other node's")
SRC_OVERLAY_NODEPORT = ("cilium/cilium bpf/bpf_overlay.c@00155816 handle_ipv4 (cil_from_overlay, \"Attached to the ingress of "
                        "cilium_vxlan/cilium_geneve to execute on packets entering the node via the tunnel\"): `#ifdef ENABLE_NODEPORT` "
                        "... `int ret = nodeport_lb4(ctx, *identity, ext_err);`")
SRC_HOST_NODEPORT = ("cilium/cilium bpf/bpf_host.c + bpf/lib/nodeport.h nodeport_lb4: traffic arriving on the native device "
                     "for a NodePort/LoadBalancer/ExternalIP frontend is load-balanced per packet (kubeproxy-free.rst, NodePort)")
SRC_SKIP_XLATE = ("cilium/cilium bpf/bpf_sock.c sock4_skip_xlate (CVE-2020-8554 mitigation): an ExternalIP that is not a host "
                  "address is not translated (-EPERM, connect proceeds untranslated); off with Helm bpf.disableExternalIPMitigation "
                  "(agent flag disable-external-ip-mitigation, pkg/option/config.go; PR #31513, v1.16+)")
SRC_SKIP_XLATE_LB = "cilium/cilium bpf/bpf_sock.c sock4_skip_xlate: only external-IP and HostPort services are skipped; LoadBalancer VIPs translate"
SRC_NO_SERVICE_ICMP = ("cilium/cilium bpf/lib/lb.h (the index's newest copy, commit not reported) tail_no_service_ipv4: "
                       "`ret = generate_icmp4_reply(ctx, ICMP_DEST_UNREACH, ICMP_PORT_UNREACH);` "
                       "(type 3 code 3) when SERVICE_NO_BACKEND_RESPONSE (reject) is compiled in; PR #28157 (v1.15). "
                       "The code-1 variant (#28025) was never merged")
SRC_NO_SERVICE_DROP = ("cilium/cilium bpf/bpf_lxc.c (main, __per_packet_lb_svc_xlate_4) and bpf/lib/nodeport.h: lb4_local returns "
                       "DROP_NO_SERVICE (-158, 'Service backend not found'); only #ifdef SERVICE_NO_BACKEND_RESPONSE (reject) "
                       "tail-calls CILIUM_CALL_IPV4_NO_SERVICE, otherwise the drop is returned")
SRC_EPERM_BUG = ("https://github.com/cilium/cilium/issues/45184: connect() to a backendless service fails with EPERM instead of "
                 "EHOSTUNREACH; its Version field: \"equal or higher than v1.19.2 and lower than v1.20.0\" (bpf_set_retval compiled "
                 "out); fixed on main by PR #45185. No v1.19 backport of #45185 was found (PR #48376, \"[v1.19] bpf: use "
                 "bpf_core_enum_value_exists() for HAVE_SET_RETVAL\", fixes a feature probe, not the include order)")


SRC_SOCK_GETPEERNAME = ("cilium/cilium bpf/bpf_sock.c@66382ef3 cil_sock4_getpeername (under `#ifdef ENABLE_SOCKET_LB_PEER`) calls "
                        "`__sock4_xlate_rev(ctx, ctx);`, which looks the backend up in LB4_REVERSE_NAT_SK_MAP (written by connect4's "
                        "sock4_update_revnat) and sets `ctx->user_ip4 = val->address; ctx_set_port(ctx, val->port);`: the service, "
                        "not the backend")
SRC_SOCK_SENDMSG = ("cilium/cilium bpf/bpf_sock.c@66382ef3 cil_sock4_sendmsg: `err = __sock4_xlate_fwd(ctx, ctx, true);` -- an "
                    "unconnected UDP sendto() to a frontend is translated to a backend like a connect() (and a backendless one "
                    "rejected: `if (err == -EHOSTUNREACH || err == -ENOMEM) { try_set_retval(err); return SYS_REJECT; }`); "
                    "sock4_update_revnat remembers (socket cookie, backend address, port) -> the frontend in LB4_REVERSE_NAT_SK_MAP")
SRC_SOCK_RECVMSG = ("cilium/cilium bpf/bpf_sock.c@66382ef3 cil_sock4_recvmsg: `__sock4_xlate_rev(ctx, ctx); return SYS_PROCEED;` -- "
                    "the source of a datagram read with recvfrom()/recvmsg() is looked up by (socket cookie, backend address, "
                    "port) and rewritten `ctx->user_ip4 = val->address; ctx_set_port(ctx, val->port);`: the reply comes from the "
                    "frontend the client sent to, never from the backend")
SRC_LXC_REV_NAT = ("cilium/cilium bpf/lib/lb.h@0040d667 lb4_rev_nat: `nat = map_lookup_elem(&LB4_REVERSE_NAT_MAP, "
                   "&ct_state->rev_nat_index);` then __lb4_rev_nat writes `new_sip = nat->address` into the reply's source "
                   "(`ctx_store_bytes(ctx, l3_off + offsetof(struct iphdr, saddr), &new_sip, 4, 0)`) and the port "
                   "(reverse_map_l4_port): on the per-packet path a backend's reply reaches the client from the frontend")
SRC_NO_KUBE_PROXY_RULES = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53 (Validate the Setup): \"At the "
                           "same time we can verify, using ``iptables`` in the host namespace, that no ``iptables`` rule for the "
                           "service is present:\" -- `iptables-save | grep KUBE-SVC` prints an empty line")
SRC_KUBE_PROXY_REPLACED = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53: \"This guide explains how to "
                           "provision a Kubernetes cluster without ``kube-proxy``, and to use Cilium to fully replace it.\"")
SRC_BACKEND_SLOTS = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go@ff106690 updateFrontend: one slot per backend of "
                     "`ops.sortedBackends(fe)` (`svcKey.SetBackendSlot(i + 1)`, active first), the master's count "
                     "`svcVal.SetCount(activeBackends)`, and `cleanupSlots` deletes the slots beyond `activeCount+inactiveCount`")
SRC_BACKEND_SLOTS_FAMILY = ("cilium/cilium pkg/loadbalancer/writer/writer.go@da6d7b49 DefaultSelectBackends: a frontend's backends are "
                            "those of its own family, `if fe.Address.IsIPv6() { ipv4, ipv6 = false, true }` ... `if be.Address.IsIPv6() "
                            "{ if !ipv6 { continue } } else if !ipv4 { continue }`")
SRC_AFFINITY_TIMEOUT = ("cilium/cilium bpf/lib/lb.h@0040d667 __lb4_affinity_backend_id: `if (READ_ONCE(val->last_used) + "
                        "bpf_sec_to_mono(svc->affinity_timeout) <= now) {` the entry is deleted and a new backend selected "
                        "(\"Session is sticky for range [current, last_used + affinity_timeout)\"); bpf_sock.c picks a random "
                        "slot otherwise (`sock_select_slot`: `get_prandom_u32()` for TCP)")
SRC_AFFINITY_OUTSIDE = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53 (Session Affinity): \"If a "
                        "request is sent from outside the cluster to the service, the request's source IP address is used for "
                        "determining the endpoint affinity.\" (each node's own LB4_AFFINITY_MAP / LB6_AFFINITY_MAP)")

@dataclass(frozen=True)
class PlaneRule:
    client: str  # pod | host | outside
    access: str  # connect (TCP, or a connected UDP socket) | sendmsg (an unconnected UDP sendto()) | raw
    frontend: str  # ClusterIP | NodePort | ExternalIP | LoadBalancer
    coverage: str  # Full | Hostns-only | *
    mitigation: str  # on | off | *  (the CVE-2020-8554 ExternalIP mitigation)
    plane: Plane
    why: str
    source: str

    def matches(self, client: str, access: str, frontend: str, coverage: str, mitigation: str) -> bool:
        return (self.client, self.access, self.frontend) == (client, access, frontend) and self.coverage in (ANY, coverage) \
            and self.mitigation in (ANY, mitigation)


PLANE_RULES: tuple[PlaneRule, ...] = (
    PlaneRule("pod", "connect", "ClusterIP", "Full", ANY, Plane.SOCKET,
              "socket LB covers pod namespaces: connect() is translated (or rejected) in the cgroup hook", SRC_SOCK_FWD),
    PlaneRule("pod", "connect", "ClusterIP", "Hostns-only", ANY, Plane.PER_PACKET,
              "the socket hook skips pod namespaces (-ENXIO); bpf_lxc has per-packet LB because of hostns-only",
              SRC_SOCK_FWD + "; " + SRC_LXC_PER_PACKET),
    PlaneRule("pod", "raw", "ClusterIP", "Full", ANY, Plane.NONE,
              "a packet never meets the socket hook, and bpf_lxc has no per-packet LB under Full coverage: it is routed out of "
              "the node as addressed", SRC_LXC_PER_PACKET),
    PlaneRule("pod", "raw", "ClusterIP", "Hostns-only", ANY, Plane.PER_PACKET,
              "bpf_lxc looks the packet up as a service (per-packet LB is compiled in under hostns-only)", SRC_LXC_PER_PACKET),
    PlaneRule("host", "connect", "ClusterIP", ANY, ANY, Plane.SOCKET,
              "the host namespace is covered by socket LB in both coverage modes", SRC_SOCK_FWD),
    PlaneRule("pod", "sendmsg", "ClusterIP", "Full", ANY, Plane.SOCKET,
              "socket LB covers pod namespaces: an unconnected UDP sendto() is translated (or rejected) in the sendmsg4 hook, "
              "and the reply's source reversed by recvmsg4", SRC_SOCK_SENDMSG + "; " + SRC_SOCK_RECVMSG),
    PlaneRule("pod", "sendmsg", "ClusterIP", "Hostns-only", ANY, Plane.PER_PACKET,
              "the socket hooks skip pod namespaces (-ENXIO); bpf_lxc has per-packet LB because of hostns-only",
              SRC_SOCK_FWD + "; " + SRC_LXC_PER_PACKET),
    PlaneRule("host", "sendmsg", "ClusterIP", ANY, ANY, Plane.SOCKET,
              "the host namespace is covered by socket LB in both coverage modes", SRC_SOCK_SENDMSG + "; " + SRC_SOCK_RECVMSG),
    PlaneRule("host", "connect", "NodePort", ANY, ANY, Plane.SOCKET,
              "a host-namespace connect() to a node address and NodePort is translated through the wildcard entry",
              SRC_SOCK_FWD + "; " + SRC_SOCK_WILDCARD),
    PlaneRule("pod", "connect", "NodePort", "Full", ANY, Plane.SOCKET,
              "a pod's connect() to a node address and NodePort is translated through the wildcard entry",
              SRC_SOCK_FWD + "; " + SRC_SOCK_WILDCARD),
    PlaneRule("pod", "connect", "NodePort", "Hostns-only", ANY, Plane.PER_PACKET,
              "the socket hook skips pod namespaces (-ENXIO); bpf_lxc's per-packet LB translates a NodePort on the local node's "
              "own addresses (each is a frontend in its service map), and a SYN to another node's address leaves the pod "
              "untranslated and is load-balanced where it enters that node: in tunnel routing it arrives tunnelled and "
              "bpf_overlay runs the NodePort LB on cilium_vxlan/cilium_geneve, in native routing bpf_host on the native device",
              SRC_SOCK_FWD + "; " + SRC_LXC_NODEPORT + "; " + SRC_OVERLAY_NODEPORT + "; " + SRC_HOST_NODEPORT),
    PlaneRule("outside", "raw", "NodePort", ANY, ANY, Plane.PER_PACKET,
              "a packet arriving on a node's native device for a NodePort is load-balanced by bpf_host", SRC_HOST_NODEPORT),
    PlaneRule("outside", "connect", "NodePort", ANY, ANY, Plane.PER_PACKET,
              "a remote client's connection arrives as packets on the native device: bpf_host", SRC_HOST_NODEPORT),
    PlaneRule("pod", "connect", "ExternalIP", "Full", "on", Plane.NONE,
              "the CVE-2020-8554 mitigation skips translation of a non-node ExternalIP, and bpf_lxc has no per-packet LB "
              "under Full coverage: the connection goes to the address itself", SRC_SKIP_XLATE + "; " + SRC_LXC_PER_PACKET),
    PlaneRule("pod", "connect", "ExternalIP", "Full", "off", Plane.SOCKET,
              "with the mitigation disabled the socket hook translates ExternalIPs like any service", SRC_SKIP_XLATE),
    PlaneRule("pod", "connect", "LoadBalancer", "Full", ANY, Plane.SOCKET,
              "LoadBalancer VIPs are not subject to sock4_skip_xlate", SRC_SKIP_XLATE_LB),
    PlaneRule("pod", "connect", "ExternalIP", "Hostns-only", ANY, Plane.PER_PACKET,
              "the socket hook skips pod namespaces (-ENXIO); bpf_lxc's per-packet LB looks every frontend up in the service "
              "map and translates it, with no CVE-2020-8554 check (that one is bpf_sock's sock4_skip_xlate), so the mitigation "
              "does not apply", SRC_SOCK_FWD + "; " + SRC_LXC_XLATE),
    PlaneRule("pod", "connect", "LoadBalancer", "Hostns-only", ANY, Plane.PER_PACKET,
              "the socket hook skips pod namespaces (-ENXIO); bpf_lxc's per-packet LB translates the VIP", SRC_SOCK_FWD + "; " + SRC_LXC_XLATE),
)


SRC_SOCK_RETVAL = ("cilium/cilium bpf/include/bpf/helpers.h (the copy in the code index) try_set_retval: `#ifdef HAVE_SET_RETVAL "
                   "return set_retval(retval); #else return 0;` (PR #47737 later made it a load-time bpf_core_enum_value_exists); "
                   "bpf/bpf_sock.c cil_sock4_connect rejects after it: without the helper connect() fails with the kernel's EPERM. "
                   "cgroup sock_addr programs may call bpf_set_retval from Linux 6.1 (clusters/kernels.yaml sock_addr_set_retval)")
SRC_NO_SVC_ROUTABLE = ("cilium/cilium bpf/lib/lb.h (the index's newest copy, commit not reported) handle_nonroutable_endpoints_v4: eTP/iTP Local -> "
                       "`return DROP_NO_SERVICE;`, otherwise `/* continue via the slowpath */ return CTX_ACT_OK;`, reached only "
                       "`if (!CONFIG(enable_no_service_endpoints_routable))`; pkg/svcrouteconfig/cell.go DefaultConfig "
                       "`EnableNoServiceEndpointsRoutable: true`: the host stack answers a SYN to a NodePort nothing listens on with a RST")

SRC_NO_SVC_ROUTABLE_LXC = ("cilium/cilium bpf/bpf_lxc.c@d7be9552 __per_packet_lb_svc_xlate_4 (and _6): on DROP_NO_SERVICE "
                           "`if (!CONFIG(enable_no_service_endpoints_routable)) return handle_nonroutable_endpoints_v4(svc);` -- "
                           "CTX_ACT_OK before the DNAT and the CT_EGRESS tail call: the packet leaves the pod as addressed")

#: the agent's resolved options as files (cilium-dbg/cmd/build-config.go writes each key of its configuration to
#: /tmp/cilium/config-map/<key>; SRC_MAGLEV_SEED)
NO_BACKEND_RESPONSE_FILE = "/tmp/cilium/config-map/service-no-backend-response"
ROUTABLE_FILE = "/tmp/cilium/config-map/enable-no-service-endpoints-routable"
#: the address families the agent serves (the chart writes both keys: cilium-configmap.yaml@1efbf98a
#: `enable-ipv4: {{ .Values.ipv4.enabled | quote }}`, `enable-ipv6: {{ .Values.ipv6.enabled | quote }}`)
FAMILY_FILES = {"IPv4": "/tmp/cilium/config-map/enable-ipv4", "IPv6": "/tmp/cilium/config-map/enable-ipv6"}


def ip_families(files: "dict[str, str | None]") -> tuple[str, ...]:
    """The families whose enable-ipv4 / enable-ipv6 the agent resolved true (FAMILY_FILES); an unreadable file counts as
    the agent's default (IPv4 on, IPv6 off)."""
    default = {"IPv4": "true", "IPv6": "false"}
    return tuple(f for f in ("IPv4", "IPv6") if (files.get(FAMILY_FILES[f]) or default[f]).strip().lower() == "true")

#: the kernel from which connect4/6 may set connect()'s errno (clusters/kernels.yaml sock_addr_set_retval)
SET_RETVAL_KERNEL = (6, 1)
#: the Cilium releases whose socket plane fails connect() with EPERM on every kernel: the range #45184 reports (SRC_EPERM_BUG)
EPERM_REGRESSION = ">=1.19.2, <1.20.0"


@dataclass(frozen=True)
class NoBackendRule:
    """What a client sees from a plane when the service has no backends."""

    plane: Plane
    response: str  # reject | drop | *  (the agent's ServiceNoBackendResponse)
    connect: frozenset[str]  # kpr probe connect verdicts
    errnos: frozenset[str]  # errno names connect() may fail with (empty: no errno, a timeout)
    curl_exit: int  # 7 = could not connect; 28 = timed out
    fast: bool  # fails at once (well under the probe's timeout) rather than at its limit
    raw: str | None  # kpr probe syn verdict (None: a raw packet cannot reach this plane)
    icmp: tuple[int, int] | None  # (type, code) of the answer to a raw SYN
    why: str
    source: str
    #: enable-no-service-endpoints-routable as the agent resolved it, or * (the rule holds either way)
    routable: bool | str = ANY
    #: what a wrong errno means (a known regression), named in the failure
    errno_note: str = ""
    #: whose address the frontend is: ``node`` (a NodePort on a node's own address), ``elsewhere`` (a ClusterIP no one on
    #: the node owns), or * (the rule holds either way)
    owner: str = ANY


NO_BACKEND_RULES: tuple[NoBackendRule, ...] = (
    NoBackendRule(Plane.SOCKET, ANY, frozenset({"unreachable"}), frozenset({"EHOSTUNREACH"}), 7, True, None, None,
                  "the socket hook fails connect() at once whatever ServiceNoBackendResponse says, with EHOSTUNREACH on a kernel "
                  "that lets it set the errno (6.1+)", SRC_SOCK_FWD + "; " + SRC_SOCK_RETVAL,
                  errno_note="EPERM on a 6.1+ kernel is the regression of cilium/cilium#45184 (reported for Cilium 1.19.2 up to "
                             "1.20.0: bpf_set_retval compiled out; fixed on main by #45185, no v1.19 backport found)"),
    NoBackendRule(Plane.PER_PACKET, ANY, frozenset({"refused"}), frozenset({"ECONNREFUSED"}), 7, True, "reset", None,
                  "enable-no-service-endpoints-routable is false: the per-packet plane lets the packet continue to the node's "
                  "stack, which owns the NodePort's address and answers a TCP reset", SRC_NO_SVC_ROUTABLE, routable=False, owner="node"),
    NoBackendRule(Plane.PER_PACKET, ANY, frozenset({"timeout"}), frozenset(), 28, False, "timeout", None,
                  "enable-no-service-endpoints-routable is false: bpf_lxc lets the pod's packet continue untranslated to the "
                  "ClusterIP, which nothing on the node owns (no kube-proxy), so nothing answers; the client waits for its limit",
                  SRC_NO_SVC_ROUTABLE_LXC + "; " + SRC_NO_SVC_ROUTABLE, routable=False, owner="elsewhere"),
    NoBackendRule(Plane.PER_PACKET, "reject", frozenset({"refused"}), frozenset({"ECONNREFUSED"}), 7, True, "icmp-unreachable", (3, 3),
                  "the per-packet plane answers ICMP port unreachable; the client's TCP stack turns it into ECONNREFUSED",
                  SRC_NO_SERVICE_ICMP),
    NoBackendRule(Plane.PER_PACKET, "drop", frozenset({"timeout"}), frozenset(), 28, False, "timeout", None,
                  "the per-packet plane drops the packet; the client waits for its limit", SRC_NO_SERVICE_DROP),
)

#: the socket plane's rule below 6.1: the hook cannot set the errno, so connect() fails with EPERM
SOCKET_NO_BACKEND_OLD_KERNEL = NoBackendRule(
    Plane.SOCKET, ANY, frozenset({"unreachable"}), frozenset({"EPERM"}), 7, True, None, None,
    "the socket hook fails connect() at once whatever ServiceNoBackendResponse says; below kernel 6.1 it cannot set the errno, "
    "so connect() fails with the kernel's EPERM", SRC_SOCK_FWD + "; " + SRC_SOCK_RETVAL)


@dataclass(frozen=True)
class FormatRule:
    """What a command prints (the facts the parsers and the fake's renderers share)."""

    id: str
    command: str
    prints: str
    source: str


FORMAT_RULES: tuple[FormatRule, ...] = (
    FormatRule("modules-health-tally", "cilium-dbg status",
               "one line 'Modules Health:<tab>Stopped(N) Degraded(N) OK(N)' (no tree)",
               "cilium/cilium pkg/health/client/modules.go @ 21d690e1 GetAndFormatModulesHealth (verbose=false); "
               "real samples in tests/data/cilium/health/modules-health-tally-real-samples.txt"),
    FormatRule("modules-health-tree", "cilium-dbg status --verbose",
               "the module tree without a tally (until PR #46739, which adds the tally on the 'Modules Health:' line and "
               "indents the tree by two spaces); each leaf '[OK|DEGRADED|STOPPED] <message> (<age>, x<count>)', "
               "never the error text",
               "cilium/cilium pkg/health/client/modules.go @ 21d690e1 upsertTree (meta = [LEVEL] Message (age, xCount)); "
               "https://github.com/cilium/cilium/pull/46739"),
    FormatRule("db-health", "cilium-dbg shell -- db/show health",
               "a statedb table with columns Module Component Level Message Error LastOK UpdatedAt Count; Level OK|Degraded|Stopped; "
               "times RFC 3339",
               "cilium/cilium pkg/hive/health/types/types.go (Status.TableHeader, TableRow, Level constants)"),
    FormatRule("reflector-degraded", "cilium-dbg shell -- db/show health",
               "a frontend conflict degrades module loadbalancer-reflectors with Message 'Failure processing services' and the "
               "joined errors in Error; 'Running' again once the errors clear",
               "cilium/cilium pkg/loadbalancer/reflectors/k8s.go reflectorHealth.report and RegisterK8sReflector "
               "(job.OneShot(\"reflect-services-endpoints\"): health component job-reflect-services-endpoints); "
               "pkg/loadbalancer/reflectors/cell.go cell.Module(\"loadbalancer-reflectors\"); pkg/loadbalancer/cell/cell.go "
               "(a Group holding reflectors.Cell); daemon/cmd/cells.go (Agent \"agent\" > ControlPlane \"controlplane\" > "
               "loadbalancer_cell.Cell): module ID agent.controlplane.loadbalancer-reflectors"),
    FormatRule("frontend-conflict-error", "(agent log, db/show health Error)",
               "'frontend already owned by another service: <addr/PROTO> is owned by <ns/name>'",
               "cilium/cilium pkg/loadbalancer/writer/writer.go UpsertFrontend (fmt.Errorf(\"%w: %s is owned by %s\", "
               "ErrFrontendConflict, ...)); pkg/loadbalancer/errors.go ErrFrontendConflict"),
    FormatRule("health-check-node-port", "GET http://<node>:<healthCheckNodePort>/",
               "HTTP 200 (503 with no local backend), JSON {\"service\":{\"namespace\",\"name\"},\"localEndpoints\":N}",
               "cilium/cilium pkg/loadbalancer/healthserver/healthserver.go ServeHTTP (healthResponse, kube-proxy compatible)"),
    FormatRule("external-ip-mitigation-config", "cilium-dbg config -a",
               "'DisableExternalIPMitigation : true|false' among the read-only (DaemonConfig) options",
               "cilium/cilium pkg/option/config.go DisableExternalIPMitigation = \"disable-external-ip-mitigation\"; "
               "tests/data/cilium/unattributed/config-all-v1.18-likely-2025-08.txt line 71"),
)


class NoRule(LookupError):
    """No sourced rule covers this path: the behaviour is unknown, not assumed."""


def plane_for(client: str, access: str, frontend: str, coverage: str, mitigation: str = "on") -> PlaneRule:
    for rule in PLANE_RULES:
        if rule.matches(client, access, frontend, coverage, mitigation):
            return rule
    raise NoRule(f"no sourced rule for a {access} from a {client} to a {frontend} frontend (coverage {coverage}, "
                 f"ExternalIP mitigation {mitigation})")


SRC_NO_SERVICE_ICMP6 = ("cilium/cilium bpf/lib/lb.h (the index's newest copy, commit not reported) __tail_no_service_ipv6: "
                        "`icmphdr->icmp6_type = ICMPV6_DEST_UNREACH; icmphdr->icmp6_code = ICMPV6_PORT_UNREACH;` (type 1 code 4), "
                        "rate-limited by tail_no_service_ipv6 to 100 replies a second per device, bursts of 1000")
#: the per-packet reject for IPv6: ICMPv6 destination unreachable, port unreachable (SRC_NO_SERVICE_ICMP6)
ICMP6_PORT_UNREACHABLE = (1, 4)

SRC_NODEPORT_WILDCARD = ("cilium/cilium pkg/loadbalancer/reflectors/conversions.go@bb5d8694 convertService, one NodePort frontend per "
                         "family of getIPFamilies(svc): `case slim_corev1.IPv4Protocol: fe.Address.AddrCluster = zeroV4` / "
                         "`case slim_corev1.IPv6Protocol: fe.Address.AddrCluster = zeroV6` (zeroV4 \"0.0.0.0\", zeroV6 \"::\")")
#: a NodePort's frontend address per family of its Service: the wildcard of that family (SRC_NODEPORT_WILDCARD)
NODEPORT_WILDCARD = {"IPv4": "0.0.0.0", "IPv6": "::"}


def no_backend(plane: Plane, response: str, routable: bool = True, kernel: "tuple[int, ...] | None" = None, family: int = 4,
               owner: str = "node") -> NoBackendRule:
    """The rule for a backendless Cluster-policy service on ``plane``. ``routable``: the agent's
    enable-no-service-endpoints-routable; ``kernel``: the client node's kernel (the socket plane's errno depends on it;
    None: 6.1 or newer); ``family``: 4 or 6 (the per-packet reject's ICMP differs: SRC_NO_SERVICE_ICMP6; the socket
    plane's answer is the same, bpf_sock.c __sock6_xlate_fwd returning -EHOSTUNREACH as __sock4_xlate_fwd does);
    ``owner``: ``node`` when the frontend is the node's own address (a NodePort), ``elsewhere`` when nothing on the node
    owns it (a ClusterIP) -- it decides what answers a packet the per-packet plane lets continue (routable false)."""
    if plane is Plane.SOCKET and kernel is not None and kernel < SET_RETVAL_KERNEL:
        return SOCKET_NO_BACKEND_OLD_KERNEL
    for rule in NO_BACKEND_RULES:
        if rule.plane is plane and rule.response in (ANY, response) and rule.routable in (ANY, routable) and rule.owner in (ANY, owner):
            if family == 6 and rule.icmp is not None:
                return replace(rule, icmp=ICMP6_PORT_UNREACHABLE, source=SRC_NO_SERVICE_ICMP6 + "; " + rule.source)
            return rule
    raise NoRule(f"no sourced rule for a backendless service on the {plane} plane with ServiceNoBackendResponse={response}")


def coverage_name(hostns_only: bool) -> str:
    return "Hostns-only" if hostns_only else "Full"




# -- externalTrafficPolicy, the client's address at the backend, hostPort --------------------------------------------

SRC_ETP_SCOPES = ("cilium/cilium bpf/lib/lb.h lb4_lookup_service: traffic from outside looks up a frontend's external scope, "
                  "east-west lookups (the socket plane, pods) switch to the internal scope of a two-scope service; "
                  "pkg/loadbalancer/reconciler/bpf_reconciler.go updateFrontend sets SvcExtLocal for externalTrafficPolicy=Local, "
                  "whose external scope holds only the node's own backends")
SRC_ETP_NO_LOCAL = ("cilium/cilium bpf/lib/lb.h handle_nonroutable_endpoints_v4 and the DROP_NO_SERVICE branch of the per-packet LB: "
                    "with no local backend the external scope has no backend, and the packet gets the no-backend response "
                    "(ServiceNoBackendResponse) while enable-no-service-endpoints-routable is true, its default "
                    "(pkg/svcrouteconfig/cell.go DefaultConfig); with it false the packet is dropped")
SRC_HEALTHSERVER = ("cilium/cilium pkg/loadbalancer/healthserver/healthserver.go: for a Service with a healthCheckNodePort and "
                    "externalTrafficPolicy Local (KPR on, enable-health-check-nodeport on by default) each agent listens on "
                    ":<healthCheckNodePort> and answers 200 with {\"service\":{\"namespace\",\"name\"},\"localEndpoints\":N}, 503 when "
                    "N is 0; N counts backends, one per address and port: @b1cd8c2f getLocalEndpointCount `for be := range "
                    "h.backends.List(txn, lb.BackendByServiceName(h.name)) {` ... `if inst.State == lb.BackendStateActive { activeCount++`, "
                    "after skipping `inst.NodeName != \"\" && inst.NodeName != h.nodeName`, and a backend is an address:port "
                    "(testdata/healthserver.txtar@035b1474: `test/echo (http)       10.244.1.1:80/TCP`, two local ones answer "
                    "`\"localEndpoints\":2`), so a dual-stack pod counts twice; addListener: `bindAddr := fmt.Sprintf(\":%d\", port)`, "
                    "which Go's listener opens on every address of both families")


def local_endpoint_count(slices: "list[Any]", node: str) -> int:
    """What the health server on ``node`` answers as localEndpoints (SRC_HEALTHSERVER), from the Service's EndpointSlices
    (every family's): the distinct address:port/protocol backends that are active (ready: serving and not terminating)
    and on ``node`` or on no named node."""
    backends: set[tuple[str, int, str]] = set()
    for es in slices:
        ports = [(int(p.get("port") or 0), str(p.get("protocol") or "TCP")) for p in es.get("ports") or []]
        for ep in es.get("endpoints") or []:
            if ep.get("nodeName") not in (None, "", node) or (ep.get("conditions") or {}).get("ready") is False:
                continue
            backends |= {(str(a), port, proto) for a in ep.get("addresses") or [] for port, proto in ports}
    return len(backends)


SRC_SNAT_ADDRESS6 = ("cilium/cilium bpf/lib/nodeport.h@f541499b tail_nodeport_nat_egress_ipv6: `.addr = IPV6_DIRECT_ROUTING,` and, "
                     "`#ifdef TUNNEL_MODE`, with a tunnel endpoint `BPF_V6(target.addr, ROUTER_IP);`; "
                     "pkg/datapath/linux/config/config.go, the copy SRC_SNAT_ADDRESS quotes (its commit not reported by the "
                     "index): `routerIP := cfg.CiliumInternalIPv6` ... `fw.WriteString(defineIPv6(\"ROUTER_IP\", routerIP))`")
SRC_SNAT_DSR = ("cilium/cilium bpf/lib/nodeport.h@00155816 nodeport_lb4: `if (nodeport_uses_dsr4(&tuple))` tail-calls "
                "CILIUM_CALL_IPV4_NODEPORT_DSR (the client's address is kept), else CILIUM_CALL_IPV4_NODEPORT_NAT_EGRESS (SNAT); "
                "`if (backend_local) { ... return CTX_ACT_OK; }` delivers to a backend on the receiving node without SNAT; "
                "nodeport_uses_dsr: `ENABLE_DSR && ENABLE_DSR_HYBRID`: `if (nexthdr == IPPROTO_TCP) return true;`")
SRC_SNAT_ADDRESS = ("cilium/cilium bpf/lib/nodeport.h@00155816 tail_nodeport_nat_egress_ipv4: the target starts as "
                    "`.addr = IPV4_DIRECT_ROUTING,` and, `#ifdef TUNNEL_MODE`, `if (info && info->tunnel_endpoint != 0)` becomes "
                    "`target.addr = IPV4_GATEWAY;`; pkg/datapath/linux/config/config.go@00025c98: `ipv4GW := cfg.CiliumInternalIPv4` "
                    "... `cDefinesMap[\"IPV4_GATEWAY\"]` (the node's cilium_host address, CiliumNode spec.addresses type "
                    "CiliumInternalIP: pkg/node/addressing/addresstype.go@e326b838); IPV4_DIRECT_ROUTING is the direct-routing "
                    "device's address, the node's InternalIP on kind; routing mode: status -o json routing.inter-host-routing-mode "
                    "Native|Tunnel (api/v1/models/routing.go@015ff256)")
SRC_HOSTPORT = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go Update: a HostPort frontend without hostIP is expanded to "
                "the node's addresses (on the agent of the pod's node); bpf/bpf_sock.c sock4_skip_xlate: a HostPort frontend is "
                "translated for a non-loopback address only when that address is the host's own (HOST_ID)")
SRC_HOSTPORT_FAMILIES = ("cilium/cilium pkg/loadbalancer/reflectors/k8s.go@9ab18961 upsertHostPort: `ipv6 = ipv6 || addr.Is6()` over "
                         "the pod's IPs, and with no hostIP `if ipv6 { feIPs = append(feIPs, net.IPv6zero) }` (likewise IPv4): a "
                         "HostPort frontend per family the pod has an address of, its backend the pod's address of that family")
SRC_HOSTPORT_SCHED = ("kubernetes/kubernetes pkg/scheduler/framework/plugins/nodeports/node_ports.go: the NodePorts filter fails a node "
                      "whose used ports conflict (hostIP, protocol, hostPort) with ErrReason \"node(s) didn't have free ports for the "
                      "requested pod ports\": the pod is not bound there and stays Pending (PodScheduled False, Unschedulable)")

#: the label Kubernetes puts on a Service its EndpointSlice mirroring must skip, and that marks it headless
#: (corev1.IsHeadlessService), beside ``clusterIP: None``
HEADLESS_LABEL = "service.kubernetes.io/headless"
SRC_ENDPOINTSLICE_SERVICE = ("cilium/cilium pkg/k8s/endpoints.go@00b4b2da ParseEndpointSliceID: `Name: "
                             "es.GetLabels()[slim_discovery_v1.LabelServiceName],`: an EndpointSlice's backends belong to the "
                             "Service its kubernetes.io/service-name label names, whoever wrote the slice")
SRC_HEADLESS = ("cilium/cilium pkg/loadbalancer/reflectors/conversions.go@bb5d8694 convertService: \"A service that is annotated as "
                "headless has no frontends, even if the service spec contains ClusterIPs etc.\" `if isHeadless(svc) { return }`, "
                "before the ClusterIP, NodePort, LoadBalancer and ExternalIP frontends; isHeadless: `_, headless := "
                "svc.Labels[corev1.IsHeadlessService]` or ClusterIP \"none\"")


@dataclass(frozen=True)
class SourceRule:
    """The address a backend sees for a TCP connection from outside the cluster to a NodePort."""

    mode: str  # the agent's NodePort mode (SNAT | DSR | Hybrid) or *
    etp_local: bool | str  # externalTrafficPolicy=Local, or *
    backend_on_receiving_node: bool | str  # or *
    routing: str  # the agent's inter-host routing mode (Tunnel | Native) or *
    sees: str  # client | node (the receiving node's InternalIP) | cilium-internal-ip (its cilium_host address)
    why: str
    source: str

    def matches(self, mode: str, etp_local: bool, on_node: bool, routing: str) -> bool:
        return self.mode in (ANY, mode) and self.etp_local in (ANY, etp_local) and self.backend_on_receiving_node in (ANY, on_node) \
            and self.routing in (ANY, routing)


SOURCE_RULES: tuple[SourceRule, ...] = (
    SourceRule(ANY, True, ANY, ANY, "client", "externalTrafficPolicy=Local serves from the receiving node's own backends only", SRC_ETP_SCOPES),
    SourceRule(ANY, ANY, True, ANY, "client", "a backend on the receiving node is delivered to without SNAT", SRC_SNAT_DSR),
    SourceRule("SNAT", False, False, "Tunnel", "cilium-internal-ip",
               "SNAT mode in tunnel routing: the receiving node SNATs to its cilium_host address (CiliumInternalIP: IPV4_GATEWAY, ROUTER_IP for IPv6) "
               "before it tunnels the request to the other node's backend", SRC_SNAT_ADDRESS),
    SourceRule("SNAT", False, False, "Native", "node",
               "SNAT mode in native routing: the receiving node SNATs to its direct-routing address (IPV4_DIRECT_ROUTING/IPV6_DIRECT_ROUTING, its "
               "InternalIP) before it forwards the request to the other node's backend", SRC_SNAT_ADDRESS),
    SourceRule("DSR", False, False, ANY, "client", "DSR mode: the backend answers the client directly and sees its address", SRC_SNAT_DSR),
    SourceRule("Hybrid", False, False, ANY, "client", "hybrid mode: DSR for TCP (SNAT for UDP)", SRC_SNAT_DSR),
)


def backend_sees(mode: str, etp_local: bool, on_node: bool, routing: str = "") -> SourceRule:
    """Which address the backend sees for a TCP connection from outside, by the sourced rules."""
    for rule in SOURCE_RULES:
        if rule.matches(mode, etp_local, on_node, routing):
            return rule
    raise NoRule(f"no sourced rule for the client address at a backend with NodePort mode {mode!r} and routing mode {routing!r}")


# -- internalTrafficPolicy=Local --------------------------------------------------------------------------------------

SRC_ITP_CLUSTER_IP = ("cilium/cilium pkg/loadbalancer/writer/writer.go@da6d7b49 shouldUseLocalBackends: `case "
                      "loadbalancer.ScopeExternal: if fe.Type == loadbalancer.SVCTypeClusterIP { ... return isIntLocal(extCfg, fe) }` "
                      "(\"ClusterIP doesn't support externalTrafficPolicy and has only the external scope, which contains only "
                      "node-local backends when internalTrafficPolicy=Local.\"); isIntLocal: `if !extCfg.EnableInternalTrafficPolicy "
                      "{ return false }`")
SRC_ITP_NO_LOCAL = ("cilium/cilium bpf/bpf_sock.c@66382ef3 __sock4_xlate_fwd: `svc = lb4_lookup_service(&key, true, false);` then "
                    "`if (svc->count == 0 && !lb4_svc_is_l7loadbalancer(svc)) return -EHOSTUNREACH;` -- on a node with no local "
                    "backend the agent programs the ClusterIP with no backend (SRC_ITP_CLUSTER_IP), so a pod there gets the socket "
                    "plane's no-backend answer, as for a Service with no backend at all")
SRC_ITP_EXTERNAL = ("cilium/cilium bpf/lib/nodeport.h@f541499b nodeport_lb4: `svc = lb4_lookup_service(&key, false, false);` (no scope "
                    "switch: traffic from outside reads the external scope) and writer.go@da6d7b49 shouldUseLocalBackends for any "
                    "other type: `case loadbalancer.ScopeExternal: ... return isExtLocal(fe)` -- internalTrafficPolicy does not "
                    "narrow the external scope, so with externalTrafficPolicy Cluster every backend serves outside traffic")
SRC_ITP_ENABLED = ("the agent's enable-internal-traffic-policy (/tmp/cilium/config-map/enable-internal-traffic-policy; cilium-cli's "
                   "install defaults write `\"enable-internal-traffic-policy\": \"true\"`, and pkg/defaults/defaults.go "
                   "`EnableInternalTrafficPolicy = true` in the index's copy, whose commit is not reported)")
#: the agent's resolved enable-internal-traffic-policy (SRC_ITP_ENABLED)
ITP_FILE = "/tmp/cilium/config-map/enable-internal-traffic-policy"


def on_unless_false(value: str | None) -> bool:
    """An agent option that is on by default, as resolved in its config map: only an explicit false turns it off."""
    return value is None or value.strip().lower() != "false"


SRC_ITP_ALWAYS = ("cilium/cilium Documentation/operations/upgrade.rst@a43d22be, 1.19 Removed Options: \"The previously deprecated "
                  "``--enable-session-affinity``, ``--enable-internal-traffic-policy``, and ``--enable-svc-source-range-check`` "
                  "flags have been removed. Their corresponding features are enabled by default.\" (deprecated by PR #39768)")
#: the first minor that honours internalTrafficPolicy whatever its config map says (SRC_ITP_ALWAYS)
ITP_ALWAYS_FROM = (1, 19)


def itp_enabled(value: str | None, cilium_version: str = "") -> bool:
    """Whether the agent honours internalTrafficPolicy: from 1.19 always (SRC_ITP_ALWAYS: the option is gone, and a value
    left in the config map, e.g. by an old extraConfig, is read by nothing); before, enable-internal-traffic-policy as
    the agent resolved it, on unless false (SRC_ITP_ENABLED). ``cilium_version`` unknown (""): the option decides."""
    if cilium_version:
        from ..core.versions import Version

        v = Version.parse(cilium_version)
        if (v.major, v.minor) >= ITP_ALWAYS_FROM:
            return True
    return on_unless_false(value)


def internal_backends(itp_local: bool, backends: "list[Any]", node: str) -> "list[Any]":
    """The backends a pod's lookup on ``node`` may pick for a ClusterIP (its only scope, SRC_ITP_CLUSTER_IP): with
    internalTrafficPolicy=Local (and the agent honouring it) only those on ``node``; else all. None left: the plane's
    no-backend answer (SRC_ITP_NO_LOCAL). The same node filter as the external scope's (:func:`external_backends`)."""
    return external_backends(itp_local, backends, node)


# -- terminating backends -------------------------------------------------------------------------------------------

SRC_TERMINATING_STATE = ("cilium/cilium pkg/k8s/endpoints.go@eea4c1e8 ParseEndpointSliceV1: `if !isReady && "
                         "option.Config.EnableK8sTerminatingEndpoint && isServing && isTerminating { ... backend.Terminating = true`, "
                         "a not-ready endpoint that is not serving is discarded; pkg/loadbalancer/reflectors/conversions.go@bb5d8694 "
                         "convertEndpoints: `if entry.backend.Terminating { state = loadbalancer.BackendStateTerminating }`")
SRC_STARTING_NO_SLOT = ("cilium/cilium pkg/loadbalancer/tests/testdata/topology-aware-starting.txtar@669f18e3: a backend \"that is starting "
                        "(ready=false, serving=false, terminating=false -> BackendStateMaintenance)\"; pkg/loadbalancer/reconciler/"
                        "bpf_reconciler.go@ff106690 updateFrontend: `if be.State == loadbalancer.BackendStateMaintenance { // Backends "
                        "that are in maintenance are not included in the services map.`")
SRC_TERMINATING_SLOTS = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go@ff106690 updateFrontend: slots in "
                         "`ops.sortedBackends(fe)` order (active first), then `if activeCount == 0 { activeCount = terminatingCount } "
                         "else { inactiveCount += terminatingCount }` and the master's count is activeCount: terminating backends are "
                         "picked only when no active one remains (KEP-1669), else they keep their slots beyond the count")
SRC_TERMINATING_NEW = ("cilium/cilium bpf/bpf_sock.c@66382ef3 __sock4_xlate_fwd: `key.backend_slot = (sock_select_slot(ctx_full) % "
                       "svc->count) + 1;` -- a new connection picks among the first count slots only")
SRC_TERMINATING_DRAIN = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53 (Graceful Termination): \"When "
                         "Cilium agent receives a Kubernetes update event for a terminating endpoint, the datapath state for the "
                         "endpoint is removed such that it won't service new connections, but the endpoint's active connections are "
                         "able to terminate gracefully.\"")
SRC_TERMINATING_OPTION = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53: \"By default, the Cilium agent "
                          "then detects such terminating Pod events [...] If needed, the feature can be disabled with the configuration "
                          "option ``enable-k8s-terminating-endpoint``.\" (off: pkg/k8s/endpoints.go@eea4c1e8 `if "
                          "!option.Config.EnableK8sTerminatingEndpoint { ... continue }` drops every not-ready endpoint)")
#: the agent's resolved enable-k8s-terminating-endpoint (SRC_TERMINATING_OPTION); the file is absent where the chart no
#: longer writes the key
TERMINATING_FILE = "/tmp/cilium/config-map/enable-k8s-terminating-endpoint"

SRC_HAIRPIN_LOOPBACK = ("cilium/cilium bpf/bpf_lxc.c@d7be9552 __per_packet_lb_svc_xlate_4: `if (tuple.saddr == backend->address) {` "
                        "... `Perform NAT on the source address to make it appear from an outside address.` `ct_state_new.loopback = 1;` "
                        "(the source becomes IPV4_LOOPBACK); pkg/defaults/defaults.go `LoopbackIPv4 = \"169.254.42.1\"`; cilium-cli "
                        "connectivity pod-to-itself-via-service: `defaultServiceLoopbackIPv6 = \"fe80::1\"`, the keys "
                        "`ipv4-service-loopback-address`/`ipv6-service-loopback-address`, `AltRequestSourceIPs: []string{loopbackIP}`")
SRC_HAIRPIN_SOCKET = ("cilium/cilium bpf/bpf_sock.c@66382ef3 __sock4_xlate_fwd (SRC_SOCK_FWD): connect() is rewritten to the backend "
                      "it picks -- with the pod as its Service's only backend, the pod's own address: the connection is the pod to "
                      "itself, no NAT, so it sees its own address")
SRC_HAIRPIN_LOOPBACK6 = ("cilium/cilium PR #39594 \"bpf: service loopback for ipv6\" (not in 1.18: PR #42497's review \"somehow "
                         "assumed this made it into 1.18\"), whose fe80::1 neighbour discovery (issue #42460) #42497 fixed; cilium-cli "
                         "connectivity/tests/service.go podToItselfViaService.Run (the index's copy that reads the loopback keys, commit "
                         "not reported): `// Skip IPv6 for versions < 1.19.0`")
#: the first minor whose per-packet plane NATs an IPv6 pod's packet to itself to the service loopback (SRC_HAIRPIN_LOOPBACK6)
HAIRPIN6_PER_PACKET_FROM = (1, 19)


def hairpin_unjudged(plane: "Plane", family: str, cilium_version: str = "") -> str:
    """Why a pod reaching itself through its Service is not judged on this cluster ("" when it is): per packet over IPv6
    before 1.19, which has no IPv6 service loopback (SRC_HAIRPIN_LOOPBACK6). An unknown version ("") is judged."""
    if plane is not Plane.PER_PACKET or family != "IPv6" or not cilium_version:
        return ""
    from ..core.versions import Version

    v = Version.parse(cilium_version)
    if (v.major, v.minor) >= HAIRPIN6_PER_PACKET_FROM:
        return ""
    return (f"per packet over IPv6 a pod reaching itself needs the IPv6 service loopback, which Cilium has from 1.19 "
            f"(cilium/cilium#39594, #42497; cilium-cli skips this check below 1.19.0); the cluster runs {cilium_version}")


#: the agent's service loopback addresses as resolved into its config map (absent: the defaults, SRC_HAIRPIN_LOOPBACK)
LOOPBACK_FILES = {"IPv4": "/tmp/cilium/config-map/ipv4-service-loopback-address", "IPv6": "/tmp/cilium/config-map/ipv6-service-loopback-address"}
LOOPBACK_DEFAULT = {"IPv4": "169.254.42.1", "IPv6": "fe80::1"}


@dataclass(frozen=True)
class HairpinRule:
    """The address a pod's own server sees for a connection the pod made to its own Service."""

    sees: str
    why: str
    source: str


def hairpin_source(plane: "Plane", own_ip: str, family: str, configured: str | None = None) -> HairpinRule:
    """The source address a pod sees on a connection it made to a Service whose backend is itself: on the socket plane
    its own address (SRC_HAIRPIN_SOCKET); on the per-packet plane the service loopback address (SRC_HAIRPIN_LOOPBACK:
    ``configured``, the agent's setting, or the default for ``family``)."""
    if plane is Plane.SOCKET:
        return HairpinRule(own_ip, "socket LB connects the pod straight to itself (no NAT)", SRC_HAIRPIN_SOCKET)
    if plane is Plane.PER_PACKET:
        addr = (configured or "").strip() or LOOPBACK_DEFAULT[family]
        return HairpinRule(addr, "bpf_lxc source-NATs a packet whose backend is its own sender to the service loopback address",
                           SRC_HAIRPIN_LOOPBACK)
    raise NoRule(f"no sourced rule for a pod reaching itself through its Service on the {plane} plane")


SRC_UDP_SOCK_TERMINATION = ("cilium/cilium pkg/loadbalancer/reconciler/termination.go@15af2922 socketTerminationLoop: "
                            "`if change.Deleted || !backend.IsAlive() {` (a terminating backend is still alive) "
                            "`terminateUDPConnectionsToBackend(p, backend.Address)`, batched by `rate.NewLimiter(50*time.Millisecond, 1)`; "
                            "in pods' namespaces `if p.ExtConfig.EnableSocketLBPodConnectionTermination && "
                            "!p.ExtConfig.BPFSocketLBHostnsOnly {`, destroying (sock_diag SOCK_DESTROY) the UDP sockets connected to "
                            "the backend that socket LB translated; daemon/cmd/daemon_main.go: "
                            "`flags.Bool(option.EnableSocketLBPodConnectionTermination, true, ...)`")
#: the agent's enable-socket-lb-pod-connection-termination as resolved into its config map (absent: the default, on)
SOCKET_TERMINATION_FILE = "/tmp/cilium/config-map/enable-socket-lb-pod-connection-termination"
#: the agent processes backend changes for socket termination at most every 50 ms (SRC_UDP_SOCK_TERMINATION)
SOCKET_TERMINATION_BATCH_S = 0.05


def pod_udp_sockets_terminated(value: str | None, coverage: str) -> bool:
    """Whether the agent terminates a pod's connected UDP sockets to a deleted backend (SRC_UDP_SOCK_TERMINATION): with
    socket LB in pods' namespaces (Full coverage) and enable-socket-lb-pod-connection-termination on (its default)."""
    return coverage == "Full" and on_unless_false(value)


#: enable-k8s-terminating-endpoint as the agent resolved it (SRC_TERMINATING_OPTION)
terminating_endpoints_kept = on_unless_false


def new_connection_backends(active: "list[Any]", terminating: "list[Any]") -> "list[Any]":
    """The backends a new connection may reach (SRC_TERMINATING_SLOTS, SRC_TERMINATING_NEW): the active ones while any
    exists, else the terminating ones; none at all: the plane's no-backend answer."""
    return list(active) if active else list(terminating)


def external_backends(etp_local: bool, backends: "list[Any]", node: str) -> "list[Any]":
    """The backends a node's per-packet plane may pick for traffic from outside (the external scope): with
    externalTrafficPolicy=Local only those on ``node`` (``.node``); else all (SRC_ETP_SCOPES)."""
    return [b for b in backends if b.node == node] if etp_local else list(backends)



# -- Maglev -----------------------------------------------------------------------------------------------------------

SRC_MAGLEV_HASH = ("cilium/cilium bpf/lib/hash.h hash_from_tuple_v4: jhash of (saddr, dport<<16|sport, nexthdr) -- the daddr is "
                   "excluded \"to allow for backend selection to choose the same backend even on different service VIPs\"; "
                   "bpf/lib/lb.h lb4_select_backend_id (LB_SELECTION_MAGLEV): backend_ids[hash % LB_MAGLEV_LUT_SIZE]")
SRC_MAGLEV_SCOPE = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go useMaglev: no table for a wildcard frontend "
                    "(@ff106690: `case fe.Address.AddrCluster().IsUnspecified(): return false` -- 0.0.0.0 and ::), nor for "
                    "ClusterIP unless bpf-lb-external-clusterip; NodePort, LoadBalancer, HostPort and "
                    "ExternalIPs frontends get one; bpf/bpf_sock.c picks a slot at random at connect() (the socket plane "
                    "never uses Maglev)")
SRC_MAGLEV_SEED = ("cilium/cilium pkg/maglev/maglev.go: bpf-lb-maglev-hash-seed (DefaultHashSeed \"JLfvgnHc2kaSUFaI\" when unset), "
                   "Documentation/network/kubernetes/kubeproxy-free.rst: \"Every Cilium agent in the cluster must use the same hash "
                   "seed for Maglev to work\"; cilium-dbg/cmd/build-config.go: each agent's resolved configuration (cilium-config, "
                   "then CiliumNodeConfig overrides) is written to /tmp/cilium/config-map/<key>")
SRC_MAGLEV_DUMP = ("cilium/cilium pkg/loadbalancer/maps/test_utils.go DumpLBMaps (lb/maps-dump): \"MAGLEV: ID=<rev NAT ID> "
                   "INNER=[<backend ID>(<slots>), ...]\", backend IDs local to each agent (BE lines give their addresses); "
                   "test_utils.go@505eded5 renders an IPv6 address in brackets: `if addr.To4() == nil { s = \"[\" + s + \"]\" }`")
SRC_MAGLEV_FAMILY = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go@ff106690 updateMaglev: a table per frontend, in its "
                     "family's map: `ops.LBMaps.UpdateMaglev(lbmap.MaglevOuterKey{RevNatID: uint16(feID)}, maglevTable, "
                     "fe.Address.IsIPv6())`; bpf/lib/hash.h@94f96faa hash_from_tuple_v6 hashes `tuple->saddr.p1`..`p4`, "
                     "`((__u32)tuple->dport << 16) | tuple->sport` and `tuple->nexthdr` -- no daddr, as for IPv4")
SRC_MAGLEV_REMAP = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst (Maglev): with a table size M over 100 "
                    "times the backends, at most about 1% of the table changes beyond the removed backend's share on a "
                    "backend change (default M = 16381)")

#: where each agent's resolved Maglev seed is, and the seed it uses when none is set
MAGLEV_SEED_FILE = "/tmp/cilium/config-map/bpf-lb-maglev-hash-seed"
MAGLEV_DEFAULT_SEED = "JLfvgnHc2kaSUFaI"

MAGLEV_RULES: tuple[FormatRule, ...] = (
    FormatRule("maglev-dump", "cilium-dbg shell -- lb/maps-dump", "MAGLEV: ID=<rev NAT ID> INNER=[<backend ID>(<slots>), ...] per Maglev "
               "frontend, most slots first", SRC_MAGLEV_DUMP),
    FormatRule("maglev-seed", f"cat {MAGLEV_SEED_FILE}", "the agent's resolved seed (no file: the built-in default)", SRC_MAGLEV_SEED),
    FormatRule("maglev-scope", "(which frontends get a table)", "NodePort/LoadBalancer/HostPort/ExternalIPs with an address; not the "
               "0.0.0.0 NodePort, not ClusterIP", SRC_MAGLEV_SCOPE),
    FormatRule("maglev-hash", "(which backend a packet gets)", "the table slot of hash(saddr, sport, dport, proto): the same for a flow "
               "through any node", SRC_MAGLEV_HASH),
    FormatRule("maglev-family", "(IPv6 frontends)", "each family's frontend its own table (lb6 maps), selected by the same "
               "destination-free hash over the IPv6 source", SRC_MAGLEV_FAMILY),
)

ALL_RULES: tuple[PlaneRule | NoBackendRule | FormatRule | SourceRule, ...] = \
    PLANE_RULES + NO_BACKEND_RULES + (SOCKET_NO_BACKEND_OLD_KERNEL,) + FORMAT_RULES + SOURCE_RULES + MAGLEV_RULES


# -- the service map's capacity -----------------------------------------------------------------------------------------

SRC_MAP_FULL = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go@01f8c9ec updateFrontend writes the backend slots "
                "(`ops.upsertService(svcKey, slotVal)`), then `if err := ops.upsertRevNat(feID, svcKey, svcVal); err != nil {` "
                "(\"upsert reverse nat: %w\"), then `ops.upsertMaster(...)` (\"upsert service master: %w\"); upsertService: E2BIG -> "
                "\"Unable to update service entry ...: Unable to update element for LB bpf map: You can resize it with the flag "
                "\\\"--bpf-lb-map-max\\\". The resizing might break existing connections to services\"; upsertRevNat: "
                "`fmt.Errorf(\"Unable to update reverse NAT %+v => %+v: %w\", ...)`. Either map can fill first; Update logs "
                "\"Updating frontend failed\"; cilium/statedb reconciler/incremental.go: the frontend's status becomes Error with "
                "that text and is retried")
SRC_MAP_HEALTH = ("cilium/statedb reconciler/reconciler.go@6512fa2e loop: after every round `if len(errs) == 0 { health.OK(...) } "
                  "else { health.Degraded(\"Reconciliation failed\", errors.Join(errs...)) }`: a round without errors (a retry not "
                  "yet due, another object's change) reports OK again, so Degraded is a moment, not a state "
                  "(module loadbalancer-reconciler: cilium/cilium pkg/loadbalancer/reconciler/cell.go)")
SRC_MAP_SIZE = ("cilium/cilium pkg/loadbalancer: bpf-lb-map-max (Helm bpf.lbMapMax, default 65536, DefaultLBMapMaxEntries) sizes the "
                "load-balancing maps; pkg/loadbalancer/config.go: `LBRevNatMaxEntries int mapstructure:\"bpf-lb-rev-nat-map-max\"` "
                "(\"If unset [LBMapEntries is used]\"), likewise bpf-lb-service-map-max for the service map; each frontend takes one "
                "service entry per backend slot plus its master, and one reverse-NAT entry (bpf_reconciler.go updateFrontend); from "
                "1.19 a ClusterIP or LoadBalancer address may add one wildcard entry (SRC_WILDCARD); the resolved values are in "
                "/tmp/cilium/config-map")
SRC_WILDCARD = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go@01f8c9ec updateFrontend, after upsertMaster: `if "
                "loadbalancer.IsWildcardCandidate(fe) && ops.isWildcardClass(svc) { if ops.useWildcards() && (isLocalAddr == nil || "
                "!isLocalAddr(fe.Address.Addr())) { ... ops.upsertWildcard(fe, feID)`; isWildcardClass: `if lbClass == nil { return "
                "ops.extCfg.DefaultLBServiceIPAM == lbipamconfig.DefaultLBClassLBIPAM }` else the BGP or L2-announcer class; "
                "useWildcards: `ops.cfg.EnableWildcardEntries`. What it writes, one per address (port 0, proto ANY, ID 0): "
                "pkg/loadbalancer/reconciler/bpf_reconciler_test.go@d94c266a ClusterIP_no_backends `SVC: ID=0 ADDR=<auto>/ANY "
                "SLOT=0 ... COUNT=0 QCOUNT=0 FLAGS=ClusterIP+non-routable` beside the master; with the agent's defaults (no flag), "
                "a class-less Service's two ports share one: pkg/loadbalancer/tests/testdata/loadbalancer-class-wildcards.txtar"
                "@2d180632 `SVC: ID=0 ADDR=10.96.50.101:0/ANY ...` (test/echo-default, http=80 and https=443), none for "
                "LoadBalancerClass io.cilium/node or other. From 1.19: cilium/cilium#40684 (merged 2025-08), affects/v1.19 in "
                "#43206; the class rule is #43721")
SRC_MAP_FAMILY = ("cilium/cilium pkg/loadbalancer/maps/lbmaps.go@bfbe45f8 allMaps: each family its own maps of the same sizes, "
                  "`{&r.service4Map, service4MapSpec, r.Cfg.ServiceMapMaxEntries}` / `{&r.service6Map, service6MapSpec, "
                  "r.Cfg.ServiceMapMaxEntries}` (likewise revNat4Map/revNat6Map with RevNatMapMaxEntries): an IPv6 frontend takes "
                  "its entries from the lb6 maps (cilium_lb6_services_v2, cilium_lb6_reverse_nat), never from the IPv4 ones")
SRC_CT_FAMILY = ("cilium/cilium pkg/maps/ctmap/cell.go@d5bd51e5 newCTMaps: `if daemonConfig.IPv6Enabled() { ... ctMaps.v6TCPMap = "
                 "newMap(MapNameTCP6Global, mapTypeIPv6TCPGlobal, ...)`: each family its own conntrack maps, kept by name across an "
                 "upgrade (pkg/maps/ctmap/ctmap.go@973377db: \"Map names for TCP CT tables are retained from Cilium 1.0 naming scheme "
                 "to minimize disruption of ongoing connections during upgrade.\")")
#: each family's reverse-NAT map (SRC_MAP_FAMILY; pkg/maps/lbmap RevNat4MapName, RevNat6MapName)
REV_NAT_MAP_NAME = {"IPv4": "cilium_lb4_reverse_nat", "IPv6": "cilium_lb6_reverse_nat"}
SRC_MAP_PRESSURE = ("cilium/cilium pkg/loadbalancer/maps/pressure_metrics.go: cilium_bpf_map_pressure for the LB hash maps is computed "
                    "only every lb-pressure-metrics-interval (a timer job), so it lags a run; the suite reads the maps themselves")

#: the agent's resolved default-lb-service-ipam and bpf-lb-enable-wildcard-entries (no file: lbipam and true, the agent's
#: defaults that loadbalancer-class-wildcards.txtar runs with; SRC_WILDCARD)
DEFAULT_LB_IPAM_FILE = "/tmp/cilium/config-map/default-lb-service-ipam"
WILDCARD_ENTRIES_FILE = "/tmp/cilium/config-map/bpf-lb-enable-wildcard-entries"
#: the loadBalancerClass values whose addresses get a wildcard entry (cilium_api_v2alpha1 BGPLoadBalancerClass,
#: L2AnnounceLoadBalancerClass; SRC_WILDCARD)
WILDCARD_CLASSES = ("io.cilium/bgp-control-plane", "io.cilium/l2-announcer")


def wildcard_entry(cilium: "str | tuple[int, int]", fe_type: str, lb_class: "str | None", default_ipam: "str | None" = None,
                   enabled: "str | None" = None, local_address: bool = False) -> bool:
    """Whether the agent writes a wildcard service entry (``<address>:0/ANY``) for a frontend address (SRC_WILDCARD):
    Cilium 1.19 or later, a ClusterIP or LoadBalancer frontend, of a class-less Service while default-lb-service-ipam is
    lbipam (``default_ipam`` None: the file is absent, lbipam) or of a Cilium class, wildcard entries not turned off
    (``enabled`` None: absent, true), and not a local node address."""
    minor = cilium if isinstance(cilium, tuple) else tuple(int(x) for x in cilium.lstrip("v").split(".")[:2])
    if minor < (1, 19) or fe_type not in ("ClusterIP", "LoadBalancer") or local_address:
        return False
    if (enabled or "true").strip().lower() != "true":
        return False
    return wildcard_class(lb_class, default_ipam)


def wildcard_class(lb_class: "str | None", default_ipam: "str | None" = None) -> bool:
    """isWildcardClass (SRC_WILDCARD): a class-less Service while default-lb-service-ipam is lbipam, or one of Cilium's own
    classes. Before cilium/cilium#43721 (merged 2026-01, for 1.19) any class passed: pkg/loadbalancer/tests/testdata/
    loadbalancer.txtar@0725568c expects `SVC: ID=0 ADDR=172.16.1.1:0/ANY` for `loadBalancerClass: "test"`; no release has it."""
    if lb_class is None:
        return (default_ipam or "lbipam").strip() == "lbipam"
    return lb_class in WILDCARD_CLASSES


#: Cilium's default size of the load-balancing maps (DefaultLBMapMaxEntries)
LB_MAP_MAX_DEFAULT = 65536
LB_MAP_FILES = ("/tmp/cilium/config-map/bpf-lb-service-map-max", "/tmp/cilium/config-map/bpf-lb-map-max")
#: the reverse-NAT map's own size (0 or no file: bpf-lb-map-max's)
REV_NAT_MAP_FILE = "/tmp/cilium/config-map/bpf-lb-rev-nat-map-max"
#: the stable part of the reconciler's error for a full service map
MAP_FULL_ERROR = "Unable to update element for LB bpf map"
#: the stable part of the reconciler's error for a full reverse-NAT map (written before the service's master entry)
REV_NAT_FULL_ERROR = "Unable to update reverse NAT"
#: which map each error names
MAP_FULL_ERRORS = {MAP_FULL_ERROR: "service map", REV_NAT_FULL_ERROR: "reverse-NAT map"}

MAP_RULES: tuple[FormatRule, ...] = (
    FormatRule("service-map-full", "cilium-dbg shell -- db/show frontends",
               "a frontend that does not fit: Status Error, Error 'Unable to update element for LB bpf map' (service map full) or "
               "'Unable to update reverse NAT' (reverse-NAT map full), whichever fills first", SRC_MAP_FULL),
    FormatRule("reconciler-health", "cilium-dbg shell -- db/show health",
               "loadbalancer-reconciler Degraded after a round with errors, OK again after a clean round: judged over the fill "
               "window, never at one instant", SRC_MAP_HEALTH),
    FormatRule("service-map-size", "cat /tmp/cilium/config-map/bpf-lb-map-max", "the map size the agent resolved (no file: 65536)",
               SRC_MAP_SIZE),
    FormatRule("service-map-wildcard", "cilium-dbg shell -- lb/maps-dump",
               "from 1.19, one `<address>:0/ANY` SLOT=0 entry (ID 0) per address of a class-less ClusterIP or LoadBalancer Service "
               "while default-lb-service-ipam is lbipam (the agent's default) and bpf-lb-enable-wildcard-entries is on", SRC_WILDCARD),
    FormatRule("service-map-pressure", "(metrics)", "cilium_bpf_map_pressure, every lb-pressure-metrics-interval", SRC_MAP_PRESSURE),
)

ALL_RULES = ALL_RULES + MAP_RULES


# -- north-south: LoadBalancer VIPs and externalIPs from outside, loadBalancerSourceRanges ----------------------------

SRC_VIA_NODE = ("cilium/cilium test/l4lb/test.sh@076bbeb3, Cilium's own LB test on kind: the host reaches a VIP through a node "
                "with a route, `ip r a \"${LB_VIP}/32\" via \"$LB_NODE_IP\"`, then `curl -o /dev/null \"${LB_VIP}:80\"`")
SRC_XDP_KIND = ("cilium/cilium test/l4lb/test.sh@076bbeb3 (XDP on kind): \"the request needs to be picked in the host netns by a NAPI "
                "handler. To register the handler, we attach the dummy program.\" (a request the node forwards with XDP_TX leaves "
                "through its veth, whose host end drops it without a program); kind's nodes carry kubernetes-sigs/kind "
                "pkg/cluster/internal/kubeadm/config.go@0033147e `provider-id: \"kind://{{.NodeProvider}}/{{.ClusterName}}/{{.NodeName}}\"`")
#: the spec.providerID prefix of a kind node (SRC_XDP_KIND)
KIND_PROVIDER_PREFIX = "kind://"


def xdp_forward_dropped(acceleration: str, kind_nodes: bool) -> bool:
    """Whether a request from outside that a node forwards to a backend on another node goes unanswered for want of a
    program on the host end of the node's veth: on kind nodes with NodePort XDP acceleration on (SRC_XDP_KIND). The
    kind provider attaches none (it does not touch the runner's devices)."""
    return kind_nodes and acceleration not in ("", "Disabled")


SRC_L2_LIMITS = ("cilium/cilium Documentation/network/l2-announcements.rst@02674019 (Limitations): \"The feature is incompatible "
                 "with the ``externalTrafficPolicy: Local`` on services\"; its \"does not support IPv6/NDP\" holds for 1.18 only: PR "
                 "#39648 \"Add L2 announcement IPv6 support\" (1.19; its commit \"docs/l2_announcements: remove IPv6 limitation\")")
SRC_LBIPAM_FAMILIES = ("cilium/cilium Documentation/network/lb-ipam.rst@be62c427: \"If ``.spec.ipFamilyPolicy`` is set to "
                       "``PreferDualStack``, LB IPAM will attempt to allocate both an IPv4 and IPv6 address if both are enabled on the cluster.\"")
SRC_LBIPAM_SELECTOR = ("cilium/cilium Documentation/network/lb-ipam.rst@be62c427: \"Any service with ``.spec.type=LoadBalancer`` can get "
                       "IPs from any pool as long as the IP Pool's service selector matches the service.\"")
SRC_VIP_OUTSIDE = ("cilium/cilium pkg/loadbalancer/tests/testdata/loadbalancer.txtar: a LoadBalancer Service's ingress IP is a "
                   "frontend of its own (`10.0.0.2:80/TCP LoadBalancer`, source-ranges.txtar@72f3c1af frontends.table), which "
                   "bpf_host's nodeport_lb4 looks up for a packet arriving on the native device (" + SRC_HOST_NODEPORT + ")")
SRC_HEALTH_LB_IP = ("cilium/cilium pkg/loadbalancer/tests/testdata/healthserver.txtar@c39bc9c9: the health server's frontend on the "
                    "VIP, `172.16.1.1:$HEALTHPORT/TCP  LoadBalancer test/echo:healthserver ... 1.1.1.1:$HEALTHPORT/TCP/i` (the "
                    "receiving node's own address: its own health server answers); pkg/defaults/defaults.go@c547745f "
                    "`EnableHealthCheckLoadBalancerIP = false` (Helm nodePort.enableHealthCheckLoadBalancerIP: the kind values set it)")
SRC_SOURCE_RANGES = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53: \"When a ``LoadBalancer`` service "
                     "is configured with ``spec.loadBalancerSourceRanges``, Cilium's eBPF kube-proxy replacement restricts access "
                     "from outside (e.g. external world traffic) to the service to the white-listed CIDRs\"; bpf/lib/nodeport.h "
                     "nodeport_lb4: `if (!lb4_src_range_ok(svc, ip4->saddr)) return DROP_NOT_IN_SRC_RANGE;`")
SRC_SOURCE_RANGES_DENY = ("cilium/cilium pkg/loadbalancer/tests/testdata/source-ranges.txtar@72f3c1af: with "
                          "`service.cilium.io/src-ranges-policy: deny` the VIP's entry is `FLAGS=LoadBalancer+check source-range+deny`; "
                          "bpf/lib/lb.h (the index's newest copy, commit not reported) lb4_src_range_ok: "
                          "`return verdict ^ !!(svc->flags2 & SVC_FLAG_SOURCE_RANGE_DENY);` (in the ranges: dropped)")
SRC_SOURCE_RANGES_INSIDE = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53: \"When accessing the service "
                            "from inside a cluster, the kube-proxy replacement will ignore the field regardless whether it is set.\"")
SRC_DROP_SRC_RANGE = ("cilium/cilium pkg/monitor/api/drop.go@ed49278a: `177: \"Denied by LB src range check\",` (bpf/lib/common.h "
                      "`#define DROP_NOT_IN_SRC_RANGE -177`): the reason `cilium-dbg bpf metrics list` counts the drop under")
#: the drop reason of a packet from a source the ranges refuse (SRC_DROP_SRC_RANGE)
DROP_NOT_IN_SRC_RANGE = "Denied by LB src range check"
#: the annotation that makes loadBalancerSourceRanges a deny list, and its value (SRC_SOURCE_RANGES_DENY)
SRC_RANGES_POLICY = "service.cilium.io/src-ranges-policy"


SRC_SOURCE_RANGES_TYPES = ("cilium/cilium pkg/loadbalancer/service.go (the index's newest copy, commit not reported) "
                           "GetSourceRangesEnabled: `if lbSourceRangeAllTypes { return len(svc.SourceRanges) > 0 }` else `(svcType == "
                           "SVCTypeLoadBalancer || svcType == SVCTypeExternalIPs)`; the ExternalIPs type from PR #44747 \"loadbalancer: "
                           "enforce loadBalancerSourceRanges on ExternalIPs frontends\" (merged 2026-03, after 1.19.0; a backport not found), "
                           "before it `&& svcType == SVCTypeLoadBalancer`; the flag in pkg/loadbalancer/tests/testdata/"
                           "source-ranges-all.txtar@5e9eabb8 `#! --bpf-lb-source-range-all-types=true`. Before the flag (1.18) every "
                           "frontend type is checked: source-ranges.txtar@062e4cdb (no wildcard entries: the 1.18 control plane) "
                           "`SVC: ID=1 ADDR=10.0.0.1:80/TCP SLOT=0 ... FLAGS=ClusterIP+non-routable+check source-range`, which is why "
                           "1.18 dropped such a Service's NodePort requests (issue #42334, affects/v1.18)")
#: the agent's bpf-lb-source-range-all-types as resolved into its config map (absent: false; SRC_SOURCE_RANGES_TYPES)
SOURCE_RANGE_ALL_TYPES_FILE = "/tmp/cilium/config-map/bpf-lb-source-range-all-types"
#: the first minor that checks an ExternalIPs frontend against its Service's ranges (PR #44747), and the first that checks
#: only some frontend types (before it, every type: SRC_SOURCE_RANGES_TYPES)
SOURCE_RANGES_EXTERNAL_IP_FROM = (1, 20)
SOURCE_RANGES_TYPED_FROM = (1, 19)
#: the frontend types the rule knows (the suites' names; ExternalIP is Cilium's ExternalIPs type)
SOURCE_RANGES_FRONTENDS = ("LoadBalancer", "NodePort", "ExternalIP", "ClusterIP", "HostPort", "LocalRedirect")


def source_ranges_checked(frontend: str, cilium_version: str = "", all_types: bool = False) -> bool | None:
    """Whether a Service's loadBalancerSourceRanges are checked on its ``frontend`` (one of SOURCE_RANGES_FRONTENDS) from
    outside (SRC_SOURCE_RANGES_TYPES): the VIP always; every type with bpf-lb-source-range-all-types, and every type before
    1.19; else an ExternalIPs address from 1.20 and no other type. None where the release's behaviour is not known (the
    ExternalIPs check on 1.19): not judged. An unknown version ("") is taken as the newest."""
    if frontend not in SOURCE_RANGES_FRONTENDS:
        raise NoRule(f"no sourced rule for loadBalancerSourceRanges on a {frontend} frontend")
    if frontend == "LoadBalancer" or all_types:
        return True
    minor = (99, 0)
    if cilium_version:
        from ..core.versions import Version

        v = Version.parse(cilium_version)
        minor = (v.major, v.minor)
    if minor < SOURCE_RANGES_TYPED_FROM:
        return True
    if frontend == "ExternalIP":
        return True if minor >= SOURCE_RANGES_EXTERNAL_IP_FROM else None
    return False


def source_ranges_applied(frontend: str, cilium_version: str = "", all_types: bool = False) -> bool:
    """What the fake's datapath does on ``frontend`` (source_ranges_checked), where the release's behaviour is not known
    following the code before the change: an ExternalIPs address unchecked before 1.20, a NodePort unchecked."""
    return bool(source_ranges_checked(frontend, cilium_version, all_types))


def source_ranges(ranges: "list[str]") -> "list[ipaddress.IPv4Network | ipaddress.IPv6Network]":
    """A Service's loadBalancerSourceRanges as the control plane keeps them: parsed as prefixes, an unparsable one ignored
    (a bare address is a host prefix)."""
    nets = []
    for r in ranges:
        try:
            nets.append(ipaddress.ip_network(r.strip(), strict=False))
        except ValueError:
            continue
    return nets


def source_range_allows(source: str, ranges: "list[str]", deny: bool) -> bool:
    """Whether a packet from ``source`` from outside passes a VIP's source-range check: no ranges (none that parse:
    :func:`source_ranges`), no check; else in one of them (an allow list, SRC_SOURCE_RANGES), or not in any (a deny list,
    SRC_SOURCE_RANGES_DENY). A range of another family than ``source`` never holds it."""
    nets = source_ranges(ranges)
    if not nets:
        return True
    addr = ipaddress.ip_address(source)
    inside = any(addr.version == n.version and addr in n for n in nets)
    return inside != deny


NORTH_SOUTH_PLANE_RULES: tuple[PlaneRule, ...] = (
    PlaneRule("outside", "connect", "LoadBalancer", ANY, ANY, Plane.PER_PACKET,
              "a packet for a VIP routed to a node arrives on its native device: bpf_host looks the VIP up as a frontend",
              SRC_VIP_OUTSIDE + "; " + SRC_VIA_NODE),
    PlaneRule("outside", "connect", "ExternalIP", ANY, ANY, Plane.PER_PACKET,
              "a packet for an externalIPs address routed to a node arrives on its native device: bpf_host looks it up as a frontend",
              SRC_HOST_NODEPORT + "; " + SRC_VIA_NODE),
)
PLANE_RULES = PLANE_RULES + NORTH_SOUTH_PLANE_RULES
ALL_RULES = ALL_RULES + NORTH_SOUTH_PLANE_RULES


# -- trafficDistribution (service topology) ---------------------------------------------------------------------------

SRC_TOPOLOGY_ENABLE = ("cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@f3e6eb53 (Traffic Distribution and "
                       "Topology Aware Hints): \"To enable the feature, set ``loadBalancer.serviceTopology=true``.\" (the agent's "
                       "enable-service-topology, read back from its config map)")
SRC_PREFER_SAME_NODE = ("cilium/cilium pkg/loadbalancer/tests/testdata/prefer-same-node.txtar@38292dff (--enable-service-topology): "
                        "\"With PreferSameNode, only the local-node backend should be selected.\" and \"Since no local backend "
                        "exists we fall back to all backends (safeguard: no candidates → use all).\"")
SRC_PREFER_CLOSE = ("cilium/cilium pkg/loadbalancer/tests/testdata/topology-aware.txtar@15a74346: the node in zone foo selects only "
                    "the backend whose hints name foo (\"we should only select backen 10.244.1.1\"), and `trafficDistribution` "
                    "\"results in identical behavior to topology-mode\"; the hints: kubernetes staging/src/k8s.io/endpointslice/"
                    "trafficdist/trafficdist.go@90c8f9ae preferCloseHeuristic, `forZones = []discoveryv1.ForZone{{Name: *endpoint.Zone}}`")
SRC_PREFER_CLOSE_FALLBACK = ("cilium/cilium pkg/loadbalancer/tests/testdata/prefer-same-zone-fallback.txtar@78946d2b: \"when zone "
                             "backends are incompatible, we should fall back to out-of-zone backends\" (not judged: the suite's client "
                             "zone always has a backend)")
SRC_PREFER_SAME_SINCE = ("cilium/cilium PR #44771 \"traffic distribution: support PreferSameZone and PreferSameNode\" (merged after "
                         "1.19.0, no backport found; release note \"Add support for `PreferSameZone` and `PreferSameNode` traffic "
                         "distribution\"); before it pkg/loadbalancer/reflectors/conversions.go@bb5d8694 isTopologyAware: "
                         "`getAnnotationTopologyAwareHints(svc) || (... == corev1.ServiceTrafficDistributionPreferClose)`")
#: the first minor whose agents honour PreferSameNode and PreferSameZone (SRC_PREFER_SAME_SINCE); before, such a Service
#: is not topology-aware and spreads over every backend
PREFER_SAME_FROM = (1, 20)


def prefer_same_honoured(cilium_version: str) -> bool:
    """Whether agents of ``cilium_version`` honour PreferSameNode / PreferSameZone (SRC_PREFER_SAME_SINCE); an unknown
    version ("") is taken as the newest."""
    if not cilium_version:
        return True
    from ..core.versions import Version

    v = Version.parse(cilium_version)
    return (v.major, v.minor) >= PREFER_SAME_FROM


#: the node label a zone is read from, and that kind's nodes carry (clusters/kind/*.yaml)
ZONE_LABEL = "topology.kubernetes.io/zone"
#: the agent's enable-service-topology, in its config map (SRC_TOPOLOGY_ENABLE)
SERVICE_TOPOLOGY_FILE = "/tmp/cilium/config-map/enable-service-topology"


def topology_backends(distribution: str | None, backends: "list[Any]", node: str, zone: str | None,
                      cilium_version: str = "") -> "list[Any]":
    """The backends an agent of ``cilium_version`` on ``node`` (in ``zone``) selects for a frontend under service topology:
    PreferSameNode, those on ``node``, all when none is (SRC_PREFER_SAME_NODE); PreferClose (and PreferSameZone), those
    whose hints name ``zone``, all when none does (SRC_PREFER_CLOSE, SRC_PREFER_CLOSE_FALLBACK); anything else, all.
    PreferSameNode and PreferSameZone only from 1.20 (SRC_PREFER_SAME_SINCE): before, all. ``backends``: objects with
    ``.node`` and ``.zones`` (the zones of their hints)."""
    if distribution in ("PreferSameNode", "PreferSameZone") and not prefer_same_honoured(cilium_version):
        return list(backends)
    if distribution == "PreferSameNode":
        mine = [b for b in backends if b.node == node]
    elif distribution in ("PreferClose", "PreferSameZone"):
        mine = [b for b in backends if zone is not None and zone in (b.zones or ())]
    else:
        return list(backends)
    return mine or list(backends)


# -- where a pod's device carries the endpoint's program ----------------------------------------------------------------

SRC_NETKIT_ATTACH = ("cilium/cilium pkg/datapath/loader/netkit.go@21d690e1 parentToNetkitType: \"tc ingress on a veth host device of a "
                     "Pod is the logical egress direction. Thus this must get attached to the xmit of the netkit peer\" `case "
                     "netlink.HANDLE_MIN_INGRESS: return ebpf.AttachNetkitPeer`; bpftool names it (tools/bpf/bpftool/net.c, the "
                     "netkit series of Linux 6.7): `[BPF_NETKIT_PEER] = \"netkit/peer\"`")
SRC_TCX_ATTACH = ("cilium/cilium pkg/datapath/loader/tcx.go@0a25351f parentToAttachType: `case netlink.HANDLE_MIN_INGRESS: return "
                  "ebpf.AttachTCXIngress` (a bpf_link, no tc filter); bpftool names it (tools/bpf/bpftool/net.c) `[BPF_TCX_INGRESS] "
                  "= \"tcx/ingress\"`; without tcx the program is a tc filter under clsact ingress (bpftool `clsact/ingress`)")


def endpoint_attachment(attach_mode: str, datapath_mode: str = "") -> tuple[str, bool]:
    """Where a pod's host-side device shows cil_from_container in ``bpftool net show`` and whether ``tc filter show
    ... ingress`` lists a filter for it: netkit devices (datapath mode netkit / netkit-l2), ``netkit/peer`` and no tc
    filter (SRC_NETKIT_ATTACH); veth with tcx, ``tcx/ingress`` and none; veth with legacy tc, ``clsact/ingress`` and a
    filter (SRC_TCX_ATTACH)."""
    if datapath_mode.startswith("netkit"):
        return "netkit/peer", False
    if attach_mode == "tcx":
        return "tcx/ingress", False
    return "clsact/ingress", True


# -- the per-packet affinity map -----------------------------------------------------------------------------------------

SRC_AFFINITY_MAP = ("cilium/cilium bpf/lib/lb.h (the index's newest copy, commit not reported): `struct lb4_affinity_key { union "
                    "lb4_affinity_client_id client_id; __u16 rev_nat_id; __u8 netns_cookie:1, reserved:7; __u8 pad1; __u32 pad2; } "
                    "__packed;` (client_id: `__u32 client_ip; __net_cookie client_cookie;`, lb6: `union v6addr client_ip`), `struct "
                    "lb_affinity_val { __u64 last_used; __u32 backend_id; __u32 pad; }`; lb4_local: `.client_ip = tuple->saddr` ... "
                    "`lb4_update_affinity_by_addr(svc, &client_id, backend_id)` (netns_cookie 0, rev_nat_id the frontend's, in network "
                    "byte order: SRC_REV_NAT_ORDER); "
                    "pinned at pkg/bpf/bpffs_linux.go@e0cc421a MapPath `filepath.Join(TCGlobalsPath(), name)` (<bpffs>/tc/globals)")
SRC_REV_NAT_ORDER = ("cilium/cilium bpf/lib/lb.h@0040d667 __lb6_update_affinity (lb4 the same): `.rev_nat_id = svc->rev_nat_index,`; "
                     "the agent stores that index in network byte order: pkg/maps/lbmap/ipv4.go@00c22b1c Service4Value.ToNetwork "
                     "`n.RevNat = byteorder.HostToNetwork16(n.RevNat)`, pkg/maps/lbmap/affinity.go@08f05825 \"rev_nat_index is "
                     "stored in network byte order\"")
SRC_BPFTOOL_DUMP = ("libbpf/bpftool src/map.c@b6ffbf25 print_entry_json: `jsonw_name(json_wtr, \"key\"); print_hex_data_json(key, "
                    "info->key_size);` then \"value\" the same (and \"formatted\" only with BTF); bpftool v7.1.0 here prints "
                    "`[{\"key\":[\"0xac\",...],\"value\":[...]}]` (tests/data/bpftool/PROVENANCE.md)")
#: where each family's per-packet affinity map is pinned (SRC_AFFINITY_MAP); the kernel keeps only 15 characters of a map's
#: name (cilium_lb4_affi), so it is read by its pin, not by name
AFFINITY_MAP_PATH = {"IPv4": "/sys/fs/bpf/tc/globals/cilium_lb4_affinity", "IPv6": "/sys/fs/bpf/tc/globals/cilium_lb6_affinity"}


# -- per-Service annotations: the forwarding mode and the nodes a Service is exposed on --------------------------------

SRC_FORWARDING_MODE_ANNOTATION = (
    "cilium/cilium pkg/loadbalancer/tests/testdata/svc-forwarding-mode-annotation.txtar@9e67848e (`#! --lb-test-fault-probability=0.0 "
    "--bpf-lb-mode-annotation`): after `service.cilium.io/forwarding-mode: dsr` the Service's entries read `FLAGS=NodePort+non-routable+dsr` "
    "(SNAT before); pkg/loadbalancer/reconciler/bpf_reconciler.go (the index's copy, commit not reported): `if ops.cfg.LBModeAnnotation && "
    "svc.ForwardingMode != loadbalancer.SVCForwardingModeUndef { forwardingMode = svc.ForwardingMode }`")
#: the per-Service annotation and the agent option that lets it count (Helm bpf.lbModeAnnotation; SRC_FORWARDING_MODE_ANNOTATION)
FORWARDING_MODE_ANNOTATION = "service.cilium.io/forwarding-mode"
MODE_ANNOTATION_FILE = "/tmp/cilium/config-map/bpf-lb-mode-annotation"


def service_forwarding_mode(global_mode: str, annotation_enabled: bool, value: str | None) -> str:
    """The NodePort mode a Service is forwarded in (SNAT | DSR | the agent's own): its ``service.cilium.io/forwarding-mode``
    (dsr or snat) where the agents resolve bpf-lb-mode-annotation true, else the agent's mode (SRC_FORWARDING_MODE_ANNOTATION)."""
    v = (value or "").strip().lower()
    if annotation_enabled and v in ("dsr", "snat"):
        return v.upper()
    return global_mode


SRC_NODE_EXPOSURE = (
    "cilium/cilium pkg/loadbalancer/reflectors/conversions.go@bb5d8694 CheckServiceNodeExposure: `annotations[annotation.ServiceNodeSelectorExposure]` "
    "... `if selector.Matches(k8sLabels.Set(localNode.Labels)) { return true, nil }` \"prioritize any existing node-selector annotation - and "
    "return in any case\" `return false, nil`; then `annotations[annotation.ServiceNodeExposure]`: `if !nodeLabelExists || nodeLabelValue != "
    "serviceAnnotationValue { return false, nil }`; svc-node-exposure.txtar@062e4cdb (no frontend while the node's label differs); in the "
    "1.18 control plane by PR #39551")
#: the per-Service annotations that limit the nodes whose agents install it (SRC_NODE_EXPOSURE)
NODE_EXPOSURE = "service.cilium.io/node"
NODE_SELECTOR_EXPOSURE = "service.cilium.io/node-selector"


def label_selector_matches(selector: str, labels: "dict[str, str]") -> bool:
    """A Kubernetes label selector (k8s.io/apimachinery labels.Parse: ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``,
    ``k notin (a,b)``, joined by commas) against ``labels``. Anything else is a ValueError."""
    import re

    term = re.compile(r"\s*(?:(!)?([\w./-]+)\s*$|([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$|([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)\s*$)")
    for part in re.split(r",(?![^()]*\))", selector.strip()) if selector.strip() else []:
        m = term.fullmatch(part)
        if m is None:
            raise ValueError(f"not a label selector term: {part!r}")
        if m.group(2):
            ok = (m.group(2) in labels) != bool(m.group(1))
        elif m.group(3):
            equal = labels.get(m.group(3)) == m.group(5)
            ok = equal if m.group(4) != "!=" else not equal
        else:
            values = {v.strip() for v in m.group(8).split(",")}
            inside = m.group(6) in labels and labels[m.group(6)] in values
            ok = inside if m.group(7) == "in" else not inside
        if not ok:
            return False
    return True


def service_exposed_on(annotations: "dict[str, str]", node_labels: "dict[str, str]") -> bool:
    """Whether the agent on a node with ``node_labels`` installs a Service with ``annotations`` (SRC_NODE_EXPOSURE): the
    node-selector annotation decides alone when present; else service.cilium.io/node must equal the node's label of that
    name; else every node."""
    if NODE_SELECTOR_EXPOSURE in annotations:
        return label_selector_matches(annotations[NODE_SELECTOR_EXPOSURE], node_labels)
    if NODE_EXPOSURE in annotations:
        return node_labels.get(NODE_EXPOSURE) == annotations[NODE_EXPOSURE]
    return True


# -- several protocols on one port, and the wildcard drop of what a VIP does not serve -----------------------------------

SRC_MULTI_PROTOCOL = ("cilium/cilium pkg/loadbalancer/reconciler/bpf_reconciler.go (the index's copy, commit not reported) updateFrontend: "
                      "`svcKey = maps.NewService4Key(ip, fe.Address.Port(), proto, fe.Address.Scope(), 0)` -- the protocol is part of "
                      "the service key, so 53/TCP and 53/UDP of one Service are two frontends with their own backends; the 1.19 notes "
                      "remove `--bpf-lb-proto-diff` (clusters/removed-options.yaml): told apart always")
SRC_WILDCARD_DROP = ("cilium/cilium PR #40684 \"bpf: Introduce wildcard service entries to drop traffic towards unknown protocol/port "
                     "combinations\" (1.19), bpf/lib/nodeport.h nodeport_lb4: `if (key.dport == LB_SVC_WILDCARD_DPORT) { "
                     "ctx_set_xfer(ctx, XFER_PKT_NO_SVC); return send_drop_notify_error(ctx, src_sec_identity, DROP_NO_SERVICE,` "
                     "(\"to avoid it being punted back to the network and re-delivered to is in a loop\"); which addresses get the "
                     "entry: SRC_WILDCARD")
#: the drop reason the wildcard drop counts under (SRC_WILDCARD_DROP: DROP_NO_SERVICE, pkg/monitor/api/drop.go 158)
DROP_NO_SERVICE_REASON = "Service backend not found"


# -- ICMP errors about a SNATed NodePort flow ----------------------------------------------------------------------------

SRC_ICMP_ERROR_REVNAT = (
    "cilium/cilium bpf/tests/icmp_error_revnat.c@1f40e238: \"Pod sends back ICMP Frag Needed error about the SNATed packet\", "
    "\"snat_v4_rev_nat() should reverse the NAT in both outer and inner (embedded) packets\", \"Result: ICMP error should be addressed to "
    "endpoint (10.0.10.1) with embedded packet showing original src (10.0.10.1:3030)\"; bpf/lib/nat.h (the index's copies) "
    "snat_v4_rev_nat_handle_icmp_frag_needed, reached for `ICMP_DEST_UNREACH` only `if (icmphdr.code != ICMP_FRAG_NEEDED) return "
    "DROP_UNKNOWN_ICMP_CODE;`")
#: the ICMP error the reverse NAT carries back (SRC_ICMP_ERROR_REVNAT): destination unreachable, fragmentation needed
ICMP_FRAG_NEEDED = (3, 4)


def icmp_error_judged(nodeport_mode: str, family: str) -> str:
    """Why the ICMP-error reverse NAT is not judged on this cluster ("" when it is): it is SNAT's (a DSR request is not
    source-NATed; Hybrid's UDP is SNATed), and only the IPv4 path was read (SRC_ICMP_ERROR_REVNAT)."""
    if family != "IPv4":
        return "only the IPv4 reverse NAT of an ICMP error was read in Cilium's source (snat_v4_rev_nat); IPv6's is not judged"
    if nodeport_mode == "DSR":
        return "the agents forward NodePort requests in DSR: the request is not source-NATed, so no reverse NAT carries the error"
    return ""


# -- Local Redirect Policy ---------------------------------------------------------------------------------------------

SRC_LRP = ("cilium/cilium Documentation/network/kubernetes/local-redirect-policy.rst@05f1440f (ServiceMatcher): \"When a policy of this "
           "type is applied, the existing service entry created by Cilium's eBPF kube-proxy replacement will be replaced with a new "
           "service entry of type ``LocalRedirect``. This entry may only have node-local backend pods.\"; \"The namespace of backend "
           "pod(s) need to match with that of the policy.\"; the agent's enable-local-redirect-policy")
#: the agent's enable-local-redirect-policy as resolved into its config map (absent: off, the default; SRC_LRP)
LRP_FILE = "/tmp/cilium/config-map/enable-local-redirect-policy"


def lrp_backends(backends: "list[Any]", node: str) -> "list[Any]":
    """The backends a Service redirected by a ServiceMatcher policy has on ``node`` (SRC_LRP): the policy's selected pods on
    that node only. ``backends``: the policy's selected pods (objects with ``.node``)."""
    return [b for b in backends if b.node == node]
