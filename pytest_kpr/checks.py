"""The datapath properties as pure judgements over observations, shared by the suites and by the
real-kernel tests that prove the judgement against a real kernel. Each returns the list of problems
(empty = the property holds), worded so that a failure names the property and shows what was seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from .cluster.facts import ClusterFacts
    from .rules.datapath import NoBackendRule
    from .parse import RuleDump, Service, Socket
    from .parse.health import HealthStatus


@dataclass(frozen=True)
class SocketLBObservation:
    service: str  # ClusterIP:port the client connected to
    client: str  # client ip:port (the holder's socket)
    app_peer: str  # what getpeername() returned to the application
    socket_peer: str  # the kernel socket's peer (ss / netstat Foreign Address)
    backends: frozenset[str]  # ip:port of every backend
    service_translations: int  # conntrack entries that translate the service for this client (Cilium: TCP SVC entries)


def socket_lb_problems(obs: SocketLBObservation, coverage: str = "Full") -> list[str]:
    """Socket LB: the application sees the service, the kernel socket the backend, and no per-packet
    service translation exists. With ``Hostns-only`` coverage a pod's connection takes the per-packet
    path instead, and the expectations flip."""
    p: list[str] = []
    if coverage.lower().startswith("hostns"):
        if obs.socket_peer != obs.service:
            p.append(f"socket LB is hostns-only, yet the pod's socket peer is {obs.socket_peer}, not the service {obs.service}")
        if obs.service_translations == 0:
            p.append(f"socket LB is hostns-only, yet no per-packet service translation exists for {obs.client}")
        return p
    if obs.app_peer != obs.service:
        p.append(f"getpeername() returned {obs.app_peer}, not the service address {obs.service}: the reverse translation is missing")
    if obs.socket_peer == obs.service:
        p.append(f"the socket's peer is the service address {obs.service}: the destination was not rewritten at connect() (per-packet NAT, not socket LB)")
    elif obs.socket_peer not in obs.backends:
        p.append(f"the socket's peer {obs.socket_peer} is none of the backends {sorted(obs.backends)}")
    if obs.app_peer == obs.socket_peer:
        p.append(f"getpeername() equals the socket peer ({obs.app_peer}): no disparity, so no socket LB")
    if obs.service_translations:
        p.append(f"{obs.service_translations} service translation entries exist for {obs.client}: per-packet service NAT, not socket LB")
    return p


# -- no backend -------------------------------------------------------------------------------------

#: the bound for "at once": a rejection takes well under a millisecond on the node (measured in the
#: real-kernel tier: scripts/bench_probes.py), a drop takes the client's whole timeout (seconds)
FAST_S = 1.0


@dataclass(frozen=True)
class NoBackendAttempt:
    """One client's attempt on a backendless service, as observed."""

    path: str  # e.g. "pod connect() to ClusterIP 10.96.0.12:80"
    tool: str  # curl | connect | raw
    verdict: str  # curl: its exit code as text; probes: their verdict
    seconds: float
    errno: str | None = None
    icmp: tuple[int, int] | None = None


def no_backend_problems(a: NoBackendAttempt, rule: "NoBackendRule", response: str) -> list[str]:
    """What is wrong with an attempt, given the sourced rule for its plane (pytest_kpr.rules.datapath)."""
    where = f"no backend ({a.path}; {rule.plane} plane, ServiceNoBackendResponse={response})"
    want_fast = f"at once (under {FAST_S:g}s)" if rule.fast else "at its limit"
    why = f"{rule.why} [{rule.source.split(';')[0]}]"
    p: list[str] = []
    if a.tool == "curl":
        if a.verdict != str(rule.curl_exit):
            meaning = {"28": "it timed out: the traffic was dropped", "7": "it could not connect"}.get(a.verdict, "")
            p.append(f"{where}: curl exited {a.verdict} after {a.seconds:.2f}s{' (' + meaning + ')' if meaning else ''}; "
                     f"expected exit {rule.curl_exit} {want_fast}: {why}")
    elif a.tool == "connect":
        if a.verdict not in rule.connect:
            p.append(f"{where}: connect() gave {a.verdict}{' (' + a.errno + ')' if a.errno else ''} after {a.seconds:.2f}s; "
                     f"expected {' or '.join(sorted(rule.connect))} {want_fast}: {why}")
        elif rule.errnos and a.errno not in rule.errnos:
            note = f" ({rule.errno_note})" if rule.errno_note and a.errno == "EPERM" else ""
            p.append(f"{where}: connect() failed with {a.errno}, expected {' or '.join(sorted(rule.errnos))}{note}: {why}")
    elif a.tool == "raw":
        if rule.raw is None:
            p.append(f"{where}: a raw packet cannot reach the {rule.plane} plane; this attempt was misclassified")
        elif a.verdict != rule.raw:
            p.append(f"{where}: a raw SYN got {a.verdict}{' ICMP %d/%d' % a.icmp if a.icmp else ''} after {a.seconds:.2f}s; "
                     f"expected {rule.raw}{' ICMP %d/%d' % rule.icmp if rule.icmp else ''}: {why}")
        elif rule.icmp is not None and a.icmp != rule.icmp:
            got = "no ICMP type/code" if a.icmp is None else "ICMP %d/%d" % a.icmp
            p.append(f"{where}: the reject answer is {got}, expected ICMP {rule.icmp[0]}/{rule.icmp[1]} "
                     f"(destination unreachable, port unreachable): {why}")
    else:
        raise ValueError(f"unknown tool {a.tool!r}")
    if not p and rule.fast and a.seconds >= FAST_S:
        p.append(f"{where}: {a.tool} failed as expected ({a.verdict}) but took {a.seconds:.2f}s; the {rule.plane} plane answers at once "
                 f"(bound {FAST_S:g}s)")
    return p


# -- iptables: no kube-proxy rules ------------------------------------------------------------------

#: kube-proxy's own chains in iptables mode (kubernetes pkg/proxy/iptables/proxier.go: KUBE-SERVICES,
#: KUBE-NODEPORTS, KUBE-EXTERNAL-SERVICES, KUBE-PROXY-CANARY, KUBE-PROXY-FIREWALL, and the per-service
#: KUBE-SVC-/KUBE-SEP-/KUBE-EXT-/KUBE-SVL-/KUBE-FW- chains). kubelet's KUBE-FIREWALL and
#: KUBE-KUBELET-CANARY are not kube-proxy's and do not count.
KUBE_PROXY_MARKS = ("KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-EXTERNAL-SERVICES", "KUBE-PROXY-CANARY", "KUBE-PROXY-FIREWALL",
                    "KUBE-SVC-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-SVL-", "KUBE-FW-")
#: kube-proxy's table in nftables mode (kubernetes pkg/proxy/nftables/proxier.go kubeProxyTable)
KUBE_PROXY_NFT_TABLE = "kube-proxy"
#: the views a node's rules are read in; each can hide the others' rules
RULE_VIEWS = ("iptables-nft", "iptables-legacy", "nft")


def rule_view_problems(dumps: "Mapping[str, Mapping[str, RuleDump | None]]") -> list[str]:
    """Control for the emptiness checks: every view must have been read on every node (a view whose
    tool is missing proves nothing), and some view must show tables at all."""
    p: list[str] = []
    for node, views in sorted(dumps.items()):
        missing = [v for v in RULE_VIEWS if views.get(v) is None]
        if missing:
            p.append(f"{node}: the {', '.join(missing)} view could not be read (tool missing or failed); its rules were not checked")
        if not any(d is not None and d.tables for d in views.values()):
            p.append(f"{node}: no view shows any table: the emptiness checks would be blind")
    return p


def kube_proxy_rule_problems(dumps: "Mapping[str, Mapping[str, RuleDump | None]]") -> list[str]:
    p: list[str] = []
    for node, views in sorted(dumps.items()):
        for view, d in sorted(views.items()):
            if d is None:
                continue
            marks = {m.rstrip("-"): n for m in KUBE_PROXY_MARKS if (n := d.count(m))}
            tables = [t for t in d.tables if t.split()[-1] == KUBE_PROXY_NFT_TABLE]
            if marks:
                p.append(f"{node} ({view}): kube-proxy chains {marks}")
            if tables:
                p.append(f"{node} ({view}): kube-proxy's nftables table {tables} with {sum(1 for c in d.chains if c.split('/')[0] in tables)} chains")
    return p


def rule_line_problems(dumps: "Mapping[str, Mapping[str, RuleDump | None]]", token: str, what: str) -> list[str]:
    """Lines naming ``token`` (an IP or a port, as a whole token) in any view of any node."""
    p: list[str] = []
    for node, views in sorted(dumps.items()):
        for view, d in sorted(views.items()):
            if d is not None and (n := d.count_token(token)):
                sample = [line for line in d.lines if token in line][:2]
                p.append(f"{node} ({view}): {n} lines name {what} {token}, e.g. {sample}")
    return p


# -- NodePort -----------------------------------------------------------------------------------------

def nodeport_listener_problems(listeners: "Sequence[Socket]", port: int) -> list[str]:
    mine = [s.local for s in listeners if s.local_port == port]
    return [f"{len(mine)} sockets listen on :{port} on the node ({mine}); the answer must come from BPF, not a process"] if mine else []


def nodeport_frontend_problems(services: "Sequence[Service]", port: int) -> list[str]:
    """The agent must list the wildcard ``0.0.0.0:<port>`` frontend of type NodePort (that port, not another)."""
    hits = [s for s in services if s.frontend.ip == "0.0.0.0" and s.frontend.port == port and s.type == "NodePort"]
    if hits:
        return []
    near = sorted(str(s.frontend) for s in services if s.type == "NodePort")
    return [f"the agent lists no 0.0.0.0:{port} NodePort frontend (NodePort frontends: {near})"]


# -- backend slots ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SlotView:
    node: str
    service_id: int | None  # the slot-0 entry's RevNAT ID
    backends: tuple[str, ...]  # ip:port in slot order

    def describe(self) -> str:
        return f"{self.node}: {len(self.backends)} slots {list(self.backends)}"


@dataclass(frozen=True)
class ConvergenceTiming:
    """When each new backend was first seen, in seconds since the scale: in the EndpointSlice (ready) and in
    each agent's BPF LB slots, polled every ``resolution`` seconds (so each time is late by at most that)."""

    endpointslice: dict[str, float]
    agents: dict[str, dict[str, float]]
    resolution: float

    def lag(self) -> dict[str, float | None]:
        """Per agent: when it held every new backend, minus when the EndpointSlice did (None: it never did)."""
        if not self.endpointslice:
            return {node: None for node in self.agents}
        es_done = max(self.endpointslice.values())
        out: dict[str, float | None] = {}
        for node, seen in self.agents.items():
            out[node] = round(max(seen.values()) - es_done, 3) if set(self.endpointslice) <= set(seen) else None
        return out

    def slowest(self) -> tuple[str, float | None] | None:
        """The agent that took longest (one that never caught up counts as slowest)."""
        lag = self.lag()
        if not lag:
            return None
        return max(lag.items(), key=lambda kv: float("inf") if kv[1] is None else kv[1])

    def to_json(self) -> dict[str, Any]:
        slowest = self.slowest()
        return {"resolution_seconds": self.resolution, "endpointslice": self.endpointslice, "agents": self.agents,
                "lag_seconds": self.lag(), "slowest": {"node": slowest[0], "lag_seconds": slowest[1]} if slowest else None}


@dataclass(frozen=True)
class Convergence:
    replicas: int
    ready_pods: int
    endpointslice: frozenset[str]
    slots: tuple[SlotView, ...]
    timing: ConvergenceTiming | None = None  # set by Lab.scale_web

    @property
    def converged(self) -> bool:
        return not convergence_problems(self)

    def describe(self) -> str:
        return (f"{self.ready_pods}/{self.replicas} pods Ready, EndpointSlice ready {sorted(self.endpointslice)}; "
                + "; ".join(v.describe() for v in self.slots))


def convergence_problems(c: Convergence) -> list[str]:
    """Every agent's slots hold exactly the EndpointSlice's ready addresses, once each, for the wanted replicas."""
    p: list[str] = []
    if c.ready_pods != c.replicas:
        p.append(f"{c.ready_pods}/{c.replicas} pods Ready")
    if len(c.endpointslice) != c.replicas:
        p.append(f"the EndpointSlice has {len(c.endpointslice)} ready addresses, not {c.replicas}")
    if not c.slots:
        p.append("no agent's slots were read")
    for v in c.slots:
        have = set(v.backends)
        missing, extra = sorted(c.endpointslice - have), sorted(have - c.endpointslice)
        dupes = sorted({b for b in v.backends if v.backends.count(b) > 1})
        if v.service_id is None:
            p.append(f"{v.node}: no slot-0 entry for the service")
        if missing:
            p.append(f"{v.node}: slots lack {missing}")
        if extra:
            p.append(f"{v.node}: slots still hold {extra}, which the EndpointSlice no longer has")
        if dupes:
            p.append(f"{v.node}: {dupes} fill more than one slot")
    return p


# -- socket LB: the other views of the holder's connection --------------------------------------------

def conntrack_out_problems(backend: str, socket_peer: str, backends: "frozenset[str]", coverage: str) -> list[str]:
    p: list[str] = []
    if coverage.lower().startswith("full") and backend != socket_peer:
        p.append(f"the conntrack OUT entry goes to {backend}, the socket to {socket_peer}")
    if backend not in backends:
        p.append(f"the conntrack OUT entry {backend} is not a backend {sorted(backends)}")
    return p


def backend_peer_problems(client: str, peers: "Sequence[str]", backend_pod: str) -> list[str]:
    """The backend must see the client's own pod address (a node address would mean SNAT)."""
    return [] if client in peers else [f"the backend {backend_pod} sees {sorted(peers)}, not the holder's pod address {client} (a node IP would mean SNAT)"]


def program_problems(prog: "Mapping[str, object]", attach_mode: str) -> list[str]:
    """The holder's host-side veth runs cil_from_container, attached the way the agent says (tcx: no tc
    filter lines; legacy tc: a clsact filter), and the endpoint has its policy map."""
    expected = {"tcx": ("tcx/ingress", lambda n: n == 0, "none"), "tc": ("clsact/ingress", lambda n: n >= 1, "at least one")}
    attach, lines_ok, want_lines = expected.get(attach_mode, expected["tc"])
    p: list[str] = []
    if prog.get("program") != "cil_from_container":
        p.append(f"{prog.get('interface')} runs {prog.get('program')!r}, not cil_from_container")
    if prog.get("attach") != attach:
        p.append(f"attach mode {attach_mode} expects {attach} on {prog.get('interface')}, found {prog.get('attach')}")
    if not lines_ok(int(prog.get("tc_filter_lines") or 0)):  # type: ignore[call-overload]
        p.append(f"tc shows {prog.get('tc_filter_lines')} filter lines with {attach_mode} attachment (expected {want_lines})")
    if not prog.get("policy_map"):
        p.append(f"no per-endpoint policy map for endpoint {prog.get('endpoint_id')} in the agent's map list")
    return p


def attach_mode_kernel_problems(attach_mode: str, node_kernels: "Mapping[str, str]", tcx_from: str) -> list[str]:
    """The agent's reported attach mode must be possible on every node's kernel: tcx (a bpf_link on the device) exists
    from ``tcx_from`` (clusters/kernels.yaml, Linux 6.6); before, programs attach as legacy tc. On a tcx kernel either
    mode is possible (Cilium's bpf.enableTCX decides), so only tcx on an older kernel is a contradiction."""
    from .rules.kernels import kernel_tuple

    if attach_mode != "tcx":
        return []
    want = kernel_tuple(tcx_from) or ()
    return [f"the agent reports tcx, but node {node} runs kernel {kernel}, which has no tcx (clusters/kernels.yaml: tcx from {tcx_from})"
            for node, kernel in sorted(node_kernels.items()) if (kernel_tuple(kernel) or want) < want]


#: Cilium's documented way off kube-proxy for an existing installation (Documentation/network/kubernetes/kubeproxy-free.rst,
#: "For existing installations with kube-proxy running as a DaemonSet, remove it by using the following commands")
KUBE_PROXY_REMOVAL = ("kubectl -n kube-system delete ds kube-proxy; kubectl -n kube-system delete cm kube-proxy; "
                      "then on each node: iptables-save | grep -v KUBE | iptables-restore")


def runs_kube_proxy(daemonset: "Mapping[str, Any]") -> bool:
    """A DaemonSet that runs kube-proxy: kubeadm's and kind's label (k8s-app=kube-proxy), or, as distributions may
    ship it under other names and labels, a container of kube-proxy's image or command."""
    if ((daemonset.get("metadata") or {}).get("labels") or {}).get("k8s-app") == "kube-proxy":
        return True
    spec = (((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {})
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        repo = str(c.get("image") or "").split("@", 1)[0].rsplit(":", 1)[0]
        cmd = [str(x) for x in c.get("command") or []][:1]
        if repo.rsplit("/", 1)[-1] == "kube-proxy" or (cmd and cmd[0].rsplit("/", 1)[-1] == "kube-proxy"):
            return True
    return False


def daemonset_summary(daemonset: "Mapping[str, Any]") -> dict[str, Any]:
    """What :func:`kube_proxy_daemonset_problems` names of a DaemonSet: where it is and how many of its pods are ready."""
    md, st = daemonset.get("metadata") or {}, daemonset.get("status") or {}
    return {"namespace": md.get("namespace"), "name": md.get("name"), "desired": st.get("desiredNumberScheduled", 0),
            "ready": st.get("numberReady", 0)}


#: refusing kube-proxy beside the replacement is this project's policy; Cilium documents co-existence
#: (cilium/cilium Documentation/network/kubernetes/kubeproxy-free.rst@011b4940, the co-existence warning)
KUBE_PROXY_POLICY = ("refusing kube-proxy beside the replacement is pytest-kpr's policy, not Cilium's: Cilium documents co-existence (\"When "
                     "deploying the eBPF kube-proxy replacement under co-existence with kube-proxy on the system, be aware that both "
                     "mechanisms operate independent of each other.\", kubeproxy-free.rst); to accept it on purpose, run with "
                     "--kpr-allow-kube-proxy")


def kube_proxy_accepted(problems: "Sequence[str]", allow: bool) -> str | None:
    """The skip reason when kube-proxy's presence is accepted on purpose (--kpr-allow-kube-proxy) and was found; else None."""
    if problems and allow:
        return "kube-proxy beside the replacement, accepted on purpose (--kpr-allow-kube-proxy): " + "; ".join(problems)
    return None


def kube_proxy_daemonset_problems(daemonsets: "Sequence[Mapping[str, Any]]") -> list[str]:
    """A kube-proxy DaemonSet beside KubeProxyReplacement: two authorities program Services (double NAT, rules that
    come back). Named with its pods' count and what to do (KUBE_PROXY_POLICY says whose rule this is)."""
    return [f"DaemonSet {d.get('namespace')}/{d.get('name')} runs kube-proxy ({d.get('ready', 0)}/{d.get('desired', 0)} pods ready) while "
            f"KubeProxyReplacement is on: remove it the way Cilium documents ({KUBE_PROXY_REMOVAL})" for d in daemonsets]


def ipvs_problems(ipvs: "Mapping[str, Sequence[str] | None]") -> list[str]:
    """IPVS virtual services on a node: kube-proxy in IPVS mode (or a leftover of it) answering Services beside Cilium."""
    out = []
    for node, services in sorted(ipvs.items()):
        if services is None:
            out.append(f"{node}: /proc/net/ip_vs could not be read, so IPVS is not checked there")
        elif services:
            out.append(f"{node}: {len(services)} IPVS virtual services ({', '.join(list(services)[:3])}{', ...' if len(services) > 3 else ''})")
    return out


#: connections the affinity suite makes per Service, and the backends behind it
AFFINITY_CONNECTIONS, AFFINITY_BACKENDS = 20, 4


#: the affinity-timeout round: Service timeoutSeconds, seconds between connections (past the timeout, with the seconds
#: granularity of bpf_mono_now()), and connections
AFFINITY_TIMEOUT_S, AFFINITY_IDLE_S, AFFINITY_TIMEOUT_ROUNDS = 1, 2.5, 10


def affinity_timeout_problems(peers: "Sequence[str | None]", backends: "Sequence[str]", idle_s: float, timeout_s: int) -> list[str]:
    """With sessionAffinity timeoutSeconds shorter than the pause between connections, every connection is a new pick
    (bpf/lib/lb.h ``__lb4_affinity_backend_id``: the entry expires at last_used + timeout). If every one of k
    connections still reached the first one's backend, the timeout was not honoured: under uniform picks among N
    backends that happens with probability (1/N)^(k-1) (4 backends, 10 connections: 3.8e-06)."""
    out = []
    missing = [i for i, p in enumerate(peers) if p is None]
    if missing:
        out.append(f"{len(missing)} of {len(peers)} connections did not connect or show a backend")
    hit = sorted({p for p in peers if p})
    if len(backends) > 1 and len(peers) >= 2 and not missing and len(hit) == 1:
        n, k = len(backends), len(peers)
        out.append(f"all {k} connections, {idle_s:g} s apart (past the {timeout_s} s timeout), reached {hit[0]}: the affinity never expired "
                   f"(chance if it does: {(1 / n) ** (k - 1):.1e})")
    return out


def affinity_problems(sticky: "Sequence[str | None]", plain: "Sequence[str | None]", backends: "Sequence[str]") -> dict[str, list[str]]:
    """Session affinity, judged from the backend each connection reached (the kernel socket's peer under socket LB).

    ``sticky``: every connection from one client to a sessionAffinity=ClientIP Service reached one backend.
    ``spread``: without affinity, the connections reached more than one backend. Bound: with a uniformly random pick
    among N backends, all k connections reach one backend with probability N * (1/N)^k (4 backends, 20 connections:
    3.6e-12), so a single backend is not chance."""
    out: dict[str, list[str]] = {"sticky": [], "spread": []}
    for name, peers in (("sticky", sticky), ("spread", plain)):
        missing = [i for i, p in enumerate(peers) if p is None]
        strangers = sorted({p for p in peers if p is not None and p not in backends})
        if missing:
            out[name].append(f"{len(missing)} of {len(peers)} connections did not connect or show a backend")
        if strangers:
            out[name].append(f"connections reached {strangers}, which are not the Service's backends {sorted(backends)}")
    hit = sorted({p for p in sticky if p})
    if len(hit) > 1:
        out["sticky"].append(f"{len(sticky)} connections from one client reached {len(hit)} backends {hit} despite sessionAffinity ClientIP")
    spread = sorted({p for p in plain if p})
    if len(backends) > 1 and len(plain) >= 2 and len(spread) == 1:
        n, k = len(backends), len(plain)
        out["spread"].append(f"all {k} connections without affinity reached {spread[0]} of {n} backends (chance: {n * (1 / n) ** k:.1e})")
    return out


# -- externalTrafficPolicy=Local, the client's address, hostPort ------------------------------------------------------

def etp_reach_problems(local: "Mapping[str, str]", cluster: "Mapping[str, str]", with_backend: str) -> list[str]:
    """From outside (a raw SYN that arrives on each node's native device): the eTP=Local Service is served by the node
    with its backend and by no other (datapath.SRC_ETP_SCOPES: the external scope holds local backends only), while the
    eTP=Cluster Service on the same backend is served by every node. ``local``/``cluster``: node -> the probe's verdict
    (``accepted`` = a SYN-ACK came back)."""
    out = []
    if local.get(with_backend) != "accepted":
        out.append(f"the node with the backend ({with_backend}) did not serve it from outside: {local.get(with_backend)}")
    out += [f"{node}, which has no local backend, served it from outside ({v}): traffic was forwarded to another node's backend"
            for node, v in sorted(local.items()) if node != with_backend and v == "accepted"]
    out += [f"externalTrafficPolicy=Cluster on the same backend was not served by {node} ({v})"
            for node, v in sorted(cluster.items()) if v != "accepted"]
    return out


def health_check_problems(answers: "Mapping[str, tuple[int, Any]]", local_backends: "Mapping[str, int]", service: tuple[str, str]) -> list[str]:
    """The health-check NodePort (datapath.SRC_HEALTHSERVER): every node answers with its own count of local endpoints,
    200 when it has one, 503 when not, naming the Service. ``answers``: node -> (HTTP code, parsed JSON body or None)."""
    out = []
    for node, (code, body) in sorted(answers.items()):
        want = local_backends.get(node, 0)
        want_code = 200 if want else 503
        got = body.get("localEndpoints") if isinstance(body, dict) else None
        if code != want_code or got != want:
            out.append(f"{node} answered HTTP {code or 'nothing'} with localEndpoints {got}, expected {want_code} with {want} "
                       f"(its own backends)")
        elif (body.get("service") or {}) != {"namespace": service[0], "name": service[1]}:
            out.append(f"{node} answered for {body.get('service')}, not {service[0]}/{service[1]}")
    return out


def client_address_problems(seen: str | None, client: str, node_ip: str, expect: str, why: str, internal_ip: str = "") -> list[str]:
    """The address a backend logged for a request from outside, against the sourced rule (datapath.backend_sees):
    ``expect`` is ``client`` (the runner's own address), ``node`` (the receiving node's InternalIP, SNAT in native
    routing) or ``cilium-internal-ip`` (the receiving node's cilium_host address ``internal_ip``, SNAT in tunnel routing)."""
    names = {"client": "the client", "node": "the receiving node's InternalIP", "cilium-internal-ip": "the receiving node's CiliumInternalIP"}
    want = {"client": client, "node": node_ip, "cilium-internal-ip": internal_ip}[expect]
    if seen is None:
        return ["no backend logged the request, so what it saw is unknown"]
    if not want:
        return [f"the backend saw {seen}, but {names[expect]} is unknown (CiliumNode not readable), so the SNAT rule cannot be checked"]
    if seen != want:
        by_addr = {a: n for n, a in ((names["cilium-internal-ip"], internal_ip), (names["node"], node_ip), ("the client's address", client)) if a}
        name = by_addr.get(seen, "neither the client's nor the node's address")
        return [f"the backend saw {seen} ({name}), expected {want} ({names[expect]}: {why})"]
    return []


def hostport_frontend_problems(services: "Sequence[Any]", port: int) -> list[str]:
    """The agent on the pod's node lists a HostPort frontend on the hostPort (datapath.SRC_HOSTPORT)."""
    if any(s.type == "HostPort" and s.frontend.port == port for s in services):
        return []
    types = sorted({s.type for s in services if s.frontend.port == port})
    return [f"the agent lists no HostPort frontend on port {port}" + (f" (only {types})" if types else "")]


def hostport_admission_problems(pod: "Mapping[str, Any]", node: str) -> list[str]:
    """A second pod asking for a hostPort already taken on ``node`` must not run there (datapath.SRC_HOSTPORT_SCHED)."""
    if pod.get("node") == node and pod.get("phase") in ("Running", "Succeeded"):
        return [f"a second pod asking for the same hostPort was admitted on {node} ({pod.get('phase')}): two pods hold one port"]
    return []


# -- Maglev ------------------------------------------------------------------------------------------------------------

#: flows the Maglev suite sends from the runner (source ports), and how many of those on surviving backends may move when
#: one backend goes (Maglev moves about 1% of the table beyond the removed backend's share: datapath.SRC_MAGLEV_REMAP)
MAGLEV_FLOWS, MAGLEV_MOVE_TOLERANCE = 24, 0.1


def maglev_table(entries: "Sequence[Any]", frontend: str) -> dict[str, int] | None:
    """From ``lb/maps-dump`` entries: the Maglev table of ``frontend`` (``ip:port/PROTO``) as backend address -> slots;
    None when the frontend has no table (or is not there)."""
    from .parse.statedb import maglev_slots

    ids = {e.fields.get("ID") for e in entries if e.kind == "SVC" and e.fields.get("ADDR") == frontend}  # every slot carries the ID
    addrs = {e.fields.get("ID"): (e.fields.get("ADDR") or "").partition("/")[0] for e in entries if e.kind == "BE"}
    for e in entries:
        if e.kind == "MAGLEV" and e.fields.get("ID") in ids:
            return {addrs.get(i, f"backend ID {i}"): n for i, n in maglev_slots(e).items()}
    return None


def maglev_seed_problems(seeds: "Mapping[str, str | None]", default: str) -> list[str]:
    """Every agent resolves the same bpf-lb-maglev-hash-seed (None: unset, so the built-in ``default``)."""
    used = {node: s or default for node, s in seeds.items()}
    if len(set(used.values())) <= 1:
        return []
    groups: dict[str, list[str]] = {}
    for node, s in sorted(used.items()):
        groups.setdefault(s, []).append(node)
    return [f"the agents use {len(groups)} different hash seeds: " + "; ".join(f"{s!r} on {', '.join(n)}" for s, n in sorted(groups.items()))]


def maglev_table_problems(tables: "Mapping[str, Mapping[str, int] | None]", backends: "Sequence[str]") -> list[str]:
    """Each agent has a Maglev table for its own NodePort frontend over exactly the Service's backends, balanced (equal
    weights: slot counts differ by at most one). The dump shows counts only, so tables built from different seeds look
    alike here: the seed is checked where the agent resolves it."""
    out = []
    for node, t in sorted(tables.items()):
        if t is None:
            out.append(f"{node} has no Maglev table for its NodePort frontend")
        elif sorted(t) != sorted(backends):
            out.append(f"{node}'s table holds {sorted(t)}, not the backends {sorted(backends)}")
        elif max(t.values()) - min(t.values()) > 1:
            out.append(f"{node}'s table is unbalanced: {dict(sorted(t.items()))}")
    return out


def maglev_scope_problems(cluster_ip_tables: "Mapping[str, bool]") -> list[str]:
    """No Maglev table for the ClusterIP frontend (datapath.SRC_MAGLEV_SCOPE): in-cluster traffic is picked by socket LB."""
    nodes = sorted(n for n, has in cluster_ip_tables.items() if has)
    return [f"the ClusterIP frontend has a Maglev table on {', '.join(nodes)}: in-cluster traffic would be Maglev'd "
            "(only with bpf-lb-external-clusterip)"] if nodes else []


def maglev_flow_problems(through: "Mapping[str, Mapping[int, str | None]]") -> list[str]:
    """The same flow (source port) sent through different nodes reaches the same backend (the hash leaves out the
    destination: datapath.SRC_MAGLEV_HASH). ``through``: node -> source port -> backend pod (None: not served)."""
    nodes = sorted(through)
    if len(nodes) < 2:
        return []
    first, rest = nodes[0], nodes[1:]
    out = []
    for port in sorted(through[first]):
        got = {n: through[n].get(port) for n in nodes}
        if None in got.values():
            out.append(f"flow from :{port} was not served through {', '.join(n for n, b in got.items() if b is None)}")
        elif len(set(got.values())) > 1:
            out.append(f"flow from :{port} reached {', '.join(f'{b} through {n}' for n, b in got.items())}")
    if out:
        return [f"{len(out)} of {len(through[first])} flows did not reach one backend through {first} and {', '.join(rest)}: "
                + "; ".join(out[:4]) + ("; ..." if len(out) > 4 else "")]
    return []


def maglev_remap_problems(before: "Mapping[int, str | None]", after: "Mapping[int, str | None]", removed: str,
                          n_backends: int, tolerance: float = MAGLEV_MOVE_TOLERANCE) -> list[str]:
    """After one of ``n_backends`` backends (``removed``) goes, the flows it served move and the others stay: at most
    ``tolerance`` of the flows on surviving backends may move (Maglev: about 1%; a random pick would move (N-2)/(N-1)
    of them, 2/3 with 4 backends)."""
    flows = [p for p in before if before[p] is not None]
    lost = [p for p in flows if after.get(p) is None]
    survivors = [p for p in flows if before[p] != removed and after.get(p) is not None]
    moved = [p for p in survivors if after[p] != before[p]]
    out = []
    if lost:
        out.append(f"{len(lost)} flows got no answer after the removal")
    stuck = [p for p in flows if before[p] == removed and after.get(p) == removed]
    if stuck:
        out.append(f"{len(stuck)} flows still reached the removed backend {removed}")
    allowed = max(1, int(tolerance * len(survivors)))
    if len(moved) > allowed:
        frac = len(moved) / len(survivors)
        out.append(f"{len(moved)} of {len(survivors)} flows on the surviving backends moved ({frac:.0%}; allowed {allowed}): Maglev moves "
                   f"about 1% beyond the removed backend's share, a random pick {(n_backends - 2) / max(1, n_backends - 1):.0%}")
    return out


# -- the service map's capacity ----------------------------------------------------------------------------------------

#: a service map this small is filled on purpose by the map-pressure suite (the small-maps profile's 512); a larger one is
#: probed with a few Services only
MAP_FILL_LIMIT, MAP_PROBE_SERVICES, MAP_FILL_MARGIN = 4096, 20, 16


def service_map_problems(missing: "Sequence[str]", created: int, entries: int, map_max: int, full: str = "service map") -> list[str]:
    """Services in Kubernetes that have no entry in the agent's service map (``lb/maps-dump``): named, with how full the
    map is and which map filled (``full``: "service map" or "reverse-NAT map", from the frontends' errors), so a full map
    fails as such and not as a timeout somewhere else."""
    if not missing:
        return []
    sample = ", ".join(list(missing)[:3]) + (", ..." if len(missing) > 3 else "")
    return [f"{full} full ({entries} of {map_max} service entries): {len(missing)} of the run's {created} Services are in Kubernetes but "
            f"not in the BPF maps ({sample}); raise bpf.lbMapMax (bpf-lb-map-max) or remove Services"]


def which_map_filled(errors: "Iterable[str | None]", markers: "Mapping[str, str]") -> str:
    """The map the reconciler's errors name (datapath.MAP_FULL_ERRORS: marker -> map), the first that fills; "service
    map" when none names one."""
    named = [name for e in errors if e for marker, name in markers.items() if marker in e]
    return named[0] if named else "service map"


def map_visibility_problems(missing_frontends: "Mapping[str, tuple[str | None, str | None]]", health_seen: "Sequence[HealthStatus]",
                            markers: "Mapping[str, str]") -> list[str]:
    """A Service that did not fit is visible as such (datapath.SRC_MAP_FULL): its frontend's status is Error with a
    full map's error (``markers``: the service map's or the reverse-NAT map's, whichever filled first), and the
    load-balancer reconciler's health was Degraded with it at least once while the map filled (datapath.SRC_MAP_HEALTH:
    it reports OK again after any clean round). ``missing_frontends``: Service -> (status, error) in ``db/show
    frontends``; ``health_seen``: every ``db/show health`` row read during the fill window."""
    out = []
    silent = sorted(n for n, (status, error) in missing_frontends.items()
                    if status != "Error" or error is None or not any(m in error for m in markers))
    if silent:
        st = missing_frontends[silent[0]]
        out.append(f"{len(silent)} of {len(missing_frontends)} Services missing from the map show no error for it (e.g. {silent[0]}: "
                   f"status {st[0]}, error {st[1]!r}; expected Error with " + " or ".join(f"'{m}' ({n} full)" for m, n in markers.items()) + ")")
    rows = [h for h in health_seen if h.module.endswith("loadbalancer-reconciler")]
    if not any(h.level == "Degraded" and any(m in h.error for m in markers) for h in rows):
        levels = sorted({h.level for h in rows}) or ["no row"]
        out.append(f"the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled "
                   f"({len(rows)} readings: {', '.join(levels)})")
    return out


# -- cluster profiles: what each promises, read back from the agents ---------------------------------------------------

#: what each cluster profile (clusters/profiles/<name>.yaml) promises, as the facts read back from the agents show it.
#: A profile whose Helm values did not take effect (a mistyped key is ignored by the chart, not refused) fails the run
#: before the suites, instead of the suites judging the wrong configuration.
PROFILE_PROMISES: dict[str, dict[str, Any]] = {
    "default": {},
    "hostns-only": {"socket_lb_coverage": "Hostns-only"},
    "drop": {"no_backend_response": "drop"},
    "maglev": {"lb_algorithm": "Maglev"},
    "dsr": {"nodeport_mode": "DSR", "routing_mode": "Native"},
    "small-maps": {"lb_map_max": 512},
}


def profile_problems(profile: str, facts: "ClusterFacts") -> list[str]:
    """Each promised setting of ``profile`` that the agents do not show, one line each (an unknown profile promises
    nothing checkable here)."""
    return [f"the profile {profile!r} promises {key} {want!r}, but the agents report {getattr(facts, key)!r}"
            for key, want in PROFILE_PROMISES.get(profile, {}).items() if getattr(facts, key) != want]
