"""UDP through the socket plane: a UDP client of a ClusterIP, connected or not, reaches a backend and reads the reply from the ClusterIP:port it sent to, never from the backend; a backendless UDP ClusterIP fails the datagram at once.

This is the DNS case: a resolver sends to the ClusterIP and drops a reply from any other address. With socket LB the
datagram goes straight to a backend: a connected socket is translated at connect() (connect4), an unconnected
``sendto()`` in the sendmsg4 hook, and only the recvmsg4 hook turns the reply's source (the backend) back into the
ClusterIP (cilium/cilium bpf/bpf_sock.c ``cil_sock4_sendmsg``, ``cil_sock4_recvmsg``, ``__sock4_xlate_rev``;
pytest_kpr.rules.datapath SRC_SOCK_SENDMSG, SRC_SOCK_RECVMSG). ``dns`` (two UDP echo backends, ``kpr probe
echo-server --udp`` on 5353) behind the ClusterIP Service ``dns`` 53/UDP; the probe pod runs ``kpr probe udp``
unconnected (sendto/recvfrom, as a resolver) and ``--connected`` (also getpeername()). ``dns-ghost`` (53/UDP, no
backends): sendmsg4 rejects the datagram as connect4 rejects a connection, EHOSTUNREACH from kernel 6.1 (EPERM below),
whatever ServiceNoBackendResponse says. The agent's view is recorded, not judged (the backend-slots suite judges
slots): its BPF slots for the UDP frontend (``lb/maps-dump``), its ``bpf lb list`` entries and the UDP conntrack entries to the backends. Needs socket LB in pod namespaces: with Hostns-only coverage the pod's
datagram takes the per-packet path, whose UDP reply rule is not yet sourced here. Evidence: udp.json.

IPv6 has hooks of its own (sendmsg6, recvmsg6, connect6, getpeername6): the probes run once per family of
--kpr-ip-families, to dns's and dns-ghost's ClusterIPs of that family (evidence ``udp-ipv6.json``).

A connected UDP client keeps its socket: when the backend it reached is deleted the agent terminates the sockets
connected to it (cilium/cilium pkg/loadbalancer/reconciler/termination.go; pytest_kpr.rules.datapath
SRC_UDP_SOCK_TERMINATION), the application's next call fails with ECONNABORTED and it reconnects through the Service --
a resolver is not left sending into a deleted pod. A flow pod per family (``udpterm-flow``, ``kpr probe flow --udp``) is
connected while ``udpterm-a`` is the only backend of ``udpterm``; ``udpterm-b`` joins, ``udpterm-a`` is deleted, and the
flow must count the abort and be answered again (evidence ``udp-termination.json``). The scenario deletes a backend, so
it runs once for every family.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import pytest

from pytest_kpr.suite import (clock, ClusterFacts, eventually, Evidence, family_file, holds, hp, L3n4, Lab, probe_pod,
                              same_address)
from pytest_kpr.judge.no_backend import known_regression, socket_no_backend_problems
from pytest_kpr.judge.udp import UdpObservation, UdpTermination, udp_attempt, udp_reply_problems, udp_termination_problems
from pytest_kpr.rules.datapath import SOCKET_TERMINATION_BATCH_S, SOCKET_TERMINATION_FILE, pod_udp_sockets_terminated

pytestmark = [
    pytest.mark.kpr(property="UDP", evidence=["udp.json", "udp-termination.json"],
                    plane="socket",
                    sources=["SRC_SOCK_SENDMSG", "SRC_SOCK_RECVMSG", "SRC_SOCK_GETPEERNAME", "SRC_SOCK_FWD", "SRC_SOCK_RETVAL",
                             "SRC_UDP_SOCK_TERMINATION"]),
    pytest.mark.kpr_requires("socket-lb-pods"),
]
DNS_PORT, ECHO_PORT, BACKENDS, TIMEOUT = 53, 5353, 2, 2.0
#: the termination scenario's flow: a datagram every 50 ms; it runs on for SETTLE_S after the EndpointSlice dropped the
#: deleted backend (the agent's watch delivers the change, typically well under a second; it terminates within
#: SOCKET_TERMINATION_BATCH_S; the flow reconnects within its 100 ms retry and is answered within a cadence: 5 s leaves
#: a loaded node several times that)
TERM_INTERVAL_MS, SETTLE_S = 50, 5.0


def _udp_echo(lab: Lab) -> Callable[[dict[str, Any]], None]:
    """The web Deployment as UDP echo servers (on both families when the run tests IPv6): no HTTP, no HTTP readiness probe."""
    def tweak(dep: dict[str, Any]) -> None:
        ctr = dep["spec"]["template"]["spec"]["containers"][0]
        ctr["command"] = lab.echo_server_command(ECHO_PORT, udp=True)
        ctr["ports"] = [{"containerPort": ECHO_PORT, "name": "dns", "protocol": "UDP"}]
        ctr.pop("readinessProbe", None)
    return tweak


def _udp_port(svc: dict[str, Any]) -> None:
    svc["spec"]["ports"] = [{"name": "dns", "port": DNS_PORT, "targetPort": ECHO_PORT, "protocol": "UDP"}]



def _probe(lab: Lab, target: str, connected: bool) -> dict[str, Any]:
    r = lab.exec("probe", "kpr", "probe", "udp", target, "--json", "--timeout", f"{TIMEOUT:g}", *(["--connected"] if connected else []),
                 timeout=TIMEOUT + lab.t.EXEC)
    return dict(json.loads(r.check().stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def seen(family_lab: Lab, probe: Lab, kpr_facts: ClusterFacts, evidence: Evidence, kpr_property: str, kpr_family: str) -> UdpObservation:
    lab = family_lab  # the workloads are made once (a second family finds them there) and read in this family
    lab.create_deployment("dns", BACKENDS, tweak=_udp_echo(lab))
    lab.create_service("dns", {"app": "dns"}, tweak=_udp_port)
    lab.create_service("dns-ghost", {"app": "dns-ghost-none"}, tweak=_udp_port)
    backends = lab.wait_ready_endpoints("dns", BACKENDS)
    fe = L3n4(lab.cluster_ip("dns"), DNS_PORT, "UDP" if lab.minor >= (1, 17) else None)
    agent, client = lab.agent(lab.client_node), kpr_facts.node(lab.client_node)

    # a precondition, not the property: the client's agent serves dns (how many slots it programs is the backend-slots
    # suite's property; the slots are recorded below)
    eventually(lambda: lab.slot_view(agent, fe), until=lambda v: len(v.backends) >= 1,
               timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {agent.node} to serve dns's UDP frontend with backends",
               describe=lambda v: f"{len(v.backends)} slots", progress=lab.progress, first_after=lab.t.LB_FIRST_LOOK)
    target, ghost = hp(fe.ip, DNS_PORT), hp(lab.cluster_ip("dns-ghost"), DNS_PORT)
    runs = {"unconnected": _probe(lab, target, False), "connected": _probe(lab, target, True),
            "ghost": _probe(lab, ghost, False)}
    entries = agent.lb_entries()
    slots = lab.slot_view(agent, fe)
    ct = [e for e in agent.conntrack(lab.minor) if e.proto == "UDP" and hp(e.dst_ip, e.dst_port) in backends]
    view = {"node": agent.node, "service_id": slots.service_id, "slots": list(slots.backends),
            "lb_entries": [{"frontend": str(e.frontend), "slot": e.slot, "backend": e.backend.host_port() if e.backend else None}
                           for e in entries if same_address(e.frontend, fe)],
            "conntrack_udp": [f"{e.proto} {e.dir} {e.src} -> {e.dst}" for e in ct]}
    obs = UdpObservation(kpr_family, target, tuple(sorted(backends)), ghost, udp_attempt(runs["unconnected"]), udp_attempt(runs["connected"]),
                         udp_attempt(runs["ghost"]), float(runs["ghost"]["elapsed_ms"]), runs, view, client.kernel if client else None,
                         kpr_facts.no_backend_response)
    evidence.write(family_file("udp.json", kpr_family), obs.to_json())
    u, c, g = runs["unconnected"], runs["connected"], runs["ghost"]
    evidence.figure(kpr_property, f"unconnected reply from {u.get('reply_from', u['verdict'])}, connected peer {c.get('peer', c['verdict'])} "
                                  f"for {target}; backendless {g['verdict']}{' ' + g['errno_name'] if g.get('errno_name') else ''}", kpr_family)
    return obs


def test_an_unconnected_client_reads_the_reply_from_the_cluster_ip(seen: UdpObservation) -> None:
    """As a resolver does it: sendto() the ClusterIP, recvfrom() the reply."""
    holds(udp_reply_problems(seen.unconnected, frozenset(seen.backends)), "UDP (unconnected)")


def test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip(seen: UdpObservation) -> None:
    """connect() the ClusterIP (connect4 translates it), send(), recvfrom(); getpeername() must show the ClusterIP too."""
    holds(udp_reply_problems(seen.connected, frozenset(seen.backends)), "UDP (connected)")


def test_a_backendless_udp_service_fails_the_datagram_at_once(seen: UdpObservation, kpr_facts: ClusterFacts) -> None:
    """sendmsg4 rejects it, as connect4 rejects a connection (the socket plane's no-backend rule, for the lowest kernel)."""
    g = seen.ghost_attempt
    problems = socket_no_backend_problems(f"pod sendto() to UDP ClusterIP {seen.ghost}", "sendto", g.verdict, seen.ghost_elapsed_ms,
                                          g.errno, kpr_facts.no_backend_response, seen.client_kernel)
    if why := known_regression(problems, kpr_facts.cilium_version):
        pytest.xfail(why)
    holds(problems, "UDP (no backend)")


def _term_flow(family: str) -> str:
    return "udpterm-flow" if family == "IPv4" else f"udpterm-flow-{family.lower()}"


def _term_echo(name: str, lab: Lab, node: str) -> dict[str, Any]:
    pod = probe_pod(name, lab.ns, lab.image, node=node, labels={"app": "udpterm"}, command=lab.echo_server_command(ECHO_PORT, udp=True))
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": ECHO_PORT, "name": "dns", "protocol": "UDP"}]
    return pod


@pytest.fixture(scope="module")
def termination(lab: Lab, probe: Lab, evidence: Evidence, family_views: dict[str, Lab], kpr_facts: ClusterFacts,
                kpr_settings: Any) -> Iterator[dict[str, UdpTermination]]:
    """The termination scenario, run once: family -> what was seen (skipped, naming the setting or the kernel, where the
    agent does not terminate pods' sockets)."""
    from pytest_kpr.rules.kernels import KernelTable

    client, other = lab.client_node, lab.remote_node()
    node = kpr_facts.node(client)
    table = KernelTable.load(kpr_settings.clusters_dir / "kernels.yaml")
    if node is not None and node.kernel and not table.expects("udp_sock_destroy_netlink", node.kernel):
        pytest.skip(f"the client node's kernel {node.kernel} cannot destroy a UDP socket from outside (clusters/kernels.yaml "
                    f"udp_sock_destroy_netlink: from {table.features['udp_sock_destroy_netlink'].kernel}), so the agent cannot terminate it")
    agent = lab.agent(client)
    opt = agent.exec(["cat", SOCKET_TERMINATION_FILE])
    setting = opt.stdout.strip() if opt.ok else None
    if not pod_udp_sockets_terminated(setting, "Full"):
        pytest.skip(f"the agent's enable-socket-lb-pod-connection-termination is {setting}: it leaves pods' sockets to a deleted "
                    "backend connected (termination.go), so there is no termination to check")
    try:
        yield _terminate(lab, evidence, client, other, setting, family_views)
    finally:
        for pod in ("udpterm-a", "udpterm-b"):
            lab.kube.delete("Pod", pod, lab.ns, grace_period_seconds=0)


def _terminate(lab: Lab, evidence: Evidence, client: str, other: str, setting: str | None, views: dict[str, Lab]) -> dict[str, UdpTermination]:
    agent, families = lab.agent(client), list(views)
    lab.create(_term_echo("udpterm-a", lab, other))
    lab.create_service("udpterm", {"app": "udpterm"}, tweak=_udp_port)
    addr = {f: {"udpterm-a": sorted(v.wait_ready_endpoints("udpterm", 1))[0]} for f, v in views.items()}
    fes = {f: L3n4(v.cluster_ip("udpterm"), DNS_PORT, "UDP" if lab.minor >= (1, 17) else None) for f, v in views.items()}

    def serves(want: Callable[[str, set[str]], bool], what: str) -> None:
        for f in families:
            eventually(lambda f=f: set(lab.slot_view(agent, fes[f]).backends), until=lambda b, f=f: want(f, b),
                       timeout=lab.t.DATAPATH_CONVERGENCE, what=f"{what} ({f})", describe=lambda b: str(sorted(b)), progress=lab.progress,
                       first_after=lab.t.LB_FIRST_LOOK)

    serves(lambda f, b: b == {addr[f]["udpterm-a"]}, f"the agent on {client} to serve udpterm with udpterm-a")
    # a flow per family, connected while udpterm-a is the only backend
    lab.start_flows({_term_flow(f): fes[f].host_port() for f in families}, client, "udpterm-flow", udp=True, interval_ms=TERM_INTERVAL_MS,
                    duration_s=900)
    lab.create(_term_echo("udpterm-b", lab, client))
    for f, v in views.items():
        addr[f]["udpterm-b"] = next(a for a in sorted(v.wait_ready_endpoints("udpterm", 2)) if a != addr[f]["udpterm-a"])
    serves(lambda f, b: addr[f]["udpterm-b"] in b, f"the agent on {client} to serve udpterm with udpterm-b too")
    lab.kube.delete("Pod", "udpterm-a", lab.ns, grace_period_seconds=0)
    for v in views.values():  # Kubernetes' side: the backend is gone (what the agent's watch delivers)
        v.wait_ready_endpoints("udpterm", 1)
    clock.sleep(SETTLE_S)
    reports = {f: lab.stop_flow(_term_flow(f)) for f in families}
    # the silence a deleted backend may cause: the deletion reaching the agent (its convergence bound), the agent's
    # batch, then the flow's retry and a cadence (SETTLE_S above)
    bound_ms = (lab.t.DATAPATH_CONVERGENCE + SOCKET_TERMINATION_BATCH_S + SETTLE_S) * 1000.0
    out: dict[str, UdpTermination] = {}
    for f in families:
        t = UdpTermination(f, setting, fes[f].host_port(), addr[f], "udpterm-a", bound_ms, _term_flow(f), reports[f])
        evidence.write(family_file("udp-termination.json", f), t.to_json())  # (the property's figure stays the reply's: one per family)
        out[f] = t
    return out


def test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on(termination: dict[str, UdpTermination], kpr_family: str) -> None:
    """The agent terminates the connected socket (ECONNABORTED); the client reconnects through the Service and is answered
    by the remaining backend (SRC_UDP_SOCK_TERMINATION)."""
    t = termination[kpr_family]
    holds(udp_termination_problems(t.flow, f"udpterm-a ({t.backends['udpterm-a']})", t.bound_ms), "UDP (socket termination)")
