"""The registry of formats: ``kpr parse FORMAT`` and any code that needs "parse this as X" by name.

Each entry turns raw text into plain JSON-able data with stable keys (documented on the kpr parse reference page).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from .addr import L3n4
from .agent_misc import parse_endpoint_json, parse_map_list
from .config import parse_config
from .ct import CtEntry, ct_list_json, parse_ct_list
from .health import parse_db_health
from .lb import LbEntry, parse_lb_list, parse_lb_list_json
from .metrics import parse_bpf_metrics_list
from .node import (
    RuleDump,
    Socket,
    parse_bpftool_cgroup_tree,
    parse_bpftool_net,
    parse_conntrack,
    parse_iptables_save,
    parse_netstat,
    parse_nft_ruleset,
    parse_ss,
    parse_tc_filter,
)
from .probe import parse_hold_log, parse_probe_json
from .services import Service, parse_service_list, parse_service_list_json
from .statedb import Frontend, parse_backends_json, parse_frontends_json, parse_frontends_table, parse_lb_maps_dump, parse_services_json
from .status import parse_status_json, parse_version
from .status_text import parse_status_text


def plain(obj: Any) -> Any:
    """Dataclasses -> dicts, L3n4 -> its string, tuples -> lists."""
    if isinstance(obj, L3n4):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name != "raw"}
    if isinstance(obj, (list, tuple)):
        return [plain(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    return obj


def _services(items: list[Service]) -> list[dict[str, Any]]:
    out = []
    for s in items:
        d: dict[str, Any] = {
            "id": s.id,
            "frontend": str(s.frontend),
            "type": s.type,
            "backends": [{"address": str(b.address), "state": b.state} for b in s.backends],
        }
        if s.remote:
            d["remote"] = True
        if s.name is not None:
            d["name"] = s.name
            d["namespace"] = s.namespace
        out.append(d)
    return out


def _lb(items: list[LbEntry]) -> list[dict[str, Any]]:
    out = []
    for e in items:
        d: dict[str, Any] = {
            "frontend": str(e.frontend),
            "slot": e.slot,
            "backend": str(e.backend) if e.backend is not None else None,
            "revnat": e.revnat,
            "flags": list(e.flags),
        }
        if e.l7_proxy_port is not None:
            d["l7_proxy_port"] = e.l7_proxy_port
        if e.missing_backend_id is not None:
            d["missing_backend_id"] = e.missing_backend_id
        out.append(d)
    return out


def _ct(items: list[CtEntry]) -> list[dict[str, Any]]:
    out = []
    for e in items:
        out.append(
            {
                "proto": e.proto,
                "dir": e.dir,
                "src": e.src,
                "dst": e.dst,
                "flags": list(e.flag_names),
                "flags_value": e.flags,
                "rev_nat": e.rev_nat,
                "backend_id": e.backend_id,
                "source_security_id": e.source_security_id,
                "related": e.related,
                "expires": e.expires,
                "remaining": e.remaining,
                "packets": e.packets,
                "bytes": e.bytes,
                "rx_flags_seen": e.rx_flags_seen,
                "last_rx_report": e.last_rx_report,
                "tx_flags_seen": e.tx_flags_seen,
                "last_tx_report": e.last_tx_report,
                "ifindex": e.ifindex,
                "nat_port": e.nat_port,
            }
        )
    return out


def _frontends(items: list[Frontend]) -> list[dict[str, Any]]:
    out = []
    for f in items:
        d: dict[str, Any] = {"address": str(f.address), "type": f.type, "service": f.service, "status": f.status, "error": f.error}
        d.update(
            {
                "port_name": f.port_name,
                "backends": [str(b) for b in f.backends] if f.backends is not None else None,
                "more_backends": f.more_backends,
                "redirect_to": f.redirect_to,
                "since": f.since,
            }
        )
        if f.id is not None:
            d["id"] = f.id
        out.append(d)
    return out


def _rules(dump: RuleDump) -> dict[str, Any]:
    return {
        "source": dump.source,
        "tables": list(dump.tables),
        "chains": list(dump.chains),
        "rules": dump.rules,
        "counts": dump.counts(),
        "lines": list(dump.lines),
    }


def _sockets(items: list[Socket]) -> list[dict[str, Any]]:
    return [{"state": s.state, "local": s.local, "peer": s.peer, "recv_q": s.recv_q, "send_q": s.send_q, "process": s.process} for s in items]


FORMATS: dict[str, tuple[Callable[[str], Any], Callable[[Any], Any], str]] = {
    "service-list": (parse_service_list, _services, "cilium-dbg service list"),
    "service-list-json": (parse_service_list_json, _services, "cilium-dbg service list -o json"),
    "bpf-lb-list": (parse_lb_list, _lb, "cilium-dbg bpf lb list"),
    "bpf-lb-list-json": (parse_lb_list_json, _lb, "cilium-dbg bpf lb list -o json"),
    "bpf-ct-list": (parse_ct_list, _ct, "cilium-dbg bpf ct list global [-d]"),
    "bpf-metrics-list": (parse_bpf_metrics_list, plain, "cilium-dbg bpf metrics list"),
    "status": (parse_status_text, plain, "cilium-dbg status [--verbose]"),
    "status-json": (parse_status_json, plain, "cilium-dbg status -o json"),
    "version": (parse_version, plain, "cilium-dbg version"),
    "config": (parse_config, plain, "cilium-dbg config -a"),
    "map-list": (parse_map_list, plain, "cilium-dbg map list"),
    "endpoint-json": (parse_endpoint_json, plain, "cilium-dbg endpoint get <id> -o json"),
    "db-frontends": (parse_frontends_table, _frontends, "cilium-dbg shell -- db/show frontends"),
    "db-frontends-json": (parse_frontends_json, _frontends, "cilium-dbg shell -- db/show -f json frontends"),
    "db-services-json": (parse_services_json, plain, "cilium-dbg shell -- db/show -f json services"),
    "db-backends-json": (parse_backends_json, plain, "cilium-dbg shell -- db/show -f json backends"),
    "db-health": (parse_db_health, plain, "cilium-dbg shell -- db/show health"),
    "lb-maps-dump": (parse_lb_maps_dump, plain, "cilium-dbg shell -- lb/maps-dump"),
    "bpftool-net": (parse_bpftool_net, lambda xs: [dict(plain(x), program=x.program) for x in xs], "bpftool net show [dev X]"),
    "bpftool-cgroup-tree": (parse_bpftool_cgroup_tree, plain, "bpftool cgroup tree"),
    "tc-filter": (parse_tc_filter, plain, "tc filter show dev X ingress"),
    "iptables-save": (parse_iptables_save, _rules, "iptables-save, iptables-nft-save, iptables-legacy-save"),
    "nft": (parse_nft_ruleset, _rules, "nft list ruleset"),
    "ss": (parse_ss, _sockets, "ss -Htln, ss -tn"),
    "netstat": (parse_netstat, _sockets, "busybox netstat -tn"),
    "conntrack": (parse_conntrack, plain, "conntrack -L"),
    "probe-json": (parse_probe_json, plain, "kpr probe ... --json"),
    "hold-log": (parse_hold_log, plain, "the log of kpr probe hold"),
}


#: Formats that can be very large and write each list entry's JSON text straight from the parser;
#: the result must equal ``[json.dumps(e) for e in parse_as(fmt, text)]`` (tested on every fixture).
JSON_ENTRIES: dict[str, Callable[[str], list[str]]] = {"bpf-ct-list": ct_list_json}


def parse_as(fmt: str, text: str) -> Any:
    """Parse ``text`` as ``fmt`` and return the JSON-able result. KeyError for an unknown format."""
    parser, shape, _ = FORMATS[fmt]
    return shape(parser(text))
