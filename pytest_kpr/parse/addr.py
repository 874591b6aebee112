"""Service and backend addresses as Cilium prints them (``L3n4Addr.String()``).

- v1.16: ``IP:PORT`` or ``[IPv6]:PORT``, ``/i`` appended for the internal scope, no protocol.
- v1.17+: ``IP:PORT/PROTO[/i]`` with PROTO one of ``TCP UDP SCTP ANY NONE``.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass

PROTOCOLS = frozenset({"TCP", "UDP", "SCTP", "ANY", "NONE", "ICMP", "ICMPv6"})

_ADDR = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<v4>[0-9.]+)):(?P<port>\d{1,5})(?:/(?P<proto>TCP|UDP|SCTP|ANY|NONE|ICMP|ICMPv6))?(?P<internal>/i)?$")


def hp(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (``[fd00::1]:80``), as every probe prints addresses."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class L3n4:
    ip: str
    port: int
    proto: str | None = None
    internal: bool = False

    @property
    def is_v6(self) -> bool:
        return ":" in self.ip

    def host_port(self) -> str:
        """``IP:PORT`` (``[IP]:PORT`` for IPv6), without protocol or scope."""
        return hp(self.ip, self.port)

    def __str__(self) -> str:
        s = self.host_port()
        if self.proto:
            s += f"/{self.proto}"
        if self.internal:
            s += "/i"
        return s


@functools.lru_cache(maxsize=4096)
def valid_ip(text: str) -> str | None:
    """The canonical form of an IP address, or None (cached: agents print the same addresses in every table)."""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def parse_l3n4(text: str) -> L3n4 | None:
    """Parse ``10.96.0.10:53/UDP``, ``[fd00::1]:80/TCP/i``, ``10.96.0.10:53``; None if malformed."""
    m = _ADDR.match(text)
    if not m:
        return None
    raw = m.group("v6") if m.group("v6") is not None else m.group("v4")
    ip = valid_ip(raw)
    if ip is None or (m.group("v6") is not None and ":" not in ip):
        return None
    port = int(m.group("port"))
    if port > 65535:
        return None
    proto = m.group("proto")
    if proto is not None and proto not in PROTOCOLS:
        return None
    return L3n4(ip, port, proto, m.group("internal") is not None)


def l3n4_from_parts(ip: object, port: object, proto: object = None, internal: bool = False) -> L3n4 | None:
    """An address from JSON fields (ip, port, protocol), validated as the text form is; None if malformed."""
    host = str(ip)
    text = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # port unchecked yet: parse_l3n4 validates it
    if proto:
        text += f"/{str(proto).upper()}"
    a = parse_l3n4(text)
    return L3n4(a.ip, a.port, a.proto, internal) if a is not None else None


def split_host_port(text: str) -> tuple[str, int] | None:
    """``IP:PORT`` with an unbracketed IPv6 allowed (conntrack dumps): split at the last ``:``."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or len(port) > 5:
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    ip = valid_ip(host)
    p = int(port)
    if ip is None or p > 65535:
        return None
    return ip, p


def family_of(ip: str) -> str:
    """``IPv4`` or ``IPv6``, as Kubernetes names an address family (``spec.ipFamilies``, an EndpointSlice's addressType)."""
    return "IPv6" if ":" in ip else "IPv4"
