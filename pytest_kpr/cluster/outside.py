"""The runner's host as an outside client: probes a node address only over a specific route.

A node address reached through the default route is not "outside the cluster on the same network"
(it would leave this host), so such probes are not made: :meth:`LocalOutside.reaches` says False and
the suite records that the outside view was not available.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from pathlib import Path

from ..traffic.probes import ProbeResult, http_probe, route_source, syn_probe

CAP_NET_RAW = 13


def specific_route(ip: str, route_file: Path = Path("/proc/net/route")) -> str | None:
    """The interface of the most specific non-default IPv4 route covering ``ip``, or None."""
    try:
        addr = int(ipaddress.IPv4Address(ip))
        lines = route_file.read_text().splitlines()[1:]
    except (ValueError, OSError):
        return None
    best: tuple[int, str] | None = None
    for line in lines:
        f = line.split()
        if len(f) < 8:
            continue
        dest = struct.unpack("<I", bytes.fromhex(f[1]))[0]
        mask = struct.unpack("<I", bytes.fromhex(f[7]))[0]
        dest, mask = socket.ntohl(dest), socket.ntohl(mask)
        if mask == 0 or addr & mask != dest:
            continue
        plen = bin(mask).count("1")
        if best is None or plen > best[0]:
            best = (plen, f[0])
    return best[1] if best else None


class LocalOutside:
    def reaches(self, ip: str) -> bool:
        return specific_route(ip) is not None

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


def has_capability(bit: int, status_file: Path = Path("/proc/self/status")) -> bool:
    """Whether the effective capability set (``CapEff`` in /proc/self/status) holds ``bit``."""
    try:
        for line in status_file.read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False
