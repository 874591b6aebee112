"""Network namespaces for the real-kernel tier: client / node / server with veth links, random names.

Everything created is recorded and removed in reverse order by :meth:`Topology.close`, also when a
test fails: processes (stopped by their PID), nft tables live and die with their namespace, veths
with theirs. Addresses are private and only routable inside the namespaces created here; the host
namespace never gets a route to them.

Layout (a fresh random suffix per topology, /24s picked from 10.250.0.0/16 per run)::

    client  c0 10.250.A.1/24 <-> n0 10.250.A.2/24  node  n1 10.250.B.1/24 <-> s0 10.250.B.2/24  server
"""

from __future__ import annotations

import ctypes
import os
import random
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import ownership

NETNS_DIR = Path("/run/netns")
PREFIX = ownership.PREFIX  # every namespace this suite creates starts with this, then its owner
SPAWNED: list[subprocess.Popen] = []  # type: ignore[type-arg]  # every process the tier started, for the leak check


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child before exec: the kernel sends it SIGKILL when the test process dies, even by SIGKILL,
    so a killed run leaves no servers or holders behind (the signal survives nsenter's exec)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def can_use_netns() -> str | None:
    """None if namespaces can be used here, else the reason."""
    if os.geteuid() != 0:
        return "the real-kernel tier needs root (network namespaces, nftables, BPF)"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (make test installs it when root)"
    return None


def sh(*argv: str, input: str | None = None, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    cp = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    if check and cp.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` exited {cp.returncode}: {cp.stderr.strip() or cp.stdout.strip()}")
    return cp


@dataclass
class Topology:
    suffix: str = field(default_factory=lambda: secrets.token_hex(3))
    namespaces: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    subnets: dict[str, str] = field(default_factory=dict)
    subnets6: dict[str, str] = field(default_factory=dict)

    def ns(self, role: str) -> str:
        return ownership.name(role, self.suffix)

    def add_ns(self, role: str) -> str:
        name = self.ns(role)
        sh("ip", "netns", "add", name)
        self.namespaces.append(name)
        self.exec(role, "ip", "link", "set", "lo", "up")
        # ICMP errors are rate limited per destination (1000 ms, burst 6): without this a later
        # ICMP-unreachable answer is silently dropped and looks like a timeout.
        self.exec(role, "sysctl", "-qw", "net.ipv4.icmp_ratelimit=0")
        # The tier is IPv4 only. Without IPv6 a new link sends nothing by itself (no router solicitation, MLD or DAD
        # for seconds after it comes up), so a count of the packets that left it is the probes' alone.
        self.exec(role, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        return name

    def link(self, a: str, a_if: str, a_ip: str, b: str, b_if: str, b_ip: str) -> None:
        sh("ip", "link", "add", a_if, "netns", self.ns(a), "type", "veth", "peer", "name", b_if, "netns", self.ns(b))
        for role, ifname, ip in ((a, a_if, a_ip), (b, b_if, b_ip)):
            self.exec(role, "ip", "addr", "add", ip, "dev", ifname)
            self.exec(role, "ip", "link", "set", ifname, "up")

    def exec(self, role: str, *argv: str, input: str | None = None, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        """Run a command in a namespace with nsenter (which, unlike `ip netns exec`, keeps /sys and cgroups)."""
        return sh("nsenter", f"--net={NETNS_DIR / self.ns(role)}", *argv, input=input, check=check, timeout=timeout)

    def nft(self, role: str, ruleset: str) -> None:
        self.exec(role, "nft", "-f", "-", input=ruleset)

    def spawn(self, role: str, argv: Sequence[str], log: Path | None = None) -> subprocess.Popen[bytes]:
        out = open(log, "wb") if log else subprocess.DEVNULL
        p = subprocess.Popen(["nsenter", f"--net={NETNS_DIR / self.ns(role)}", *argv], stdout=out, stderr=subprocess.STDOUT,
                             preexec_fn=die_with_parent)
        self.procs.append(p)
        SPAWNED.append(p)
        return p

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait(timeout=5)
        self.procs.clear()
        for name in reversed(self.namespaces):
            sh("ip", "netns", "del", name, check=False)
        self.namespaces.clear()


#: the third octet / third hextet of a topology's subnets. Not 0: ``fd00:250:0::1`` is not the text the kernel prints
#: (``fd00:250::1``), and a CI run that drew 0 failed four IPv6 tests comparing a probe's source address with the prefix.
#: Every other index is written as the kernel writes it (decimal digits are hex digits with no leading zero).
SUBNET_INDEXES = range(1, 250)


def three_namespaces(work: Path, v6: bool = False) -> Topology:
    """client <-> node <-> server, the node forwarding; the server routes the client subnet back via the node. With
    ``v6`` each link also carries an IPv6 ULA prefix (``t.subnets6``: fd00:250:<n>:: with ::1 and ::2 as in IPv4;
    nodad, so the addresses work at once) and the node forwards IPv6 too."""
    t = Topology()
    a, b = random.sample(SUBNET_INDEXES, 2)
    left, right = f"10.250.{a}", f"10.250.{b}"
    t.subnets = {"left": left, "right": right}
    left6, right6 = f"fd00:250:{a}::", f"fd00:250:{b}::"
    t.subnets6 = {"left": left6, "right": right6} if v6 else {}
    try:
        for role in ("client", "node", "server"):
            t.add_ns(role)
        t.link("client", "c0", f"{left}.1/24", "node", "n0", f"{left}.2/24")
        t.link("node", "n1", f"{right}.1/24", "server", "s0", f"{right}.2/24")
        t.exec("node", "sysctl", "-qw", "net.ipv4.ip_forward=1")
        t.exec("client", "ip", "route", "add", f"{right}.0/24", "via", f"{left}.2")
        t.exec("server", "ip", "route", "add", f"{left}.0/24", "via", f"{right}.1")
        if v6:
            for role, dev, addr in (("client", "c0", f"{left6}1"), ("node", "n0", f"{left6}2"), ("node", "n1", f"{right6}1"),
                                    ("server", "s0", f"{right6}2")):
                # a new namespace may inherit IPv6 switched off (the machine's default): on for these devices only
                t.exec(role, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=0", "net.ipv6.conf.lo.disable_ipv6=0")
                t.exec(role, "ip", "-6", "addr", "add", f"{addr}/64", "dev", dev, "nodad")
            t.exec("node", "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
            t.exec("client", "ip", "-6", "route", "add", f"{right6}/64", "via", f"{left6}2")
            t.exec("server", "ip", "-6", "route", "add", f"{left6}/64", "via", f"{right6}1")
            # the link-local addresses (neighbour discovery's source) pass duplicate address detection first: until then
            # the first packet on a link waits, and a probe's first SYN timed out. A readiness wait, returning at once
            # when none is tentative; 10 s bounds it (DAD takes about 1 s: one probe, RetransTimer 1000 ms)
            deadline = time.monotonic() + 10.0
            while any(t.exec(role, "ip", "-6", "addr", "show", "tentative").stdout.strip() for role in ("client", "node", "server")):
                if time.monotonic() > deadline:
                    raise TimeoutError("IPv6 addresses still tentative after 10 s")
                time.sleep(0.05)
    except BaseException:
        t.close()
        raise
    return t


#: how long a spawned server may take to listen. A readiness wait, not a measured bound: it returns at the first
#: listener. Under qemu's TCG with a cold 9p page cache the interpreter's start and imports alone took over 10 s in the
#: first kernel cell of two fresh-clone runs (all 8 flow tests errored at their module fixture), so the bound is 120 s.
LISTEN_TIMEOUT = 120.0


def wait_listening(t: Topology, role: str, port: int, timeout: float = LISTEN_TIMEOUT, udp: bool = False) -> None:
    """Poll `ss` until something listens on the port (a UDP socket is bound to it, with ``udp``; bounded; no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if t.exec(role, "ss", "-Huln" if udp else "-Htln", f"sport = :{port}").stdout.strip():
            return
        time.sleep(0.02)
    raise TimeoutError(f"nothing listens on :{port}{'/udp' if udp else ''} in {t.ns(role)} after {timeout}s")


def namespaces() -> list[str]:
    """Every namespace with this suite's prefix, whoever owns it."""
    cp = sh("ip", "netns", "list", check=False)
    return [line.split()[0] for line in cp.stdout.splitlines() if line.startswith(PREFIX + "-")]


def leftovers() -> list[str]:
    """This process's namespaces still present (for the no-leak checks); other runs' are not looked at."""
    return [n for n in namespaces() if ownership.mine(n)]


CLONE_NEWNET = 0x40000000


class private_netns:
    """Run the calling thread (and the threads and processes it starts) in a fresh network namespace with only
    loopback, then return it to the namespace it was in. As root only; otherwise a no-op (``entered`` False)."""

    def __init__(self) -> None:
        self.entered = False
        self._fd = -1

    def __enter__(self) -> "private_netns":
        if os.geteuid() != 0:
            return self
        self._fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        if _libc.unshare(CLONE_NEWNET) != 0:
            os.close(self._fd)
            self._fd = -1
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
        self.entered = True
        sh("ip", "link", "set", "lo", "up")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            if _libc.setns(self._fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back to the original network namespace")
            os.close(self._fd)
            self._fd = -1
