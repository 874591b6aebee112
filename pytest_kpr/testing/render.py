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
