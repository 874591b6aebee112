"""``cilium-dbg bpf lb list`` (text and ``-o json``).

Since v1.16.0 every slot is its own row keyed ``IP:PORT[/PROTO][/i] (SLOT)``; the pre-1.16 layout
grouped a service's rows under one key. Slot 0 is the service ("master") entry
``0.0.0.0:0 (REVNAT) (0) [flags] [extra]``; slots >= 1 are backends ``IP:PORT[/PROTO] (REVNAT) (SLOT)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .addr import L3n4, parse_l3n4
from .common import load_json, numbered
from .errors import ParseError

LB_FLAGS = frozenset(
    {
        "ClusterIP", "NodePort", "ExternalIPs", "HostPort", "LoadBalancer", "LocalRedirect",
        "Local", "InternalLocal", "two-scopes", "sessionAffinity", "non-routable", "check source-range",
        "deny", "46x64", "l7-load-balancer", "loopback", "delegate-if-local", "quarantined", "dsr",
    }
)

_HEADER = re.compile(r"SERVICE ADDRESS\s+BACKEND ADDRESS \(REVNAT_ID\) \(SLOT\)\s*")
_KEY = re.compile(r"(\S+)(?: \((\d+)\))?")
_MASTER = re.compile(r"(0\.0\.0\.0|\[::\]):0 \((\d+)\) \(0\) \[([^\]]*)\](?: \(L7LB Proxy Port: (\d+)\))? ?")
_BACKEND = re.compile(r"(\S+) \((\d+)\) \((\d+)\)")
_NOT_FOUND = re.compile(r"backend (\d+) not found")
_ROW = re.compile(r"(\S+(?: \(\d+\))?)\s{2,}(\S.*)")
_CONT = re.compile(r"\s{2,}(\S.*)")


@dataclass(frozen=True, slots=True)
class LbEntry:
    frontend: L3n4
    slot: int
    backend: L3n4 | None  # None for slot 0 (the service entry) and for "backend N not found"
    revnat: int
    flags: tuple[str, ...]  # slot 0 only
    l7_proxy_port: int | None = None
    missing_backend_id: int | None = None

    @property
    def is_service(self) -> bool:
        return self.slot == 0


def _value(fmt: str, lineno: int, line: str, frontend: L3n4, key_slot: int | None, value: str) -> LbEntry:
    value = value.rstrip(" ")
    m = _MASTER.fullmatch(value)
    if m:
        if key_slot not in (None, 0):
            raise ParseError(fmt, lineno, line, "service entry in a backend slot")
        flags = tuple(f.strip() for f in m.group(3).split(",") if f.strip())
        for f in flags:
            if f not in LB_FLAGS:
                raise ParseError(fmt, lineno, line, f"unknown flag {f!r}")
        return LbEntry(frontend, 0, None, int(m.group(2)), flags, int(m.group(4)) if m.group(4) else None)
    m = _BACKEND.fullmatch(value)
    if m:
        be = parse_l3n4(m.group(1))
        slot = int(m.group(3))
        if be is None or slot == 0 or (key_slot is not None and key_slot != slot):
            raise ParseError(fmt, lineno, line, "bad backend entry")
        return LbEntry(frontend, slot, be, int(m.group(2)), ())
    m = _NOT_FOUND.fullmatch(value)
    if m and key_slot:
        return LbEntry(frontend, key_slot, None, 0, (), None, int(m.group(1)))
    raise ParseError(fmt, lineno, line, "unrecognised backend address")


def _key(fmt: str, lineno: int, line: str, key: str) -> tuple[L3n4, int | None]:
    m = _KEY.fullmatch(key)
    fe = parse_l3n4(m.group(1)) if m else None
    if m is None or fe is None:
        raise ParseError(fmt, lineno, line, "bad service address")
    return fe, int(m.group(2)) if m.group(2) is not None else None


def parse_lb_list(text: str) -> list[LbEntry]:
    out: list[LbEntry] = []
    current: L3n4 | None = None
    grouped = False
    for lineno, line in numbered(text):
        if not line:
            continue
        if not line.strip():
            raise ParseError("bpf-lb-list", lineno, line, "line of padding only (cut off?)")
        if _HEADER.fullmatch(line):
            continue
        if line[0] == " ":
            m = _CONT.fullmatch(line)
            if m is None or current is None or not grouped:
                raise ParseError("bpf-lb-list", lineno, line, "continuation line without a service")
            out.append(_value("bpf-lb-list", lineno, line, current, None, m.group(1)))
            continue
        m = _ROW.fullmatch(line)
        if m is None:
            raise ParseError("bpf-lb-list", lineno, line)
        fe, slot = _key("bpf-lb-list", lineno, line, m.group(1))
        grouped = slot is None
        current = fe
        out.append(_value("bpf-lb-list", lineno, line, fe, slot, m.group(2)))
    return out


def parse_lb_list_json(text: str) -> list[LbEntry]:
    """``bpf lb list -o json``: ``{"<key>": ["<value>", ...]}``."""
    data = load_json(text, "bpf-lb-list-json")
    if not isinstance(data, dict):
        raise ParseError("bpf-lb-list-json", 1, text[:80], "expected an object of key -> [values]")
    out = []
    for key, values in data.items():
        if not isinstance(values, list):
            raise ParseError("bpf-lb-list-json", 1, key, "values are not a list")
        fe, slot = _key("bpf-lb-list-json", 1, key, key)
        for v in values:
            out.append(_value("bpf-lb-list-json", 1, f"{key}: {v}", fe, slot, str(v)))
    return out
