"""The runner's host as an outside client: probes a node address only over a specific route.

A node address reached through the default route is not "outside the cluster on the same network"
(it would leave this host), so such probes are not made: :meth:`LocalOutside.reaches` says False and
the suite records that the outside view was not available.
"""

from __future__ import annotations

import ipaddress
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from .routes import RouteLedger
from ..parse.addr import valid_ip
from ..traffic.probes import ProbeResult, http_probe, route_source, syn_probe, udp_icmp_probe

CAP_NET_RAW = 13
CAP_NET_ADMIN = 12

#: the protocol number of the routes the runner adds to reach a VIP through a node (``ip route ... proto 233``): told apart
#: from the host's own routes (iproute2's rt_protos names none at 233), and the only ones :meth:`LocalOutside.via` removes
ROUTE_PROTO = 233

#: runs one ``ip`` command: argv -> (exit status, stderr)
IpRunner = Callable[[Sequence[str]], "tuple[int, str]"]


def run_ip(argv: Sequence[str]) -> tuple[int, str]:
    try:
        p = subprocess.run(["ip", *argv], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, str(e)
    return p.returncode, p.stderr.strip()


def specific_route(ip: str, route_file: Path | None = None) -> str | None:
    """The interface of the most specific non-default route covering ``ip`` (IPv4: /proc/net/route; IPv6:
    /proc/net/ipv6_route), or None."""
    try:
        addr = ipaddress.ip_address(ip)
        text = (route_file or Path("/proc/net/ipv6_route" if addr.version == 6 else "/proc/net/route")).read_text()
    except (ValueError, OSError):
        return None
    routes = _routes6(text) if addr.version == 6 else _routes4(text)
    covering = [(net, dev) for net, dev in routes if net.prefixlen > 0 and addr in net]  # the default route does not count
    return max(covering, key=lambda route: route[0].prefixlen)[1] if covering else None  # the longest prefix


Route = tuple["ipaddress.IPv4Network | ipaddress.IPv6Network", str]


def _routes4(text: str) -> list[Route]:
    """Lines after the header: interface, destination, gateway, flags, refcount, use, metric, mask, ... The kernel prints
    each address as the hex of its four network-order bytes read as a native (little-endian) integer: 172.18.0.0 is
    ``000012AC``, so the bytes of the hex text, read little-endian, are the address."""
    out: list[Route] = []
    for line in text.splitlines()[1:]:
        f = line.split()
        try:
            dest, mask = (int.from_bytes(bytes.fromhex(f[i]), "little") for i in (1, 7))
            out.append((ipaddress.IPv4Network((dest, bin(mask).count("1"))), f[0]))
        except (IndexError, ValueError):
            continue
    return out


#: route flags of /proc/net/ipv6_route (include/uapi/linux/route.h, ipv6_route.h): an unreachable/prohibit route, and a
#: route to one of the host's own addresses (the local table's, which /proc/net/route for IPv4 does not list)
RTF_REJECT = 0x0200
RTF_LOCAL = 0x80000000


def _routes6(text: str) -> list[Route]:
    """Lines: destination (32 hex digits), prefix length (hex), source, source length, next hop, metric, refcount, use,
    flags, device. Reject and local routes, and multicast, are no route to another machine."""
    out: list[Route] = []
    for line in text.splitlines():
        f = line.split()
        try:
            net, flags = ipaddress.IPv6Network((int(f[0], 16), int(f[1], 16))), int(f[8], 16)
            if not (flags & (RTF_REJECT | RTF_LOCAL) or net.is_multicast):
                out.append((net, f[9]))
        except (IndexError, ValueError):
            continue
    return out


class LocalOutside:
    def __init__(self, ip: IpRunner = run_ip, status_file: Path = Path("/proc/self/status"), ledger: RouteLedger | None = None):
        """``ledger``: where the routes :meth:`via` adds are written down while they exist (cluster.routes: `kpr cleanup
        --routes` removes a killed run's); the run sets its ``run_id``."""
        self._ip = ip
        self._status = status_file
        self.ledger = ledger if ledger is not None else RouteLedger()

    def reaches(self, ip: str) -> bool:
        return specific_route(ip) is not None

    @contextmanager
    def via(self, node_ip: str, addresses: Sequence[str]) -> Iterator[str | None]:
        """Route each of ``addresses`` (a VIP, an externalIPs address) through the node at ``node_ip`` while the context
        lasts, as Cilium's own LB test on kind does (rules.datapath.SRC_VIA_NODE): ``ip route add <addr>/32 via <node>
        proto 233``. Yields None when every address is routed, else why not (one line), having added nothing. Only over a
        specific route to the node (never the default route), with CAP_NET_ADMIN, and never over a route someone else
        holds: an address that already has a specific route is refused, and so is one not written as ipaddress writes it
        (the check and the route must see the same address). Which addresses are the run's is the caller's check
        (scenarios.vips.Vips.owned: its own pool). The routes it added are removed on the way out,
        also on a failure or Ctrl-C."""
        why = None
        if not self.reaches(node_ip):
            why = f"no specific route to the node {node_ip}"
        elif not has_capability(CAP_NET_ADMIN, self._status):
            why = "the runner lacks CAP_NET_ADMIN, needed to route a VIP through a node (ip route add)"
        elif odd := [a for a in addresses if valid_ip(a) != a]:
            why = f"{', '.join(odd)} is not an address in canonical form: not routing it (a run routes only the addresses it allocated)"
        else:
            taken = [a for a in addresses if specific_route(a) is not None]
            if taken:
                why = f"{', '.join(taken)} already has a route on the runner: not replacing a route this run did not add"
        added: list[list[str]] = []
        try:
            if why is None:
                for a in addresses:
                    route = [f"{a}/{128 if ':' in a else 32}", "via", node_ip, "proto", str(ROUTE_PROTO)]
                    try:  # written down before it exists: a run killed outright leaves a ledger naming it
                        self.ledger.adding(route)
                    except OSError as e:
                        why = f"cannot write down the route in {self.ledger.path} ({e.strerror}): not routing"
                        break
                    rc, err = self._ip(["route", "add", *route])
                    if rc != 0:
                        self.ledger.removed(route)
                        why = f"ip route add {' '.join(route)} failed: {err or f'exit {rc}'}"
                        break
                    added.append(route)
                if why is not None:  # all or none
                    while added:
                        self._del(added.pop())
            yield why
        finally:
            for route in reversed(added):
                self._del(route)

    def _del(self, route: list[str]) -> None:
        self._ip(["route", "del", *route])
        try:
            self.ledger.removed(route)
        except OSError:
            pass

    def http(self, url: str, timeout: float, source_port: int | None = None) -> ProbeResult:
        return http_probe(url, timeout, source_port=source_port)

    def can_send_raw(self, status_file: Path = Path("/proc/self/status")) -> bool:
        return has_capability(CAP_NET_RAW, status_file)

    def source_address(self, ip: str) -> str | None:
        """The source address the kernel picks for ``ip`` (a connected UDP socket: no packet is sent), over a specific
        route only."""
        return route_source(ip)[0] if self.reaches(ip) else None

    def raw_syn(self, ip: str, port: int, timeout: float) -> ProbeResult:
        if not self.reaches(ip):  # never through the default route
            raise ValueError(f"no specific route to {ip}: refusing to send a raw SYN through the default route")
        return syn_probe(ip, port, timeout)


    def udp_icmp(self, ip: str, port: int, timeout: float, sport: int | None = None) -> ProbeResult:
        """One UDP datagram (DF) to ``ip:port`` and the ICMP error about it (traffic.probes.udp_icmp_probe); only over a
        specific route to a node."""
        if not self.reaches(ip):  # never through the default route
            raise ValueError(f"no specific route to {ip}: refusing to send a raw datagram through the default route")
        return udp_icmp_probe(ip, port, timeout, sport)


def has_capability(bit: int, status_file: Path = Path("/proc/self/status")) -> bool:
    """Whether the effective capability set (``CapEff`` in /proc/self/status) holds ``bit``."""
    try:
        for line in status_file.read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False
