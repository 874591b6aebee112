"""Render Cilium CLI output in the real formats (docs/cilium-formats.md), from plain values.

Used by the fake cluster's agents and by the parsers' round-trip (Hypothesis) tests. Each renderer
follows the printer in Cilium's source: tabwriter padding, trailing spaces and all.
"""

from __future__ import annotations

import json
from typing import Any, Mapping


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
            {"acceleration": "Disabled", "algorithm": algorithm, "dsrMode": "IP Option/Extension", "enabled": True,
             "lutSize": 16381, "mode": nodeport_mode, "portMax": 32767, "portMin": 30000}
            if kpr else {"acceleration": "Disabled", "algorithm": algorithm, "mode": nodeport_mode}
        ),
        "sessionAffinity": enabled(kpr),
        "socketLB": enabled(kpr and socket_lb),
        "socketLBTracing": enabled(kpr and socket_lb),
    }
    if not hostns_only:
        del features["bpfSocketLBHostnsOnly"]  # omitempty
    doc = {
        "attach-mode": attach_mode,
        "cilium": {"msg": f"{version} (v{version}-2b3dd4e5)", "state": "Ok" if healthy else "Failure"},
        "datapath-mode": "veth",
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


def ct_line(e: dict, version: tuple[int, int] = (1, 18)) -> str:
    """One ``bpf ct list global`` line in the given minor's format, trailing space included."""
    flags = " ".join(e.get("flag_names", ()))
    flags = f"[ {flags} ]" if flags else "[ ]"
    remaining = f" (remaining: {e['remaining']} sec(s))" if e.get("remaining") is not None else ""
    related = "related " if e.get("related") else ""
    head = (
        f"{e['proto']} {e['dir']} {e['src_ip']}:{e['src_port']} -> {e['dst_ip']}:{e['dst_port']} {related}"
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


def status_verbose_kpr(*, kpr: bool, socket_lb: bool, hostns_only: bool, nodeport_mode: str, algorithm: str, devices: str,
                       version: tuple[int, int], attach_mode: str = "tcx", health_errors: tuple[str, ...] = ()) -> str:
    """The parts of ``status --verbose`` the suites read: KPR one-liner, Attach Mode, Modules Health, KPR Details."""
    on = "Enabled"
    lines = [
        "KVStore:                 Disabled   ",
        "Kubernetes:              Ok         1.34 (v1.34.0) [linux/amd64]",
        f"KubeProxyReplacement:    {'True' if kpr else 'False'}   [{devices} (Direct Routing)]" if kpr else "KubeProxyReplacement:    False",
        f"Attach Mode:             {'TCX' if attach_mode == 'tcx' else 'Legacy TC'}",
        f"Modules Health:          Stopped(0) Degraded({1 if health_errors else 0}) OK(42)",
        *([
            "  agent",
            "  └── controlplane",
            "      └── loadbalancer-reflectors",
            "          └── k8s-reflector",
            "              └── job-reflect-services-endpoints  [DEGRADED] Failure processing services: " + "; ".join(health_errors) + " (3s, x1)",
        ] if health_errors else []),
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
