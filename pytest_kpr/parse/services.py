"""``cilium-dbg service list`` (text) and ``service list -o json``.

Text: ``ID  Frontend  Service Type  Backend`` with one row per service and one extra line per extra
backend (``\\t\\t\\t%d => %s (%s)\\t``); a service without backends has an empty Backend cell. It is a
tabwriter table, so in real (unpasted) output every line has the same width and ends with spaces.

JSON: ``[]models.Service``; since v1.18 one entry per frontend, ``status.realized`` identical to
``spec``, ``preferred: true`` on every backend.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .addr import L3n4, l3n4_from_parts, parse_l3n4
from .common import decide_strict, load_json, numbered
from .errors import ParseError

SERVICE_TYPES = frozenset({"ClusterIP", "NodePort", "ExternalIPs", "HostPort", "LoadBalancer", "LocalRedirect"})
BACKEND_STATES = frozenset({"active", "terminating", "terminating-not-serving", "quarantined", "maintenance"})

_HEADER = re.compile(r"ID\s+Frontend\s+Service Type\s+Backend\s*")
_BACKEND = r"(\d+) => (\S+) \(([a-z-]+)\)( \(preferred\))?"
_ROW = re.compile(r"(\d+)\s+(\S+)\s+([A-Za-z]+(?: \(Remote\))?)(?:\s+" + _BACKEND + r")?\s*")
_CONT = re.compile(r"\s+" + _BACKEND + r"\s*")


@dataclass(frozen=True)
class Backend:
    address: L3n4
    state: str
    preferred: bool = False
    index: int | None = None
    node: str | None = None


@dataclass(frozen=True)
class Service:
    id: int
    frontend: L3n4
    type: str
    backends: tuple[Backend, ...]
    remote: bool = False
    name: str | None = None  # JSON only
    namespace: str | None = None  # JSON only

    @property
    def active_backends(self) -> tuple[Backend, ...]:
        return tuple(b for b in self.backends if b.state == "active")


def _backend(fmt: str, lineno: int, line: str, idx: str, addr: str, state: str, preferred: str | None) -> Backend:
    a = parse_l3n4(addr)
    if a is None:
        raise ParseError(fmt, lineno, line, f"bad backend address {addr!r}")
    if state not in BACKEND_STATES:
        raise ParseError(fmt, lineno, line, f"unknown backend state {state!r}")
    return Backend(a, state, preferred is not None, int(idx))


def parse_service_list(text: str, strict: bool | None = None) -> list[Service]:
    strict = decide_strict(text, strict)
    rows: list[tuple[int, str, str, bool, list[Backend]]] = []
    width: int | None = None
    for lineno, line in numbered(text):
        if not line.strip():
            if strict and line:
                raise ParseError("service-list", lineno, line, "line cut off (only padding)")
            continue
        if strict:
            if not line.endswith(" "):
                raise ParseError("service-list", lineno, line, "line cut off (tabwriter rows end with padding)")
            if width is None:
                width = len(line)
            elif len(line) != width:
                raise ParseError("service-list", lineno, line, f"row width {len(line)} differs from the table's {width}: cut off or garbled")
        if _HEADER.fullmatch(line):
            continue
        m = _ROW.fullmatch(line)
        if m:
            fe = parse_l3n4(m.group(2))
            typ = m.group(3)
            remote = typ.endswith(" (Remote)")
            base = typ.removesuffix(" (Remote)")
            if fe is None:
                raise ParseError("service-list", lineno, line, f"bad frontend address {m.group(2)!r}")
            if base not in SERVICE_TYPES:
                raise ParseError("service-list", lineno, line, f"unknown service type {base!r}")
            backends = []
            if m.group(4) is not None:
                backends.append(_backend("service-list", lineno, line, m.group(4), m.group(5), m.group(6), m.group(7)))
            rows.append((int(m.group(1)), m.group(2), base, remote, backends))
            continue
        m = _CONT.fullmatch(line)
        if m and line[0] in " \t":
            if not rows:
                raise ParseError("service-list", lineno, line, "backend line before any service")
            rows[-1][4].append(_backend("service-list", lineno, line, *m.groups()))
            continue
        raise ParseError("service-list", lineno, line)
    out = []
    for sid, fe_text, typ, remote, backends in rows:
        fe = parse_l3n4(fe_text)
        assert fe is not None
        out.append(Service(sid, fe, typ, tuple(backends), remote))
    return out


def _addr_from_json(d: dict, where: str) -> L3n4:
    try:
        ip = d["ip"]
        port = int(d.get("port", 0))
        proto = d.get("protocol") or None
        internal = d.get("scope") == "internal"
    except (KeyError, TypeError, ValueError) as e:
        raise ParseError("service-list-json", 1, json.dumps(d)[:120], f"{where}: {e}") from None
    a = l3n4_from_parts(ip, port, proto, internal)
    if a is None:
        raise ParseError("service-list-json", 1, json.dumps(d)[:120], f"{where}: bad address")
    return a


def parse_service_list_json(text: str) -> list[Service]:
    data = load_json(text, "service-list-json")
    if not isinstance(data, list):
        raise ParseError("service-list-json", 1, text.splitlines()[0] if text else "", "expected a JSON array")
    out = []
    for i, item in enumerate(data):
        spec = (item or {}).get("spec") if isinstance(item, dict) else None
        if not isinstance(spec, dict) or "frontend-address" not in spec:
            raise ParseError("service-list-json", 1, json.dumps(item)[:120], f"entry {i} has no spec.frontend-address")
        flags = spec.get("flags") or {}
        typ = flags.get("type", "")
        if typ not in SERVICE_TYPES:
            raise ParseError("service-list-json", 1, json.dumps(flags)[:120], f"entry {i}: unknown service type {typ!r}")
        backends = []
        for j, b in enumerate(spec.get("backend-addresses") or []):
            state = b.get("state", "active")
            if state not in BACKEND_STATES:
                raise ParseError("service-list-json", 1, json.dumps(b)[:120], f"entry {i}: unknown backend state {state!r}")
            backends.append(Backend(_addr_from_json(b, f"entry {i} backend {j}"), state, bool(b.get("preferred")), j + 1, b.get("nodeName")))
        out.append(
            Service(
                id=int(spec.get("id", 0)),
                frontend=_addr_from_json(spec["frontend-address"], f"entry {i} frontend"),
                type=typ,
                backends=tuple(backends),
                remote=bool(flags.get("cluster")),
                name=flags.get("name"),
                namespace=flags.get("namespace"),
            )
        )
    return out
