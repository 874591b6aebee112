"""Output of ``kpr probe ... --json`` (one JSON object) and the holder's log (JSON lines)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.probe import VERDICTS, ProbeResult, Verdict
from .common import numbered, strict_json
from .errors import ParseError


def parse_probe_json(text: str) -> ProbeResult:
    lines = [(n, line) for n, line in numbered(text) if line.strip()]
    if len(lines) != 1:
        raise ParseError("probe-json", lines[1][0] if len(lines) > 1 else 1, lines[1][1] if len(lines) > 1 else "", "expected exactly one JSON line")
    lineno, line = lines[0]
    try:
        d: dict[str, Any] = strict_json(line)  # type: ignore[assignment]
    except ValueError as e:
        raise ParseError("probe-json", lineno, line, f"invalid JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(d, dict) or d.get("verdict") not in VERDICTS or "elapsed_ms" not in d:
        raise ParseError("probe-json", lineno, line, "not a probe result (verdict, elapsed_ms)")
    for key, kinds in _PROBE_TYPES.items():  # what kpr probe --json prints: anything else is not its output
        if key in d and d[key] is not None and (not isinstance(d[key], kinds) or isinstance(d[key], bool)):
            raise ParseError("probe-json", lineno, line, f"{key} must be {' or '.join(k.__name__ for k in kinds)}, got {type(d[key]).__name__}")
    if not 0 <= float(d["elapsed_ms"]) < 1e12:
        raise ParseError("probe-json", lineno, line, f"elapsed_ms {d['elapsed_ms']!r} is not a duration")
    known = {"probe", "target", "verdict", "elapsed_ms", "icmp_type", "icmp_code", "errno", "errno_name", "http_code", "source", "detail"}
    return ProbeResult(str(d.get("probe", "")), str(d.get("target", "")), Verdict(d["verdict"]), float(d["elapsed_ms"]),
                       d.get("icmp_type"), d.get("icmp_code"), d.get("errno"), d.get("errno_name"), d.get("http_code"),
                       d.get("source"), str(d.get("detail") or ""), {k: v for k, v in d.items() if k not in known})


_PROBE_TYPES: dict[str, tuple[type, ...]] = {"probe": (str,), "target": (str,), "elapsed_ms": (int, float), "icmp_type": (int,),
                                            "icmp_code": (int,), "errno": (int,), "errno_name": (str,), "http_code": (int,),
                                            "source": (str,), "detail": (str,)}


@dataclass(frozen=True)
class HoldEvent:
    event: str  # connected | error
    target: str
    local: str | None = None
    app_peer: str | None = None
    detail: str | None = None


def parse_hold_log(text: str) -> list[HoldEvent]:
    """Every JSON line the holder printed (one per start: it restarts after a failed connect)."""
    out = []
    for lineno, line in numbered(text):
        if not line.strip():
            continue
        try:
            d = strict_json(line)
        except ValueError:
            raise ParseError("hold-log", lineno, line, "not a JSON line") from None
        if not isinstance(d, dict) or d.get("event") not in ("connected", "error"):
            raise ParseError("hold-log", lineno, line, "not a holder event")
        out.append(HoldEvent(d["event"], str(d.get("target", "")), d.get("local"), d.get("app_peer"), d.get("detail")))
    return out
