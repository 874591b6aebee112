"""Real-kernel tier, IPv6: the probes' verdicts against real IPv6 answers, and the socket load balancer's IPv6 hooks
(connect6, getpeername6, sendmsg6, recvmsg6) as Cilium's bpf_sock.c attaches them, on this kernel.

client (fd00:250:A::1) <-> node (forwarding) <-> server (fd00:250:B::2), each link dual-stack. Server rules:

  8080 listener | 9090 closed (kernel RST) | 9191 reject icmpv6 port-unreachable | 9194 reject icmpv6 admin-prohibited

The no-backend answer of Cilium's per-packet plane for IPv6 is ICMPv6 destination unreachable, port unreachable
(cilium/cilium bpf/lib/lb.h __tail_no_service_ipv6: ``icmphdr->icmp6_type = ICMPV6_DEST_UNREACH; icmphdr->icmp6_code =
ICMPV6_PORT_UNREACH;``: type 1 code 4); the SYN probe must report it as such. Every probe runs inside the client
namespace, which has no default route: nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from netns import Topology, can_use_netns, three_namespaces, wait_listening
from realkernel import NetnsRunner, SocketLB, compile_sock_lb, in_netns, need_clang, spawn_in

from pytest_kpr.observe.node import Node
from pytest_kpr.traffic.probes import ProbeResult, Verdict, connect_probe, syn_probe

pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent]

REPO = Path(__file__).resolve().parent.parent
SERVER_RULES = """
table inet kprt_probe6 {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp dport 9191 reject with icmpv6 type port-unreachable
    tcp dport 9194 reject with icmpv6 type admin-prohibited
  }
}
"""
SERVICE6 = ("fd00:96::10", 80)  # the service the socket LB translates (no route to it: untranslated, it goes nowhere)
GHOST6 = ("fd00:96::99", 80)  # a backendless service: connect6/sendmsg6 reject it
UDP_PORT = 5353


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path_factory.mktemp("ipv6"), v6=True)
    try:
        t.nft("server", SERVER_RULES)
        t.spawn("server", [sys.executable, "-m", "http.server", "8080", "--bind", server(t)])
        t.spawn("server", [sys.executable, "-m", "pytest_kpr.cli", "probe", "echo-server", "--udp", "--port", str(UDP_PORT), "--bind", server(t)])
        wait_listening(t, "server", 8080)
        wait_listening(t, "server", UDP_PORT, udp=True)
        yield t
    finally:
        t.close()


def server(t: Topology) -> str:
    return f"{t.subnets6['right']}2"


def lb6(topo: Topology, tmp_path: Path, service: tuple[str, int], backend_port: int, ghost: tuple[str, int] | None = None,
        set_retval: bool = False, programs: "tuple[str, ...]" = SocketLB.PROGRAMS6) -> SocketLB:
    """The socket LB's IPv6 programs for ``service`` -> the server's address at ``backend_port`` (and a backendless
    ``ghost``), attached to a cgroup of their own. (The IPv4 programs in the object get a placeholder service.)"""
    need_clang()
    obj = compile_sock_lb(tmp_path, ("10.96.0.10", 80), (f"{topo.subnets['right']}.2", 8080), set_retval=set_retval,
                          v6=(service, (server(topo), backend_port), ghost))
    return SocketLB(obj, programs=programs)


def syn(t: Topology, port: int, timeout: float = 1.0) -> ProbeResult:
    return in_netns(t.ns("client"), syn_probe, server(t), port, timeout)


@pytest.mark.parametrize(
    ("port", "verdict", "icmp"),
    [(8080, Verdict.ACCEPTED, None), (9090, Verdict.RESET, None), (9191, Verdict.ICMP_UNREACHABLE, (1, 4)),
     (9194, Verdict.ICMP_UNREACHABLE, (1, 1))],
    ids=["listener", "closed-port", "icmpv6-port-unreachable", "icmpv6-admin-prohibited"],
)
def test_the_syn_probe_classifies_real_ipv6_answers(topo: Topology, port: int, verdict: Verdict, icmp: tuple[int, int] | None) -> None:
    r = syn(topo, port)
    assert r.verdict is verdict, r.explain()
    assert (r.icmp_type, r.icmp_code) == (icmp if icmp else (None, None)), r.explain()
    assert r.target == f"[{server(topo)}]:{port}" and r.source and r.source.startswith(f"[{topo.subnets6['left']}1]:"), r.to_json()


def test_the_no_backend_rule_accepts_icmpv6_port_unreachable_and_nothing_else(topo: Topology) -> None:
    """The per-packet plane's reject for IPv6 (type 1 code 4) passes the suite's rule; admin-prohibited (1/1) does not."""
    from pytest_kpr.judge.no_backend import NoBackendAttempt, no_backend_problems
    from pytest_kpr.rules.datapath import Plane, no_backend

    rule = no_backend(Plane.PER_PACKET, "reject", family=6)
    for port, ok in ((9191, True), (9194, False)):
        r = syn(topo, port)
        a = NoBackendAttempt(f"raw SYN to [{server(topo)}]:{port}", "raw", r.verdict.value, r.elapsed_ms / 1000.0, icmp=(r.icmp_type, r.icmp_code))
        assert (no_backend_problems(a, rule, "reject") == []) is ok, (port, r.explain())


def test_the_connect_probe_reads_the_kernel_sockets_ipv6_peer(topo: Topology) -> None:
    r = in_netns(topo.ns("client"), connect_probe, server(topo), 8080, 2.0)
    want = f"[{server(topo)}]:8080"
    assert r.verdict is Verdict.CONNECTED and r.extra["socket_peer"] == r.extra["peer"] == want, r.to_json()
    refused = in_netns(topo.ns("client"), connect_probe, server(topo), 9090, 2.0)
    assert (refused.verdict, refused.errno_name) == (Verdict.REFUSED, "ECONNREFUSED"), refused.explain()


def test_kpr_probe_takes_and_prints_bracketed_ipv6_addresses(topo: Topology) -> None:
    cp = subprocess.run(["nsenter", f"--net=/run/netns/{topo.ns('client')}", sys.executable, "-m", "pytest_kpr", "probe", "connect",
                         f"[{server(topo)}]:8080", "--json"], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    line = json.loads(cp.stdout.splitlines()[-1])
    assert line["target"] == line["peer"] == line["socket_peer"] == f"[{server(topo)}]:8080", line


# -- the socket LB's IPv6 hooks -------------------------------------------------------------------------------------


@pytest.fixture
def socket_lb6(topo: Topology, tmp_path: Path) -> Iterator[SocketLB]:
    lb = lb6(topo, tmp_path, SERVICE6, 8080)
    try:
        yield lb
    finally:
        lb.close()


def test_connect6_translates_and_getpeername6_shows_the_service(topo: Topology, socket_lb6: SocketLB) -> None:
    """A TCP connect() to the IPv6 service reaches the backend; getpeername() shows the service while the kernel socket
    (ss, and conntrack) points at the backend: bpf_sock.c cil_sock6_connect / cil_sock6_getpeername."""
    sport = 40406
    holder = spawn_in(socket_lb6, topo.ns("client"), [sys.executable, "-m", "pytest_kpr", "probe", "hold", f"[{SERVICE6[0]}]:{SERVICE6[1]}",
                                                      "--sport", str(sport), "--seconds", "30"])
    topo.procs.append(holder)  # type: ignore[arg-type]  # stopped by PID at teardown even if this test fails
    event = json.loads(holder.stdout.readline() if holder.stdout else "{}")
    assert event.get("event") == "connected", event
    assert event["app_peer"] == f"[{SERVICE6[0]}]:{SERVICE6[1]}", event
    (sock,) = Node(NetnsRunner(topo), "client").connections(sport)
    assert sock.peer == f"[{server(topo)}]:8080", sock


def _udp(topo: Topology, lb: SocketLB | None, target: str, connected: bool) -> dict:
    p = spawn_in(lb, topo.ns("client"), [sys.executable, "-m", "pytest_kpr", "probe", "udp", target, "--json", "--timeout", "2",
                                         *(["--connected"] if connected else [])])
    out, _ = p.communicate(timeout=60)
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.mark.parametrize("connected", [False, True], ids=["unconnected", "connected"])
def test_sendmsg6_and_recvmsg6_the_reply_comes_from_the_service(topo: Topology, tmp_path: Path, connected: bool) -> None:
    """A UDP datagram to the IPv6 service reaches the backend (sendmsg6, or connect6 for a connected socket) and
    recvfrom() reports the service as the reply's source (recvmsg6): bpf_sock.c cil_sock6_sendmsg / cil_sock6_recvmsg."""
    from pytest_kpr.judge.udp import UdpAttempt, udp_reply_problems

    svc = f"[{SERVICE6[0]}]:{UDP_PORT}"
    lb = lb6(topo, tmp_path, (SERVICE6[0], UDP_PORT), UDP_PORT)
    try:
        r = _udp(topo, lb, svc, connected)
    finally:
        lb.close()
    assert r["verdict"] == "answered" and r["reply_from"] == svc, r
    a = UdpAttempt(r["mode"], r["target"], r["verdict"], r.get("reply_from"), r.get("peer"), r.get("errno_name"))
    assert udp_reply_problems(a, frozenset({f"[{server(topo)}]:{UDP_PORT}"})) == []


def test_recvmsg6_detached_shows_the_backend_and_the_judgement_flags_it(topo: Topology, tmp_path: Path) -> None:
    """Without recvmsg6 the reply reads as coming from the backend: what the UDP suite must flag."""
    from pytest_kpr.judge.udp import UdpAttempt, udp_reply_problems

    lb = lb6(topo, tmp_path, (SERVICE6[0], UDP_PORT), UDP_PORT, programs=("kprt_connect6", "kprt_sendmsg6", "kprt_getpeername6"))
    try:
        r = _udp(topo, lb, f"[{SERVICE6[0]}]:{UDP_PORT}", False)
    finally:
        lb.close()
    backend = f"[{server(topo)}]:{UDP_PORT}"
    assert r["verdict"] == "answered" and r["reply_from"] == backend, r
    a = UdpAttempt(r["mode"], r["target"], r["verdict"], r.get("reply_from"), r.get("peer"), r.get("errno_name"))
    assert udp_reply_problems(a, frozenset({backend})), "the judgement flags a reply from the backend"


def test_a_backendless_ipv6_service_fails_connect_as_the_socket_plane_rule_says(topo: Topology, tmp_path: Path) -> None:
    """connect6 rejects a backendless IPv6 service: EHOSTUNREACH where the hook may set the errno (6.1+), else EPERM."""
    from pytest_kpr.core.versions import kernel_tuple
    from pytest_kpr.judge.no_backend import socket_no_backend_problems
    from pytest_kpr.rules.kernels import KernelTable

    release = os.uname().release
    retval = bool(KernelTable.load(REPO / "clusters" / "kernels.yaml").expects("sock_addr_set_retval", release))
    lb = lb6(topo, tmp_path, SERVICE6, 8080, ghost=GHOST6, set_retval=retval)
    try:
        p = spawn_in(lb, topo.ns("client"), [sys.executable, "-m", "pytest_kpr", "probe", "connect", f"[{GHOST6[0]}]:{GHOST6[1]}",
                                             "--json", "--timeout", "2"])
        out, _ = p.communicate(timeout=60)
    finally:
        lb.close()
    r = json.loads(out.strip().splitlines()[-1])
    assert (r["verdict"], r.get("errno_name")) == ("unreachable", "EHOSTUNREACH" if retval else "EPERM"), r
    assert socket_no_backend_problems(f"connect() to [{GHOST6[0]}]:{GHOST6[1]}", "connect", r["verdict"], r["elapsed_ms"], r.get("errno_name"),
                                      "reject", release) == [], kernel_tuple(release)


# -- the lab's own servers: which families they accept (rules.workloads) ----------------------------------------------

#: port -> the command as a lab pod runs it (one without --bind ::, as the lab started them before, and one with it)
LAB_SERVERS = {
    8181: ["python3", "-m", "http.server", "8181"],
    8182: ["python3", "-m", "http.server", "--bind", "::", "8182"],
    8183: ["kpr", "probe", "echo-server", "--port", "8183"],
    8184: ["kpr", "probe", "echo-server", "--port", "8184", "--bind", "::"],
    8185: ["kpr", "probe", "echo-server", "--udp", "--port", "8185", "--bind", "::"],
}


def _here(command: list[str]) -> list[str]:
    """The pod's command as this machine runs it: this interpreter for python3, the module for the kpr script."""
    return [sys.executable, *command[1:]] if command[0] == "python3" else [sys.executable, "-m", "pytest_kpr", *command[1:]]


@pytest.fixture(scope="module")
def lab_servers(topo: Topology, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    logs = tmp_path_factory.mktemp("lab-servers")
    for port, command in LAB_SERVERS.items():
        topo.spawn("server", _here(command), log=logs / f"{port}.log")
    for port, command in LAB_SERVERS.items():
        wait_listening(topo, "server", port, udp="--udp" in command)
    return {port: logs / f"{port}.log" for port in LAB_SERVERS}


@pytest.mark.parametrize("port", sorted(LAB_SERVERS))
def test_a_lab_server_accepts_the_families_its_command_promises(topo: Topology, lab_servers: dict[int, Path], port: int) -> None:
    """rules.workloads.server_families against this kernel and this C library: http.server without --bind listens on
    0.0.0.0 only (an IPv6 connection is refused), with --bind :: on both; so does kpr probe echo-server."""
    from pytest_kpr.rules.workloads import server_families

    from pytest_kpr.traffic.probes import udp_probe

    promised, udp = server_families(LAB_SERVERS[port]), "--udp" in LAB_SERVERS[port]
    for family, address in (("IPv4", f"{topo.subnets['right']}.2"), ("IPv6", server(topo))):
        if udp:  # a connected UDP socket: a datagram nobody takes comes back as ICMP port unreachable, ECONNREFUSED
            r = in_netns(topo.ns("client"), udp_probe, address, port, 2.0, True)
            want = Verdict.ANSWERED if family in promised else Verdict.REFUSED
        else:
            r = in_netns(topo.ns("client"), connect_probe, address, port, 2.0)
            want = Verdict.CONNECTED if family in promised else Verdict.REFUSED
        assert r.verdict is want, (port, family, sorted(promised), r.explain())


def test_a_dual_stack_http_server_logs_an_ipv4_client_mapped_and_the_lab_reads_it_plain(topo: Topology, lab_servers: dict[int, Path]) -> None:
    """What Lab.who_served reads: http.server on :: logs an IPv4 client as ::ffff:a.b.c.d; rules.workloads.logged_client
    gives the client's own address back (and the fake writes the same, seen_by)."""
    from pytest_kpr.rules.workloads import logged_client, seen_by
    from pytest_kpr.traffic.probes import http_probe

    r = in_netns(topo.ns("client"), http_probe, f"http://{topo.subnets['right']}.2:8182/?kpr=v4mapped", 5.0)
    assert r.http_code == 200, r.explain()
    line = next(line for line in lab_servers[8182].read_text().splitlines() if "kpr=v4mapped" in line)
    client = f"{topo.subnets['left']}.1"
    assert line.split(" ", 1)[0] == seen_by(LAB_SERVERS[8182], client) == f"::ffff:{client}", line
    assert logged_client(line.split(" ", 1)[0]) == client
