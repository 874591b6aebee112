"""``cilium-dbg bpf ct list global`` (v1.16 -> main), including the ``-d`` time-diff form.

One entry per line; maps are dumped back to back with a blank line after each. Tails by version:
``... SourceSecurityID=%d IfIndex=%d BackendID=%d`` (1.16/1.17), ``... BackendID=%d`` (1.18),
``... BackendID=%d NatPort=%d`` (1.19/main). IPv6 addresses bare (older) or bracketed (``[fd00::1]:80``, newer).
"""

from __future__ import annotations

import gc
import re
import socket
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, Iterator

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
# IPv6 in brackets too: cilium/cilium pkg/maps/ctmap/types.go@d93bee93 CtKey6Global.Dump writes ``sb.WriteString(" OUT [")``
# before the address and ``"]:"`` after it (the index's newest copy, a NatPort-era version); older ones print it bare
_HOST = rf"\[?({_V4}|[0-9a-f:.]*:[0-9a-f:.]*)\]?:(0|[1-9]\d{{0,4}})"  # port: Go's %d, no leading zeros
_N = r"(0|[1-9]\d*)"  # Go's %d: no leading zeros, so the digits are also the JSON number
_LINE = re.compile(
    r"(TCP|UDP|ICMP|ICMPv6|SCTP|ANY) (OUT|IN|SVC) " + _HOST + " -> " + _HOST + " "
    rf"(related )?expires={_N}(?: \(remaining: (-?(?:0|[1-9]\d*)) sec\(s\)\))? "
    rf"Packets={_N} Bytes={_N} RxFlagsSeen=0x([0-9a-f]+) LastRxReport={_N} "
    rf"TxFlagsSeen=0x([0-9a-f]+) LastTxReport={_N} Flags=0x([0-9a-f]{{4}}) \[ ((?:[A-Za-z0-9]+(?:=0x[0-9a-f]+)? )*)\] "
    rf"RevNAT={_N} SourceSecurityID={_N}(?: IfIndex={_N})? BackendID={_N}(?: NatPort={_N})?( ?)"
)


@lru_cache(maxsize=65536)
def _v6(text: str) -> str | None:
    """``valid_ip`` for IPv6, with a shortcut: text that the C library reads and prints back unchanged
    (without an embedded IPv4 part, which glibc and ipaddress print differently) is already canonical.
    ipaddress alone took a fifth of a 200,000-entry dump with many distinct IPv6 peers."""
    if ":" not in text:
        return None
    try:
        if socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, text)) == text and "." not in text:
            return text
    except OSError:
        pass
    return valid_ip(text)


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
    append = out.append
    for (proto, direction, sip, sport, dip, dport, related, expires, remaining, packets, nbytes, rxf, lrx, txf, ltx,
         flags, names, revnat, secid, ifindex, backend, natport) in _rows(text, strict, want):
        append(_make(
            proto, direction, sip, int(sport), dip, int(dport), related is not None, int(expires),
            int(remaining) if remaining is not None else None, int(packets), int(nbytes), int(rxf, 16), int(lrx),
            int(txf, 16), int(ltx), int(flags, 16), names, int(revnat), int(secid),
            int(ifindex) if ifindex is not None else None, int(backend), int(natport) if natport is not None else None,
        ))
    return out


def _rows(text: str, strict: bool, want: str | None) -> Iterator[tuple[Any, ...]]:
    """Each entry's fields as matched (numbers still text), checked, with canonical addresses and the
    flag names as a tuple: the one place that reads and judges a line."""
    match = _LINE.fullmatch
    known = _KNOWN_FLAGS
    seen: dict[str, tuple[str, ...]] = {}
    for lineno, line in numbered(text, "bpf-ct-list"):
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
        if sip is None or dip is None or int(sport) > 65535 or int(dport) > 65535:
            raise ParseError("bpf-ct-list", lineno, line, "bad address")
        flag_names = seen.get(names)
        if flag_names is None:  # a dump has a handful of distinct flag sets: judge each once
            flag_names = tuple(names.split())
            for name in flag_names:
                if name not in known and not name.startswith("Unknown=0x"):
                    raise ParseError("bpf-ct-list", lineno, line, f"unknown flag {name!r}")
            seen[names] = flag_names
        yield (proto, direction, sip, sport, dip, dport, related, expires, remaining, packets, nbytes, rxf, lrx, txf, ltx,
               flags, flag_names, revnat, secid, ifindex, backend, natport)


# The JSON object ``kpr parse bpf-ct-list`` prints per entry (formats._ct builds the same as a dict),
# written straight from the checked fields: decimal fields are copied as matched (the pattern admits
# no leading zeros, so the text is the JSON number) and no string needs escaping (the pattern admits
# only protocol/direction words, hex/decimal addresses and [A-Za-z0-9=] flag names). Building dicts and
# running the encoder took longer than parsing. tests/cli/test_kpr_parse_cli.py compares both paths on
# every fixture and on generated dumps.
_JSON_ENTRY = (
    '{"proto": "%s", "dir": "%s", "src": "%s:%s", "dst": "%s:%s", "flags": [%s], "flags_value": %d, "rev_nat": %s, '
    '"backend_id": %s, "source_security_id": %s, "related": %s, "expires": %s, "remaining": %s, "packets": %s, '
    '"bytes": %s, "rx_flags_seen": %d, "last_rx_report": %s, "tx_flags_seen": %d, "last_tx_report": %s, '
    '"ifindex": %s, "nat_port": %s}'
)


def ct_list_json(text: str, strict: bool | None = None, version: tuple[int, int] | None = None) -> list[str]:
    """Each entry as the JSON object ``kpr parse`` prints, in output order; errors as :func:`parse_ct_list`."""
    strict = decide_strict(text, strict)
    out: list[str] = []
    append = out.append
    fmt = _JSON_ENTRY
    lists: dict[tuple[str, ...], str] = {}
    for (proto, direction, sip, sp, dip, dp, related, expires, remaining, packets, nbytes, rxf, lrx, txf, ltx, flags,
         names, revnat, secid, ifindex, backend, natport) in _rows(text, strict, tail_for(version) if version is not None else None):
        flag_list = lists.get(names)
        if flag_list is None:
            flag_list = lists[names] = ", ".join(['"%s"' % n for n in names])
        append(fmt % (
            proto, direction, sip, sp, dip, dp, flag_list, int(flags, 16), revnat, backend, secid,
            "false" if related is None else "true", expires, "null" if remaining is None else remaining, packets, nbytes,
            int(rxf, 16), lrx, int(txf, 16), ltx, "null" if ifindex is None else ifindex, "null" if natport is None else natport,
        ))
    return out
