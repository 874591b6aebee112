"""Cilium's L3n4Addr: an address, port, L4 protocol and lookup scope.

cilium/cilium pkg/loadbalancer/loadbalancer.go: the tables are ordered by ``Bytes()`` -- `addr20 :=
rep.addrCluster.As20()` (the 16-byte form, IPv4 mapped into IPv6, then the 4-byte cluster ID), `binary.BigEndian.
AppendUint16(key, rep.Port)`, `L4TypeAsByte(rep.Protocol)` ('T', 'U', 'S', '?'), then the scope byte -- and printed by
``StringWithProtocol()``: `"[" + addr + "]:" + port + "/" + proto` for IPv6, `"/i"` appended for the internal scope.
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass
from functools import cached_property

IP = ipaddress.IPv4Address | ipaddress.IPv6Address

TCP, UDP, SCTP, ANY = "TCP", "UDP", "SCTP", "ANY"
#: loadbalancer.go L4TypeAsByte
PROTO_BYTE = {TCP: b"T", UDP: b"U", SCTP: b"S"}
#: loadbalancer.go NewL4TypeFromNumber / u8proto
PROTO_NUMBER = {TCP: 6, UDP: 17, SCTP: 132, ANY: 0}
SCOPE_EXTERNAL, SCOPE_INTERNAL = 0, 1


@functools.lru_cache(maxsize=4096)
def ip_of(text: str) -> IP:
    """An address from its text (addresses are immutable: one parse per text)."""
    return ipaddress.ip_address(text.strip())


def as16(ip: IP) -> bytes:
    return ip.packed if ip.version == 6 else b"\0" * 10 + b"\xff\xff" + ip.packed


@dataclass(frozen=True, order=False)
class L3n4:
    ip: IP
    port: int
    proto: str = TCP
    scope: int = SCOPE_EXTERNAL

    @cached_property
    def key(self) -> bytes:
        """``Bytes()``: the primary key the frontends and backends tables are ordered by."""
        return (as16(self.ip) + b"\0\0\0\0" + self.port.to_bytes(2, "big") + PROTO_BYTE.get(self.proto, b"?")
                + bytes([self.scope]))

    @property
    def is6(self) -> bool:
        return self.ip.version == 6

    @property
    def unspecified(self) -> bool:
        return self.ip.is_unspecified

    def host(self) -> str:
        return f"[{self.ip}]" if self.is6 else str(self.ip)

    def __str__(self) -> str:
        return f"{self.host()}:{self.port}/{self.proto}" + ("/i" if self.scope == SCOPE_INTERNAL else "")

    def addr_port(self) -> str:
        """``ip:port`` as the maps dump prints it (no protocol)."""
        return f"{self.host()}:{self.port}"

    def with_ip(self, ip: IP) -> L3n4:
        return L3n4(ip, self.port, self.proto, self.scope)

    @classmethod
    def parse(cls, text: str) -> L3n4:
        """``ParseFromString``: ``1.2.3.4:80/TCP``, ``[2001::1]:80/UDP/i``; the protocol defaults to TCP."""
        s = text.strip()
        if s.startswith("["):
            host, _, rest = s[1:].partition("]")
            rest = rest.removeprefix(":")
        else:
            host, _, rest = s.partition(":")
        port_s, _, rest = rest.partition("/")
        proto, _, scope = rest.partition("/")
        proto = (proto or TCP).upper()
        if proto not in (TCP, UDP, SCTP):
            raise ValueError(f"bad address {text!r}, expected \"<addr>:<port>/<proto>(/i)\"")
        return cls(ip_of(host), int(port_s), proto, SCOPE_INTERNAL if scope == "i" else SCOPE_EXTERNAL)
