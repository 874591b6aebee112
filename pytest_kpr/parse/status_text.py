"""``cilium-dbg status`` and ``status --verbose`` (text).

Top level: ``Key:<spaces>value`` lines from an outer tabwriter; ``--verbose`` adds indented blocks
under some keys (trees, lists), kept as raw lines. The ``KubeProxyReplacement Details:`` block is
parsed field by field (v1.16: ``Graceful Termination``; v1.17: also ``Annotations``; v1.18+: no
``Graceful Termination``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .common import numbered
from .errors import ParseError
from .health import ModulesHealth, modules_health_from_status

_TOP = re.compile(r"([A-Za-z][A-Za-z0-9 /()&.-]*?):(?:[ \t]+(.*?))?[ \t]*")
_KPR_LINE = re.compile(r"(True|False)(?:\s+\[(.*)\])?")
_DETAIL = re.compile(r"  ([A-Z][A-Za-z0-9/ ]*?):(?:\s+(.*?))?\s*")
_SUB = re.compile(r"    ([A-Z][A-Za-z ]*?):\s+(.*?)\s*")
_ITEM = re.compile(r"  - (\S.*?)\s*")
_SERVICE = re.compile(r"  - (ClusterIP|NodePort|LoadBalancer|externalIPs|HostPort):\s+(Enabled|Disabled)( \(Range: \d+-\d+\))?\s*")

_DETAIL_KEYS = {
    "Status", "Socket LB", "Socket LB Tracing", "Socket LB Coverage", "Devices", "Mode", "Backend Selection",
    "Session Affinity", "Graceful Termination", "NAT46/64 Support", "XDP Acceleration", "Services", "Annotations",
}


@dataclass(frozen=True)
class KprDetails:
    status: str | None  # True | False; None in a snippet without the Status line
    socket_lb: str | None = None
    socket_lb_tracing: str | None = None
    socket_lb_coverage: str | None = None  # Full | Hostns-only
    devices: str | None = None
    mode: str | None = None
    dsr_dispatch: str | None = None
    backend_selection: str | None = None
    session_affinity: str | None = None
    graceful_termination: str | None = None
    nat46_64: str | None = None
    xdp_acceleration: str | None = None
    services: dict[str, str] = field(default_factory=dict)
    #: annotation names; () when printed as "(n/a)" (KPR off); None when not printed (v1.16)
    annotations: tuple[str, ...] | None = None


@dataclass(frozen=True)
class StatusText:
    fields: dict[str, str]
    blocks: dict[str, tuple[str, ...]]
    kube_proxy_replacement: str | None  # True | False, from the one-liner
    kpr_devices: str | None
    kpr_details: KprDetails | None
    modules_health: ModulesHealth | None = None  # see parse/health.py


def _parse_details(lines: list[tuple[int, str]], require_status: bool = True) -> KprDetails:
    values: dict[str, str] = {}
    services: dict[str, str] = {}
    annotations: list[str] | None = None
    section: str | None = None
    for lineno, line in lines:
        m = _SERVICE.fullmatch(line)
        if m and section == "Services":
            services[m.group(1)] = m.group(2) + (m.group(3) or "")
            continue
        m = _ITEM.fullmatch(line)
        if m and section == "Annotations" and annotations is not None:
            annotations.append(m.group(1))
            continue
        if m and section == "NAT46/64 Support":
            continue
        m = _SUB.fullmatch(line)
        if m and section in ("Mode", "NAT46/64 Support"):
            if m.group(1) == "DSR Dispatch Mode":
                values["DSR Dispatch Mode"] = m.group(2)
            continue
        m = _DETAIL.fullmatch(line)
        if m and m.group(1) in _DETAIL_KEYS:
            key, value = m.group(1), (m.group(2) or "")
            section = key
            if key == "Annotations":
                if value and value != "(n/a)":
                    raise ParseError("status", lineno, line, "unexpected Annotations value")
                annotations = []
            elif key == "Services":
                if value:
                    raise ParseError("status", lineno, line, "unexpected Services value")
            else:
                values[key] = value
            continue
        raise ParseError("status", lineno, line, "unrecognised KubeProxyReplacement Details line")
    if require_status and "Status" not in values:
        raise ParseError("status", lines[0][0] if lines else 1, lines[0][1] if lines else "", "KubeProxyReplacement Details without Status")
    return KprDetails(
        status=values.get("Status"),
        socket_lb=values.get("Socket LB"),
        socket_lb_tracing=values.get("Socket LB Tracing"),
        socket_lb_coverage=values.get("Socket LB Coverage"),
        devices=values.get("Devices"),
        mode=values.get("Mode"),
        dsr_dispatch=values.get("DSR Dispatch Mode"),
        backend_selection=values.get("Backend Selection"),
        session_affinity=values.get("Session Affinity"),
        graceful_termination=values.get("Graceful Termination"),
        nat46_64=values.get("NAT46/64 Support"),
        xdp_acceleration=values.get("XDP Acceleration"),
        services=services,
        annotations=tuple(annotations) if annotations is not None else None,
    )


def parse_status_text(text: str) -> StatusText:
    """Plain or verbose status; also accepts the KPR Details block alone (as in ``| grep -A``)."""
    fields: dict[str, str] = {}
    field_lines: dict[str, int] = {}
    blocks: dict[str, list[tuple[int, str]]] = {}
    current: str | None = None
    for lineno, line in numbered(text):
        if not line.strip():
            current = None
            continue
        if line[0] in " \t":
            if current is None:
                if line.startswith("  Annotations:") or line.startswith("  - "):
                    # a snippet of the Details block without its heading
                    current = "KubeProxyReplacement Details"
                    blocks.setdefault(current, [])
                else:
                    raise ParseError("status", lineno, line, "indented line outside any section")
            blocks[current].append((lineno, line))
            continue
        m = _TOP.fullmatch(line)
        if m is None:
            raise ParseError("status", lineno, line)
        key, value = m.group(1), m.group(2) or ""
        fields[key] = value
        field_lines[key] = lineno
        current = key
        blocks.setdefault(key, [])
    kpr = fields.get("KubeProxyReplacement")
    kpr_mode = kpr_devices = None
    if kpr is not None:
        m = _KPR_LINE.fullmatch(kpr.strip())
        if m is None:
            raise ParseError("status", 1, kpr, "KubeProxyReplacement is neither True nor False")
        kpr_mode, kpr_devices = m.group(1), m.group(2)
    details = None
    det_lines = blocks.get("KubeProxyReplacement Details")
    if det_lines:
        if "KubeProxyReplacement Details" in fields and fields["KubeProxyReplacement Details"]:
            raise ParseError("status", det_lines[0][0], det_lines[0][1], "unexpected value after 'KubeProxyReplacement Details:'")
        snippet = "KubeProxyReplacement Details" not in fields
        details = _parse_details(det_lines, require_status=not snippet)
    health = modules_health_from_status(fields.get("Modules Health"), blocks.get("Modules Health", []), field_lines.get("Modules Health", 1))
    return StatusText(
        fields=fields,
        blocks={k: tuple(line for _, line in v) for k, v in blocks.items() if v},
        kube_proxy_replacement=kpr_mode,
        kpr_devices=kpr_devices,
        kpr_details=details,
        modules_health=health,
    )


def modules_health(status: StatusText) -> ModulesHealth | None:
    """The ``Modules Health`` section: tally (plain status, and verbose after PR #46739) and tree leaves (verbose)."""
    return status.modules_health
