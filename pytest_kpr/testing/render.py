"""Render Cilium CLI output in the real formats (docs/cilium-formats.md), from plain values.

Used by the fake cluster's agents and by the parsers' round-trip (Hypothesis) tests. Each renderer
follows the printer in Cilium's source: tabwriter padding, trailing spaces and all.
"""

from __future__ import annotations

import ipaddress
import json
import struct
from typing import Any, Mapping

from ..parse.bpftool_map import MapEntry


def tabwrite(rows: list[list[str]], minwidth: int = 5, padding: int = 3, trailing: bool = True) -> str:
    """Go's ``text/tabwriter`` with ``flags=0``: every cell is terminated by a tab, so every cell is padded,
    including the last one (hence the trailing spaces of real output). Column blocks are simplified to
    one block per table, which is what Cilium's tables produce."""
    widths: dict[int, int] = {}
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths.get(i, 0), len(cell))
    out = []
    for row in rows:
        line = "".join(cell.ljust(max(widths[i] + padding, minwidth)) for i, cell in enumerate(row))
        out.append(line if trailing else line.rstrip())
    return "\n".join(out) + "\n"


def version_text(version: str, commit: str = "2b3dd4e5", date: str = "2025-09-16T12:00:00+00:00") -> str:
    line = f"{version} {commit} {date} go version go1.24.6 linux/amd64"
    return f"Client: {line}\nDaemon: {line}\n"


def status_json(
    *,
    healthy: bool = True,
    version: str = "1.18.12",
    kpr: bool = True,
    socket_lb: bool = True,
    hostns_only: bool = False,
    nodeport_mode: str = "SNAT",
    algorithm: str = "Random",
    attach_mode: str = "tcx",
    devices: tuple[tuple[str, str], ...] = (("eth0", "172.18.0.2"),),
    routing_mode: str = "Tunnel",
    datapath_mode: str = "veth",
    acceleration: str = "Disabled",
) -> str:
    """``cilium-dbg status -o json``: ``json.MarshalIndent(.., "", "  ")``; disabled features are ``{}``."""

    def enabled(flag: bool) -> dict[str, Any]:
        return {"enabled": True} if flag else {}

    features: dict[str, Any] = {
        "bpfSocketLBHostnsOnly": hostns_only,
        "externalIPs": enabled(kpr),
        "gracefulTermination": enabled(kpr),
        "hostPort": enabled(kpr),
        "hostReachableServices": {},
        "nat46X64": {"gateway": {}, "service": {}},
        "nodePort": (
            {"acceleration": acceleration, "algorithm": algorithm, "dsrMode": "IP Option/Extension", "enabled": True,
             "lutSize": 16381, "mode": nodeport_mode, "portMax": 32767, "portMin": 30000}
            if kpr else {"acceleration": acceleration, "algorithm": algorithm, "mode": nodeport_mode}
        ),
        "sessionAffinity": enabled(kpr),
        "socketLB": enabled(kpr and socket_lb),
        "socketLBTracing": enabled(kpr and socket_lb),
    }
    if not hostns_only:
        del features["bpfSocketLBHostnsOnly"]  # omitempty
    doc = {
        # api/v1/models/routing.go: inter-host-routing-mode Native|Tunnel, intra-host-routing-mode BPF|Legacy, tunnel-protocol
        "routing": {"inter-host-routing-mode": routing_mode, "intra-host-routing-mode": "BPF",
                    **({"tunnel-protocol": "vxlan"} if routing_mode == "Tunnel" else {})},
        "attach-mode": attach_mode,
        "cilium": {"msg": f"{version} (v{version}-2b3dd4e5)", "state": "Ok" if healthy else "Failure"},
        "datapath-mode": datapath_mode,
        "kube-proxy-replacement": {
            "deviceList": [{"ip": ["", ip], "name": name} for name, ip in devices],
            "devices": [name for name, _ in devices],
            "directRoutingDevice": devices[0][0] if devices else "",
            "features": features,
            "mode": "True" if kpr else "False",
        },
        "kubernetes": {"k8s-api-versions": ["EndpointSliceOrEndpoint"], "state": "Ok", "msg": "1.34 (v1.34.0) [linux/amd64]"},
    }
    return json.dumps(doc, indent=2) + "\n"


def config_all(read_only: Mapping[str, str], read_write: Mapping[str, str]) -> str:
    """``cilium-dbg config -a``: sorted ``%-34s: %v`` lines under the two section headers."""
    lines = ["#### Read-only configurations ####"]
    lines += [f"{k:<34}: {v}" for k, v in sorted(read_only.items())]
    lines.append("##### Read-write configurations #####")
    lines += [f"{k:<34}: {v}" for k, v in sorted(read_write.items())]
    return "\n".join(lines) + "\n"


# -- LB tables ---------------------------------------------------------------------------------------


def addr(ip: str, port: int, proto: str | None, internal: bool = False) -> str:
    """``L3n4Addr.String()``: v1.16 passes proto=None (no ``/PROTO``)."""
    s = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
    if proto:
        s += f"/{proto}"
    if internal:
        s += "/i"
    return s


def service_list(rows: list[tuple[int, str, str, list[tuple[str, str]]]]) -> str:
    """``cilium-dbg service list``: (id, frontend, type, [(backend, state)]) rows, sorted by id."""
    table = [["ID", "Frontend", "Service Type", "Backend"]]
    for sid, fe, typ, backends in sorted(rows, key=lambda r: r[0]):
        if not backends:
            table.append([str(sid), fe, typ, ""])
            continue
        for i, (be, state) in enumerate(backends, 1):
            cell = f"{i} => {be} ({state})"
            table.append([str(sid), fe, typ, cell] if i == 1 else ["", "", "", cell])
    return tabwrite(table)


def service_list_json(entries: list[dict]) -> str:
    """``service list -o json`` (v1.18 shape: ``status.realized`` is ``spec``)."""
    out = []
    for e in entries:
        spec = {
            "backend-addresses": [
                {k: v for k, v in {"ip": b["ip"], "nodeName": b.get("node"), "port": b["port"], "preferred": True,
                                   "protocol": b.get("protocol"), "state": b.get("state", "active"), "weight": 100}.items() if v is not None}
                for b in e["backends"]
            ],
            "flags": {"extTrafficPolicy": "Cluster", "intTrafficPolicy": "Cluster", "name": e["name"], "namespace": e["namespace"],
                      "trafficPolicy": "Cluster", "type": e["type"]},
            "frontend-address": {k: v for k, v in {"ip": e["ip"], "port": e["port"], "protocol": e.get("protocol"), "scope": "external"}.items() if v is not None},
            "id": e["id"],
        }
        out.append({"spec": spec, "status": {"realized": spec}})
    return json.dumps(out, indent=2) + "\n"


def lb_list(rows: list[tuple[str, str]]) -> str:
    """``cilium-dbg bpf lb list``: (key, value) rows under the header, tabwriter-padded."""
    return tabwrite([["SERVICE ADDRESS", "BACKEND ADDRESS (REVNAT_ID) (SLOT)"]] + [[k, v] for k, v in rows])


def lb_master_value(revnat: int, flags: list[str], v6: bool = False) -> str:
    return f"{'[::]' if v6 else '0.0.0.0'}:0 ({revnat}) (0) [{', '.join(flags)}] "


def ct_addr(ip: str, port: int, version: tuple[int, int]) -> str:
    """A conntrack key's address: IPv6 bracketed from 1.19 (pkg/maps/ctmap/types.go@d93bee93 ``" OUT ["`` ... ``"]:"``; which
    release began it is not established: the fake takes the NatPort era, 1.19), bare before."""
    return f"[{ip}]:{port}" if ":" in ip and version >= (1, 19) else f"{ip}:{port}"


def ct_line(e: dict, version: tuple[int, int] = (1, 18)) -> str:
    """One ``bpf ct list global`` line in the given minor's format, trailing space included."""
    flags = " ".join(e.get("flag_names", ()))
    flags = f"[ {flags} ]" if flags else "[ ]"
    remaining = f" (remaining: {e['remaining']} sec(s))" if e.get("remaining") is not None else ""
    related = "related " if e.get("related") else ""
    head = (
        f"{e['proto']} {e['dir']} {ct_addr(e['src_ip'], e['src_port'], version)} -> {ct_addr(e['dst_ip'], e['dst_port'], version)} {related}"
        f"expires={e.get('expires', 100)}{remaining} Packets={e.get('packets', 0)} Bytes={e.get('bytes', 0)} "
        f"RxFlagsSeen=0x{e.get('rx_flags_seen', 0):02x} LastRxReport={e.get('last_rx_report', 0)} "
        f"TxFlagsSeen=0x{e.get('tx_flags_seen', 0):02x} LastTxReport={e.get('last_tx_report', 0)} "
        f"Flags=0x{e.get('flags', 0):04x} {flags} RevNAT={e.get('rev_nat', 0)} SourceSecurityID={e.get('source_security_id', 0)} "
    )
    if version < (1, 18):
        return head + f"IfIndex={e.get('ifindex', 0)} BackendID={e.get('backend_id', 0)} "
    if version < (1, 19):
        return head + f"BackendID={e.get('backend_id', 0)} "
    return head + f"BackendID={e.get('backend_id', 0)} NatPort={e.get('nat_port', 0)} "


def ct_list(maps: list[list[dict]], version: tuple[int, int] = (1, 18)) -> str:
    """Maps dumped back to back, each followed by a blank line (``fmt.Println(out)``)."""
    return "".join("".join(ct_line(e, version) + "\n" for e in entries) + "\n" for entries in maps)


def frontends_table(rows: list[dict], with_redirect: bool = True) -> str:
    """``db/show frontends`` (statedb tabwriter: minwidth 5, padding 3)."""
    cols = ["Address", "Type", "ServiceName", "PortName", "Backends"] + (["RedirectTo"] if with_redirect else []) + ["Status", "Since", "Error"]
    table = [cols]
    for r in rows:
        bes = r.get("backends", [])
        cell = ", ".join(bes[:5]) + (f" + {len(bes) - 5} more ..." if len(bes) > 5 else "")
        row = [r["address"], r["type"], r["service"], r.get("port_name", ""), cell]
        if with_redirect:
            row.append(r.get("redirect_to", ""))
        row += [r.get("status", "Done"), r.get("since", "1m"), r.get("error", "")]
        table.append(row)
    return tabwrite(table, minwidth=5, padding=3)


def bpf_metrics_list(rows: list[tuple[str, str, int, int, int, str]]) -> str:
    """``cilium-dbg bpf metrics list`` (v1.16+, cilium-dbg/cmd/bpf_metrics_list.go): a tabwriter (minwidth 5, padding 3)
    with REASON DIRECTION PACKETS BYTES LINE FILE, rows sorted as strings; nothing on stdout when the map is empty."""
    if not rows:
        return ""
    cells = sorted([r[0], r[1], str(r[2]), str(r[3]), str(r[4]), r[5]] for r in rows)
    # the row format ends in "\n", not "\t": the last cell is not padded
    return tabwrite([["REASON", "DIRECTION", "PACKETS", "BYTES", "LINE", "FILE"], *cells], trailing=False)


def map_list(rows: list[tuple[str, int]]) -> str:
    return tabwrite([["Name", "Num entries", "Num errors", "Cache enabled"]] + [[n, str(c), "0", "true" if c else "false"] for n, c in rows])


def endpoint_json(ep: dict) -> str:
    doc = [{
        "id": ep["id"],
        "spec": {},
        "status": {
            "external-identifiers": {"k8s-namespace": ep["namespace"], "k8s-pod-name": ep["pod"], "pod-name": f"{ep['namespace']}/{ep['pod']}"},
            "identity": {"id": ep.get("identity", 12345)},
            "networking": {
                "addressing": [{"ipv4": ep["ipv4"]}],
                "container-interface-name": "eth0",
                "interface-index": ep["ifindex"],
                "interface-name": ep["ifname"],
            },
            "state": "ready",
        },
    }]
    return json.dumps(doc, indent=2) + "\n"


HEALTH_TIME = "2026-11-30T12:00:00Z"
NEVER = "0001-01-01T00:00:00Z"


def _tree(rows: list[dict]) -> list[str]:
    """The module health tree (pkg/health/client upsertTree/tree.go): the first root only, reporters as
    leaves ``name   [LEVEL] message (age, xN)`` -- the error is never printed."""
    root: dict = {}
    for r in sorted(rows, key=lambda r: f"{r['module']}.{r['component']}"):
        node = root
        parts = r["module"].split(".") + ([c for c in r["component"].split(".") if c] if r["component"] else [])
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = f"[{r['level'].upper()}] {r['message']} ({r.get('age', '3s')}, x{r.get('count', 1)})"
    name, top = next(iter(root.items()))
    lines = [name]

    def walk(node: dict, prefix: str) -> None:
        items = list(node.items())
        for i, (k, v) in enumerate(items):
            last = i == len(items) - 1
            if isinstance(v, dict):
                lines.append(prefix + ("└── " if last else "├── ") + k)
                walk(v, prefix + ("    " if last else "│   "))
            else:
                lines.append(prefix + ("└── " if last else "├── ") + k + "   " + v)

    walk(top, "")
    return lines


def health_tally(rows: list[dict]) -> str:
    n = {lvl: sum(1 for r in rows if r["level"] == lvl and not r.get("hidden_from_tally")) for lvl in ("Stopped", "Degraded", "OK")}
    return f"Stopped({n['Stopped']}) Degraded({n['Degraded']}) OK({n['OK']})"


def modules_health(rows: list[dict], verbose: bool, layout: str = "pre-46739") -> list[str]:
    """``Modules Health`` as ``cilium-dbg status`` prints it: the tally without --verbose; with it, the tree
    starting on the same line and padded to the outer column (before PR #46739) or the tally and a tree
    indented by two spaces (after it)."""
    pad = " " * 25
    if not verbose:
        return ["Modules Health:".ljust(25) + health_tally(rows)]
    tree = _tree(rows)
    if layout == "pre-46739":
        return ["Modules Health:".ljust(25) + tree[0]] + [pad + line for line in tree[1:]]
    return ["Modules Health:   " + health_tally(rows)] + ["  " + line for line in tree]


def health_table(rows: list[dict]) -> str:
    """``db/show health``: Module Component Level Message Error LastOK UpdatedAt Count (types.Status.TableRow).
    A joined error (errors.Join separates with newlines) continues on the next lines, as a tabwriter prints a
    cell that holds a newline."""
    table = [["Module", "Component", "Level", "Message", "Error", "LastOK", "UpdatedAt", "Count"]]
    for r in sorted(rows, key=lambda r: f"{r['module']}.{r['component']}"):
        err = r.get("error", "").split("\n")
        tail = [r.get("last_ok", HEALTH_TIME), r.get("updated_at", HEALTH_TIME), str(r.get("count", 1))]
        head = [r["module"], r["component"], r["level"], r["message"], err[0]]
        if len(err) == 1:
            table.append(head + tail)
            continue
        table.append(head)
        table += [[e] for e in err[1:-1]]
        table.append([err[-1]] + tail)
    return tabwrite(table, minwidth=5, padding=3)


def status_text(*, kpr: bool, socket_lb: bool, hostns_only: bool, nodeport_mode: str, algorithm: str, devices: str,
                version: tuple[int, int], attach_mode: str = "tcx", health: list[dict] | None = None, verbose: bool = True) -> str:
    """``cilium-dbg status [--verbose]``, the parts the suites read: KPR one-liner, Attach Mode, Modules Health
    and (verbose only) the KubeProxyReplacement Details."""
    on = "Enabled"
    lines = [
        "KVStore:                 Disabled   ",
        "Kubernetes:              Ok         1.34 (v1.34.0) [linux/amd64]",
        f"KubeProxyReplacement:    {'True' if kpr else 'False'}   [{devices} (Direct Routing)]" if kpr else "KubeProxyReplacement:    False",
        f"Attach Mode:             {'TCX' if attach_mode == 'tcx' else 'Legacy TC'}",
        *modules_health(health or [], verbose),
    ]
    if not verbose:
        return "\n".join(lines) + "\n"
    lines += [
        "KubeProxyReplacement Details:",
        f"  Status:               {'True' if kpr else 'False'}",
        f"  Socket LB:            {'Enabled' if socket_lb else 'Disabled'}",
        f"  Socket LB Tracing:    {'Enabled' if socket_lb else 'Disabled'}",
        f"  Socket LB Coverage:   {'Hostns-only' if hostns_only else 'Full'}",
    ]
    if kpr:
        lines.append(f"  Devices:              {devices} (Direct Routing)")
        lines.append(f"  Mode:                 {nodeport_mode}")
        lines.append(f"  Backend Selection:    {algorithm}")
    lines.append(f"  Session Affinity:     {on if kpr else 'Disabled'}")
    if version < (1, 18):
        lines.append(f"  Graceful Termination: {on}")
    lines.append("  NAT46/64 Support:     Disabled")
    lines.append("  Services:")
    state = on if kpr else "Disabled"
    lines += [
        "  - ClusterIP:      Enabled",
        f"  - NodePort:       {state} (Range: 30000-32767) " if kpr else "  - NodePort:       Disabled",
        f"  - LoadBalancer:   {state} ",
        f"  - externalIPs:    {state} ",
        f"  - HostPort:       {state}",
    ]
    if version >= (1, 17):
        lines.append("  Annotations:" if kpr else "  Annotations:          (n/a)")
        if kpr:
            lines += ["  - service.cilium.io/node", "  - service.cilium.io/src-ranges-policy", "  - service.cilium.io/type"]
    return "\n".join(lines) + "\n"


# -- bpftool map dump ----------------------------------------------------------------------------------------------------


def map_dump_json(entries: "list[MapEntry]") -> str:
    """``bpftool map dump pinned PATH -j`` as bpftool prints it (compact), for the fake cluster (parse.bpftool_map)."""
    return json.dumps([{"key": [f"0x{b:02x}" for b in e.key], "value": [f"0x{b:02x}" for b in e.value]} for e in entries],
                      separators=(",", ":"))


def affinity_entry(client: str, rev_nat_id: int, backend_id: int, last_used: int, rev_nat_order: str = "network") -> "MapEntry":
    """An affinity map entry for ``client`` as Cilium's per-packet path writes it (netns_cookie 0; the layout:
    rules.datapath.SRC_AFFINITY_MAP; the rev NAT ID in network byte order, SRC_REV_NAT_ORDER). ``rev_nat_order`` "host"
    writes it in the host's order instead: fault affinity_rev_nat_host_order."""
    addr = ipaddress.ip_address(client).packed
    union = addr.ljust(8 if len(addr) == 4 else 16, b"\0")
    rev_nat = struct.pack("!H" if rev_nat_order == "network" else "<H", rev_nat_id)
    return MapEntry(union + rev_nat + struct.pack("<BBI", 0, 0, 0), struct.pack("<QII", last_used, backend_id, 0))
