"""``cilium-dbg shell -- db/show frontends|services|backends`` tables and their ``-f json`` streams.

Tables are tabwriter output whose cells can be empty (PortName, RedirectTo, Error), so rows are cut at
the column start positions of the header, as statedb itself does (``splitHeaderLine``). Any subset of
the known columns is accepted (``--columns``, or the ``db/cmp`` tables of Cilium's testdata).
JSON is a stream of indented objects, not an array.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .addr import L3n4, l3n4_from_parts, parse_l3n4
from .common import check_json, cut_table, row_matches
from .errors import ParseError

FRONTEND_COLUMNS = ("Address", "Type", "ServiceName", "PortName", "Backends", "RedirectTo", "Status", "Since", "Error")
FRONTEND_TYPES = frozenset({"ClusterIP", "NodePort", "ExternalIPs", "HostPort", "LoadBalancer", "LocalRedirect"})
STATUS_KINDS = frozenset({"Pending", "Refreshing", "Done", "Error"})
_SINCE = re.compile(r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h|d|y))+|now|")


@dataclass(frozen=True)
class Frontend:
    address: L3n4
    type: str | None
    service: str | None  # ns/name (cluster/ns/name for clustermesh remotes)
    port_name: str | None
    backends: tuple[L3n4, ...] | None
    more_backends: int  # the "+ N more ..." count
    redirect_to: str | None
    status: str | None  # Pending | Refreshing | Done | Error (lower-cased in JSON output of kpr parse)
    since: str | None
    error: str | None
    id: int | None = None  # JSON only


def _backend_cell(fmt: str, lineno: int, line: str, cell: str) -> tuple[tuple[L3n4, ...], int]:
    more = 0
    m = re.fullmatch(r"(.*?)(?: \+ (\d+) more \.\.\.)?", cell)
    assert m
    if m.group(2):
        more = int(m.group(2))
    addrs = []
    for part in filter(None, (p.strip() for p in m.group(1).split(","))):
        # v1.17's experimental tables print each backend with its state: "10.244.1.1:80/TCP (active)"
        part = re.sub(r" \((?:active|terminating|terminating-not-serving|quarantined|maintenance)\)$", "", part)
        a = parse_l3n4(part)
        if a is None:
            raise ParseError(fmt, lineno, line, f"bad backend {part!r}")
        addrs.append(a)
    return tuple(addrs), more


def parse_frontends_table(text: str) -> list[Frontend]:
    fmt = "db-frontends"
    out = []
    for lineno, line, cells in cut_table(text, fmt, FRONTEND_COLUMNS, "Address", table="frontends"):
        addr = parse_l3n4(cells["Address"])
        if addr is None:
            raise ParseError(fmt, lineno, line, f"bad frontend address {cells['Address']!r}")
        typ = cells.get("Type")
        if typ is not None and typ not in FRONTEND_TYPES:
            raise ParseError(fmt, lineno, line, f"unknown frontend type {typ!r}")
        status = cells.get("Status")
        if status is not None and status not in STATUS_KINDS:
            raise ParseError(fmt, lineno, line, f"unknown status {status!r}")
        since = cells.get("Since")
        if since is not None and not _SINCE.fullmatch(since):
            raise ParseError(fmt, lineno, line, f"bad Since duration {since!r}")
        error = cells.get("Error")
        if error and status not in (None, "Error"):
            raise ParseError(fmt, lineno, line, "Error text on a frontend whose Status is not Error")
        backends, more = (None, 0)
        if "Backends" in cells:
            backends, more = _backend_cell(fmt, lineno, line, cells["Backends"])
        out.append(
            Frontend(
                address=addr,
                type=typ,
                service=cells.get("ServiceName") or None,
                port_name=cells.get("PortName") or None,
                backends=backends,
                more_backends=more,
                redirect_to=cells.get("RedirectTo") or None,
                status=status,
                since=since or None,
                error=error or None,
            )
        )
    return out


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def json_stream(text: str, fmt: str) -> list[dict]:
    """Decode back-to-back JSON objects (statedb's ``-f json``)."""
    dec = json.JSONDecoder(parse_constant=_no_constant)
    i, n = 0, len(text)
    out: list[dict] = []
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return out
        try:
            obj, i = dec.raw_decode(text, i)
            check_json(obj)
        except RecursionError:
            raise ParseError(fmt, text.count("\n", 0, i) + 1, "", "invalid JSON (nested too deeply)") from None
        except ValueError as e:
            lineno = text.count("\n", 0, getattr(e, "pos", i)) + 1
            lines = text.splitlines()
            line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""  # the input may end right after a newline
            raise ParseError(fmt, lineno, line, f"invalid JSON ({getattr(e, 'msg', e)})") from None
        if not isinstance(obj, dict):
            raise ParseError(fmt, text.count("\n", 0, i) + 1, str(obj)[:80], "expected a JSON object")
        out.append(obj)


def _json_addr(d: dict, fmt: str) -> L3n4:
    try:
        ip, proto, port = d["AddrCluster"], d.get("Protocol"), int(d["Port"])
    except (KeyError, TypeError, ValueError) as e:
        raise ParseError(fmt, 1, json.dumps(d)[:120], f"bad address ({e})") from None
    a = l3n4_from_parts(ip, port, proto, bool(d.get("Scope")))
    if a is None:
        raise ParseError(fmt, 1, json.dumps(d)[:120], "bad address")
    return a


def parse_frontends_json(text: str) -> list[Frontend]:
    fmt = "db-frontends-json"
    out = []
    for obj in json_stream(text, fmt):
        status = obj.get("Status") or {}
        kind = status.get("kind")
        if kind not in STATUS_KINDS:
            raise ParseError(fmt, 1, json.dumps(status)[:120], f"unknown status kind {kind!r}")
        out.append(
            Frontend(
                address=_json_addr(obj.get("Address") or {}, fmt),
                type=obj.get("Type"),
                service=obj.get("ServiceName"),
                port_name=obj.get("PortName") or None,
                backends=tuple(_json_addr(b.get("Address") or {}, fmt) for b in obj.get("Backends") or []),
                more_backends=0,
                redirect_to=obj.get("RedirectTo") or None,
                status=kind,
                since=status.get("updated-at"),
                error=status.get("error") or None,
                id=obj.get("ID"),
            )
        )
    return out


# -- lb/maps-dump ------------------------------------------------------------------------------------

_DUMP = re.compile(r"(BE|REV|SVC|AFF|SRCRANGE|MAGLEV): (.*)")
_KV = re.compile(r"([A-Za-z]+)=(\S*)")
_MAGLEV = re.compile(r"ID=(\S+) INNER=\[((?:[^()\s,]+\(\d+\)(?:, )?)*)\]")
_INNER = re.compile(r"([^()\s,]+)\((\d+)\)")


def maglev_slots(entry: "MapsDumpEntry") -> dict[str, int]:
    """A MAGLEV entry's backend IDs with their slot counts."""
    return {i: int(n) for i, n in _INNER.findall(entry.fields.get("INNER", ""))}


@dataclass(frozen=True)
class MapsDumpEntry:
    kind: str  # BE | REV | SVC | AFF | SRCRANGE | MAGLEV
    fields: dict[str, str]


def parse_lb_maps_dump(text: str) -> list[MapsDumpEntry]:
    """``cilium-dbg shell -- lb/maps-dump`` (v1.18+; documented as not stable): ``KIND: K=V K=V ...``."""
    out = []
    for lineno, line, m in row_matches(text, "lb-maps-dump", _DUMP, rstrip=True):
        if m.group(1) == "MAGLEV":  # "ID=<rev NAT ID> INNER=[<backend ID>(<slots>), ...]" (pkg/loadbalancer/maps DumpLBMaps)
            mg = _MAGLEV.fullmatch(m.group(2))
            if mg is None:
                raise ParseError("lb-maps-dump", lineno, line, "bad MAGLEV line")
            out.append(MapsDumpEntry("MAGLEV", {"ID": mg.group(1), "INNER": mg.group(2)}))
            continue
        parts = m.group(2).split(" ")
        fields: dict[str, str] = {}
        last = None
        for part in parts:
            kv = _KV.fullmatch(part)
            if kv is None and last == "FLAGS" and part and "=" not in part:
                # a flag name holds a space: cilium/cilium pkg/loadbalancer/tests/testdata/source-ranges.txtar@0725568c
                # expects `SVC: ... FLAGS=ClusterIP+non-routable+check source-range`
                fields[last] += " " + part
                continue
            if kv is None:
                raise ParseError("lb-maps-dump", lineno, line, f"bad field {part!r}")
            last = kv.group(1)
            fields[last] = kv.group(2)
        out.append(MapsDumpEntry(m.group(1), fields))
    return out


@dataclass(frozen=True)
class StateService:
    name: str
    source: str
    ext_traffic_policy: str
    int_traffic_policy: str
    port_names: dict[str, int]


def parse_services_json(text: str) -> list[StateService]:
    fmt = "db-services-json"
    out = []
    for obj in json_stream(text, fmt):
        if "Name" not in obj:
            raise ParseError(fmt, 1, json.dumps(obj)[:120], "service without Name")
        out.append(StateService(obj["Name"], obj.get("Source", ""), obj.get("ExtTrafficPolicy", ""), obj.get("IntTrafficPolicy", ""), dict(obj.get("PortNames") or {})))
    return out


@dataclass(frozen=True)
class StateBackend:
    address: L3n4
    services: tuple[str, ...]
    node: str | None


def parse_backends_json(text: str) -> list[StateBackend]:
    fmt = "db-backends-json"
    out = []
    for obj in json_stream(text, fmt):
        instances = obj.get("Instances")
        if not isinstance(instances, list):
            raise ParseError(fmt, 1, json.dumps(obj)[:120], "backend without Instances")
        nodes = {i.get("v", {}).get("NodeName") for i in instances} - {None, ""}
        out.append(
            StateBackend(
                _json_addr(obj.get("Address") or {}, fmt),
                tuple(i.get("k", {}).get("ServiceName", "") for i in instances),
                next(iter(nodes)) if len(nodes) == 1 else None,
            )
        )
    return out
