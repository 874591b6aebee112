"""Real-kernel tier: UDP through a real BPF socket load balancer (tests/bpf/sock_lb.c: connect4, sendmsg4, getpeername4,
recvmsg4, with Cilium's reverse-NAT key), in network namespaces: an unconnected client (sendto/recvfrom, as a resolver)
and a connected one both reach the backend and read the reply from the service address; with recvmsg4 not attached
the reply comes from the backend, and the UDP suite's judgement (pytest_kpr.judge.udp) flags exactly that. A
backendless UDP service fails sendto() as the socket plane's no-backend rule for this kernel says.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest
from netns import Topology, can_use_netns, three_namespaces, wait_listening
from realkernel import SocketLB, compile_sock_lb, need_clang, spawn_in

from pytest_kpr.judge.udp import UdpAttempt, udp_reply_problems

pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent]

REPO = Path(__file__).resolve().parent.parent
SERVICE = ("10.96.0.53", 53)
GHOST = ("10.96.0.54", 53)  # a UDP service without backends
PORT = 5353  # the backend's UDP echo server


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    need_clang()
    t = three_namespaces(tmp_path_factory.mktemp("udp"))
    try:
        t.spawn("server", [sys.executable, "-m", "pytest_kpr", "probe", "echo-server", "--udp", "--port", str(PORT),
                           "--bind", backend(t)[0]])
        wait_listening(t, "server", PORT, udp=True)
        yield t
    finally:
        t.close()


def backend(t: Topology) -> tuple[str, int]:
    return f"{t.subnets['right']}.2", PORT


def _lb(topo: Topology, tmp_path: Path, programs: tuple[str, ...] = SocketLB.PROGRAMS, set_retval: bool = False) -> SocketLB:
    return SocketLB(compile_sock_lb(tmp_path, SERVICE, backend(topo), no_backend=GHOST, set_retval=set_retval), programs)


def _udp(topo: Topology, lb: SocketLB, target: tuple[str, int], connected: bool) -> dict:
    """`kpr probe udp` from the client namespace, inside the socket-LB cgroup, as a probe pod runs it."""
    argv = [sys.executable, "-m", "pytest_kpr", "probe", "udp", "%s:%d" % target, "--json", "--timeout", "2",
            *(["--connected"] if connected else [])]
    p = spawn_in(lb, topo.ns("client"), argv)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _attempt(r: dict) -> UdpAttempt:
    return UdpAttempt(r["mode"], r["target"], r["verdict"], r.get("reply_from"), r.get("peer"), r.get("errno_name"))


@pytest.mark.parametrize("connected", [False, True], ids=["unconnected", "connected"])
def test_the_reply_comes_from_the_service_address(topo: Topology, tmp_path: Path, connected: bool) -> None:
    lb = _lb(topo, tmp_path)
    try:
        r = _udp(topo, lb, SERVICE, connected)
    finally:
        lb.close()
    service, be = "%s:%d" % SERVICE, "%s:%d" % backend(topo)
    assert r["verdict"] == "answered" and r["echoed"] is True, r
    assert r["reply_from"] == service, f"recvmsg4 turns the backend's {be} back into {service}: {r}"
    if connected:
        assert r["peer"] == service, r
    assert udp_reply_problems(_attempt(r), frozenset({be})) == []


@pytest.mark.parametrize("connected", [False, True], ids=["unconnected", "connected"])
def test_without_recvmsg4_the_reply_comes_from_the_backend_and_the_judgement_flags_it(topo: Topology, tmp_path: Path,
                                                                                      connected: bool) -> None:
    """The datagram still reaches the backend (sendmsg4/connect4 translate it), but nothing reverses the reply's source:
    what a resolver would drop. The suite's judgement must name it."""
    lb = _lb(topo, tmp_path, programs=("kprt_connect4", "kprt_sendmsg4", "kprt_getpeername4"))
    try:
        r = _udp(topo, lb, SERVICE, connected)
    finally:
        lb.close()
    be = "%s:%d" % backend(topo)
    assert r["verdict"] == "answered" and r["reply_from"] == be, r
    problems = udp_reply_problems(_attempt(r), frozenset({be}))
    assert len(problems) == 1 and f"the reply came from {be}, not from {SERVICE[0]}:{SERVICE[1]}" in problems[0] \
        and "recvmsg4 reverse translation is missing" in problems[0], problems


def test_a_backendless_udp_service_fails_sendto_as_the_socket_planes_rule_for_this_kernel_says(topo: Topology, tmp_path: Path) -> None:
    """sendmsg4 rejects a datagram to a service without backends (SRC_SOCK_SENDMSG): EHOSTUNREACH where the hook may set
    the errno (6.1+, clusters/kernels.yaml), EPERM below; judged with the same no-backend rule as connect()."""
    from pytest_kpr.core.versions import kernel_tuple
    from pytest_kpr.judge.no_backend import NoBackendAttempt, no_backend_problems
    from pytest_kpr.rules.datapath import Plane, no_backend
    from pytest_kpr.rules.kernels import KernelTable

    release = os.uname().release
    has_retval = KernelTable.load(REPO / "clusters" / "kernels.yaml").expects("sock_addr_set_retval", release)
    lb = _lb(topo, tmp_path, set_retval=bool(has_retval))
    try:
        r = _udp(topo, lb, GHOST, connected=False)
    finally:
        lb.close()
    want = "EHOSTUNREACH" if has_retval else "EPERM"
    assert (r["verdict"], r.get("errno_name")) == ("unreachable", want), r
    a = NoBackendAttempt(f"sendto() to {GHOST[0]}:{GHOST[1]}", "sendto", r["verdict"], r["elapsed_ms"] / 1000.0, r.get("errno_name"))
    assert no_backend_problems(a, no_backend(Plane.SOCKET, "reject", kernel=kernel_tuple(release)), "reject") == []
