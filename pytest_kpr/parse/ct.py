"""``cilium-dbg bpf ct list global`` (v1.16 -> main), including the ``-d`` time-diff form.

One entry per line; maps are dumped back to back with a blank line after each. Tails by version:
``... SourceSecurityID=%d IfIndex=%d BackendID=%d`` (1.16/1.17), ``... BackendID=%d`` (1.18),
``... BackendID=%d NatPort=%d`` (1.19/main). IPv6 addresses are not bracketed.
"""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from .addr import valid_ip
from .common import decide_strict, numbered
from .errors import ParseError

CT_FLAGS = (
    "RxClosing", "TxClosing", "Nat64", "LBLoopback", "SeenNonSyn", "NodePort",
    "ProxyRedirect", "DSRInternal", "FromL7LB", "FromTunnel",
)
_KNOWN_FLAGS = frozenset(CT_FLAGS)

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_V4 = rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}"
# IPv4 is validated by the pattern itself (Go prints it canonically); IPv6 (unbracketed, split at the
# last ':') by ipaddress, cached, since real dumps repeat addresses.
_HOST = rf"({_V4}|[0-9a-f:.]*:[0-9a-f:.]*):(\d{{1,5}})"
_LINE = re.compile(
    r"(TCP|UDP|ICMP|ICMPv6|SCTP|ANY) (OUT|IN|SVC) " + _HOST + " -> " + _HOST + " "
    r"(related )?expires=(\d+)(?: \(remaining: (-?\d+) sec\(s\)\))? "
    r"Packets=(\d+) Bytes=(\d+) RxFlagsSeen=0x([0-9a-f]+) LastRxReport=(\d+) "
    r"TxFlagsSeen=0x([0-9a-f]+) LastTxReport=(\d+) Flags=0x([0-9a-f]{4}) \[ ((?:[A-Za-z0-9]+(?:=0x[0-9a-f]+)? )*)\] "
    r"RevNAT=(\d+) SourceSecurityID=(\d+)(?: IfIndex=(\d+))? BackendID=(\d+)(?: NatPort=(\d+))?( ?)"
)


@lru_cache(maxsize=65536)
def _v6(text: str) -> str | None:
    return valid_ip(text) if ":" in text else None


@dataclass(frozen=True, slots=True)
class CtEntry:
    proto: str
    dir: str  # OUT | IN | SVC
    src_ip: str
    src_port: int
    dst_ip: str
    dst_port: int
    related: bool
    expires: int
    remaining: int | None
    packets: int
    bytes: int
    rx_flags_seen: int
    last_rx_report: int
    tx_flags_seen: int
    last_tx_report: int
    flags: int
    flag_names: tuple[str, ...]
    rev_nat: int
    source_security_id: int
    ifindex: int | None
    backend_id: int
    nat_port: int | None

    @property
    def src(self) -> str:
        return f"{self.src_ip}:{self.src_port}"

    @property
    def dst(self) -> str:
        return f"{self.dst_ip}:{self.dst_port}"


# A frozen dataclass's __init__ sets each field through object.__setattr__ (about 2 µs for 22 fields),
# which dominated parsing 200,000 entries. The parser builds a mutable twin with the same slot layout
# and re-classes it: the caller still gets an immutable CtEntry (tests check equality and immutability).
_CtEntryBuilder: Any = dataclass(slots=True)(type("_CtEntryBuilder", (), {"__annotations__": dict(CtEntry.__annotations__)}))


def _make(*values: object) -> CtEntry:
    obj = _CtEntryBuilder(*values)
    obj.__class__ = CtEntry  # type: ignore[assignment]
    return obj  # type: ignore[return-value]


assert [f.name for f in fields(_CtEntryBuilder)] == [f.name for f in fields(CtEntry)]


def tail_for(version: tuple[int, int]) -> str:
    """The line tail a Cilium minor prints: ``ifindex`` (1.16/1.17), ``plain`` (1.18), ``natport`` (1.19+)."""
    if version < (1, 18):
        return "ifindex"
    return "plain" if version < (1, 19) else "natport"


def parse_ct_list(text: str, strict: bool | None = None, version: tuple[int, int] | None = None) -> list[CtEntry]:
    """Every entry, in output order. Blank lines separate maps; anything else unknown is a ParseError.

    With ``version`` (the agent's Cilium minor) every line must have that version's tail; without it,
    every line of one dump must at least have the same tail (one agent printed them all).
    """
    strict = decide_strict(text, strict)
    # Hundreds of thousands of small objects: the cyclic GC would rescan them over and over (none of
    # them can form a cycle), which made 400,000 entries take 2.6x as long as 200,000.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse(text, strict, tail_for(version) if version is not None else None)
    finally:
        if was_enabled:
            gc.enable()


def _parse(text: str, strict: bool, want: str | None) -> list[CtEntry]:
    out: list[CtEntry] = []
    match = _LINE.fullmatch
    append = out.append
    known = _KNOWN_FLAGS
    for lineno, line in numbered(text):
        if not line or line.isspace():
            continue
        m = match(line)
        if m is None:
            raise ParseError("bpf-ct-list", lineno, line)
        (proto, direction, sip, sport, dip, dport, related, expires, remaining, packets, nbytes, rxf, lrx, txf, ltx,
         flags, names, revnat, secid, ifindex, backend, natport, trail) = m.groups()
        if strict and not trail:
            raise ParseError("bpf-ct-list", lineno, line, "line cut off (no trailing space after the last field)")
        tail = "ifindex" if ifindex is not None else "natport" if natport is not None else "plain"
        if ifindex is not None and natport is not None:
            raise ParseError("bpf-ct-list", lineno, line, "IfIndex and NatPort never appear together")
        if want is None:
            want = tail
        elif tail != want:
            raise ParseError("bpf-ct-list", lineno, line, f"line format ({tail}) differs from the dump's ({want}): cut off or mixed")
        if ":" in sip:
            sip = _v6(sip)
        if ":" in dip:
            dip = _v6(dip)
        sp, dp = int(sport), int(dport)
        if sip is None or dip is None or sp > 65535 or dp > 65535:
            raise ParseError("bpf-ct-list", lineno, line, "bad address")
        flag_names = tuple(names.split()) if names else ()
        for name in flag_names:
            if name not in known and not name.startswith("Unknown=0x"):
                raise ParseError("bpf-ct-list", lineno, line, f"unknown flag {name!r}")
        append(
            _make(
                proto, direction, sip, sp, dip, dp, related is not None, int(expires),
                int(remaining) if remaining is not None else None, int(packets), int(nbytes), int(rxf, 16), int(lrx),
                int(txf, 16), int(ltx), int(flags, 16), flag_names, int(revnat), int(secid),
                int(ifindex) if ifindex is not None else None, int(backend), int(natport) if natport is not None else None,
            )
        )
    return out
