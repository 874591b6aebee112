"""Real-kernel tier, kernel-aware: the kernel mechanisms that terminate a connected UDP socket from outside the
application, as Cilium's load balancer does for the clients of a deleted backend (pkg/loadbalancer/reconciler/
termination.go; the UDP suite's socket-termination test relies on one of them on the node).

- sock_diag ``SOCK_DESTROY`` (``ss -K``; CONFIG_INET_DIAG_DESTROY, which Debian's kernels set): the application's next
  receive fails with ECONNABORTED, on every kernel the tier boots, for both families;
- a BPF UDP socket iterator calling ``bpf_sock_destroy`` (tests/bpf/sock_destroy.c): loads and destroys exactly the
  sockets it picks where clusters/kernels.yaml gives the kfunc (6.5+), and is refused before.

Each runs in a private network namespace with loopback only (tests/netns.py private_netns); `make test-kernels`
runs this on 5.10, 6.1, 6.12 and the host's kernel and its table shows what each kernel did.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest
from netns import can_use_netns, private_netns, sh
from realkernel import UdpDestroyIterator, compile_sock_destroy, need_clang, record

from pytest_kpr.rules.kernels import KernelTable

pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent]
TABLE = KernelTable.load(Path(__file__).resolve().parent.parent / "clusters" / "kernels.yaml")
KERNEL = os.uname().release
PORT, OTHER_PORT = 5353, 5354  # the "deleted backend" the client is connected to, and one that stays
LOOPBACK = {"IPv4": (socket.AF_INET, "127.0.0.1"), "IPv6": (socket.AF_INET6, "::1")}


@pytest.fixture(autouse=True)
def _netns() -> None:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)


def connected_client(family: str, port: int) -> tuple[socket.socket, socket.socket]:
    """An echo peer on loopback and a client connect()ed to it that has exchanged one datagram: (server, client)."""
    af, addr = LOOPBACK[family]
    server = socket.socket(af, socket.SOCK_DGRAM)
    server.bind((addr, port))
    client = socket.socket(af, socket.SOCK_DGRAM)
    client.connect((addr, port))
    client.send(b"ping")
    data, peer = server.recvfrom(16)
    server.sendto(data, peer)
    client.settimeout(5)
    assert client.recv(16) == b"ping"
    return server, client


@contextmanager
def client_and_keeper(family: str) -> Iterator[tuple[socket.socket, Callable[[], bool]]]:
    """A client connected to PORT (the one to destroy) and a keeper connected to OTHER_PORT: (client, kept), where
    ``kept()`` says whether the keeper still works afterwards (nothing else was destroyed). Every socket closes on exit."""
    server, client = connected_client(family, PORT)
    keeper_server, keeper = connected_client(family, OTHER_PORT)

    def kept() -> bool:
        keeper.send(b"still")
        return keeper_server.recv(16) == b"still"

    try:
        yield client, kept
    finally:
        for s in (server, client, keeper_server, keeper):
            s.close()


def next_call(client: socket.socket) -> str:
    """The errno name the client's next receive fails with ('none': it waited, nothing was destroyed)."""
    client.settimeout(0.5)
    try:
        client.recv(16)
    except socket.timeout:
        return "none"
    except OSError as e:
        return errno.errorcode.get(e.errno or 0, str(e.errno))
    return "data"


@pytest.mark.parametrize("family", ["IPv4", "IPv6"])
def test_sock_diag_destroy_aborts_a_connected_udp_socket(family: str) -> None:
    assert shutil.which("ss"), "ss (iproute2) is missing: make test installs it with the real-kernel tier's packages"
    with private_netns(), client_and_keeper(family) as (client, still):
        addr = LOOPBACK[family][1]
        sh("ss", "-K", "-n", "-u", "dst", f"[{addr}]:{PORT}" if family == "IPv6" else f"{addr}:{PORT}")
        got = next_call(client)
        kept = still()
    record(f"udp_sock_destroy_netlink_{family.lower()}", got)
    expected = TABLE.expects("udp_sock_destroy_netlink", KERNEL)
    assert expected is True, f"clusters/kernels.yaml gives no netlink UDP socket destroy on {KERNEL}"
    assert got == "ECONNABORTED", (f"kernel {KERNEL}: after SOCK_DESTROY the connected {family} UDP client's next recv() gave "
                                   f"{got}, expected ECONNABORTED (udp_abort)")
    assert kept, "a socket connected to another port was destroyed too"


def test_a_bpf_socket_iterator_destroys_a_connected_udp_socket_where_the_kernel_has_the_kfunc(tmp_path: Path) -> None:
    need_clang()
    expected = TABLE.expects("bpf_sock_destroy", KERNEL)
    obj = compile_sock_destroy(tmp_path, PORT)
    with private_netns(), client_and_keeper("IPv4") as (client, still):
        try:
            it = UdpDestroyIterator(obj)
        except OSError as e:
            record("bpf_sock_destroy", "refused")
            assert expected is False, (f"kernel {KERNEL} refused the bpf_sock_destroy iterator although clusters/kernels.yaml "
                                       f"gives the kfunc from {TABLE.features['bpf_sock_destroy'].kernel}: {e}")
            return
        try:
            it.run()
        finally:
            it.close()
        got = next_call(client)
        kept = still()
    record("bpf_sock_destroy", got)
    assert expected is True, (f"kernel {KERNEL} loaded the bpf_sock_destroy iterator although clusters/kernels.yaml gives the "
                              f"kfunc from {TABLE.features['bpf_sock_destroy'].kernel}")
    assert got == "ECONNABORTED", f"kernel {KERNEL}: after bpf_sock_destroy the connected UDP client's next recv() gave {got}"
    assert kept, "the iterator destroyed a socket connected to another port"


def _connected_to(port: int) -> int:
    """How many UDP sockets of this thread's namespace are connected to 127.0.0.1:``port`` (``ss``)."""
    out = sh("ss", "-H", "-n", "-u", "dst", f"127.0.0.1:{port}").stdout
    return len([line for line in out.splitlines() if line.strip()])


def _until(cond: "Callable[[], bool]", what: str, bound_s: float = 30.0) -> None:
    # bound: a socket appears within milliseconds on the host; 30 s leaves room for a TCG kernel cell (about 14x slower)
    deadline = time.monotonic() + bound_s
    while not cond():
        assert time.monotonic() < deadline, f"{what} within {bound_s:g} s"
        time.sleep(0.05)


def test_a_udp_flow_counts_a_destroyed_socket_as_aborted_and_reconnects() -> None:
    """kpr probe flow's meter, as the UDP suite's flow pod runs it: a connected UDP flow whose socket is destroyed from
    outside (here by SOCK_DESTROY) counts it as ``aborted``, reconnects and is answered again (its last gap closes)."""
    import threading

    from pytest_kpr.traffic.flow import echo_server, flow

    done, stop = threading.Event(), threading.Event()
    with private_netns():
        server = threading.Thread(target=echo_server, args=("127.0.0.1", PORT, True), kwargs={"stop": lambda t: done.wait(t)})
        server.start()
        try:
            result: dict = {}
            meter = threading.Thread(target=lambda: result.update(
                r=flow("127.0.0.1", PORT, udp=True, interval_ms=20.0, duration_s=120.0, stop=stop.is_set)))
            meter.start()
            _until(lambda: _connected_to(PORT) == 1, "the flow's socket connected")
            time.sleep(0.2)  # a few answered datagrams first
            sh("ss", "-K", "-n", "-u", "dst", f"127.0.0.1:{PORT}")
            _until(lambda: _connected_to(PORT) == 1, "the flow reconnected")
            time.sleep(1.0)  # 50 datagrams at 20 ms: answered again (the gap closes with the first answer)
            stop.set()
            meter.join(timeout=60)
        finally:
            stop.set()
            done.set()
            server.join(timeout=10)
    r = result["r"]
    events = [e["event"] for e in r.events]
    assert r.aborted == 1 and r.reconnects == 1 and events.index("aborted") < events.index("reconnected"), r.to_json()
    assert r.answered > 0 and not any(g.get("open") for g in r.gaps), f"not answered again after reconnecting: {r.to_json()}"
    assert r.to_json()["aborted"] == 1 and "1 aborted" in r.explain()


def test_a_destroyed_socket_that_sends_first_is_still_counted_as_aborted() -> None:
    """A UDP socket aborted by SOCK_DESTROY is also disconnected: its next send() fails with EDESTADDRREQ and the abort
    waits in SO_ERROR (this kernel's behaviour, checked here); the flow meter reads it there, so a flow whose next call
    after the termination is a send still counts ``aborted`` (on 5.10 under TCG that ordering made it count ``closed``)."""
    from pytest_kpr.traffic.flow import _Meter

    with private_netns(), client_and_keeper("IPv4") as (client, _):
        sh("ss", "-K", "-n", "-u", "dst", f"127.0.0.1:{PORT}")
        try:
            client.send(b"y")
            sent = "sent"
        except OSError as e:
            sent = errno.errorcode.get(e.errno or 0, str(e.errno))
        pending = errno.errorcode.get(client.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR), "none")
        meter = _Meter("127.0.0.1", PORT, True, 20.0, 1.0, 3000.0, 100.0, None, 2.0)
        assert meter.connect(time.monotonic())
        sh("ss", "-K", "-n", "-u", "dst", f"127.0.0.1:{PORT}")
        meter.send(0, time.monotonic())
    assert (sent, pending) == ("EDESTADDRREQ", "ECONNABORTED"), (KERNEL, sent, pending)
    assert meter.r.aborted == 1 and meter.r.closed == 0 and meter.sock is None, meter.r.to_json()
