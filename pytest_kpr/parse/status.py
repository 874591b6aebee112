"""``cilium-dbg status -o json`` and ``cilium-dbg version``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .common import load_json, numbered
from .errors import ParseError


@dataclass(frozen=True)
class KprFeatures:
    """The agent's ``kube-proxy-replacement`` block. Disabled features are omitted in JSON (``{}``)."""

    mode: str  # "True" | "False"
    socket_lb: bool
    socket_lb_hostns_only: bool
    socket_lb_tracing: bool
    nodeport: bool
    nodeport_mode: str  # SNAT | DSR | Hybrid | ""
    lb_algorithm: str  # Random | Maglev | ""
    external_ips: bool
    host_port: bool
    session_affinity: bool
    devices: tuple[str, ...]
    #: nodePort.acceleration: Disabled | Native | Best-Effort ("" when absent); status --verbose prints it as is as
    #: "XDP Acceleration" (cilium/cilium pkg/client/client.go FormatStatusResponse: `xdp = np.Acceleration`)
    acceleration: str = ""

    @property
    def enabled(self) -> bool:
        return self.mode == "True"

    @property
    def socket_lb_coverage(self) -> str:
        """As ``status --verbose`` prints it: ``Full`` or ``Hostns-only`` (``Disabled`` without socket LB)."""
        if not self.socket_lb:
            return "Disabled"
        return "Hostns-only" if self.socket_lb_hostns_only else "Full"


@dataclass(frozen=True)
class StatusJSON:
    cilium_state: str  # Ok | Warning | Failure | Disabled | "" when absent
    cilium_msg: str
    kpr: KprFeatures
    attach_mode: str  # tc | tcx | ""
    datapath_mode: str
    raw: dict[str, Any]
    #: routing.inter-host-routing-mode: Native | Tunnel | "" (cilium/cilium api/v1/models/routing.go@015ff256, omitempty)
    routing_mode: str = ""

    @property
    def healthy(self) -> bool:
        return self.cilium_state == "Ok"


def _enabled(d: Any) -> bool:
    return bool(isinstance(d, dict) and d.get("enabled"))


def parse_status_json(text: str) -> StatusJSON:
    data = load_json(text, "status-json")
    if not isinstance(data, dict):
        raise ParseError("status-json", 1, text.splitlines()[0] if text else "", "expected a JSON object")
    kpr = data.get("kube-proxy-replacement") or {}
    if not isinstance(kpr, dict):
        raise ParseError("status-json", 1, str(kpr)[:80], "kube-proxy-replacement is not an object")
    f = kpr.get("features") or {}
    np = f.get("nodePort") or {}
    cilium = data.get("cilium") or {}
    mode = str(kpr.get("mode", "False"))
    if mode not in ("True", "False"):
        raise ParseError("status-json", 1, mode, "kube-proxy-replacement.mode is neither True nor False")
    return StatusJSON(
        cilium_state=str(cilium.get("state", "")),
        cilium_msg=str(cilium.get("msg", "")),
        kpr=KprFeatures(
            mode=mode,
            socket_lb=_enabled(f.get("socketLB")),
            socket_lb_hostns_only=bool(f.get("bpfSocketLBHostnsOnly", False)),
            socket_lb_tracing=_enabled(f.get("socketLBTracing")),
            nodeport=_enabled(np),
            nodeport_mode=str(np.get("mode", "")),
            lb_algorithm=str(np.get("algorithm", "")),
            external_ips=_enabled(f.get("externalIPs")),
            host_port=_enabled(f.get("hostPort")),
            session_affinity=_enabled(f.get("sessionAffinity")),
            devices=tuple(str(d) for d in kpr.get("devices") or ()),
            acceleration=str(np.get("acceleration", "")),
        ),
        attach_mode=str(data.get("attach-mode", "")),
        datapath_mode=str(data.get("datapath-mode", "")),
        raw=data,
        routing_mode=str((data.get("routing") or {}).get("inter-host-routing-mode", "")) if isinstance(data.get("routing"), dict) else "",
    )


_VERSION_LINE = re.compile(r"^(Client|Daemon): (\S+)(?: (\S+))?(?: .*)?$")


@dataclass(frozen=True)
class VersionInfo:
    client: str
    daemon: str | None


def parse_version(text: str) -> VersionInfo:
    """``cilium-dbg version``: ``Client: 1.18.2 2b3d... 2025-... go version go1.24 linux/amd64`` and ``Daemon: ...``."""
    client = daemon = None
    for lineno, line in numbered(text, "version"):
        line = line.rstrip()
        if not line:
            continue
        m = _VERSION_LINE.match(line)
        if not m:
            raise ParseError("version", lineno, line)
        if m.group(1) == "Client":
            client = m.group(2)
        else:
            daemon = m.group(2)
    if client is None:
        raise ParseError("version", 1, text.splitlines()[0] if text.strip() else "", "no 'Client:' line")
    return VersionInfo(client=client, daemon=daemon)
