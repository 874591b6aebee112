"""A probe's result: what ``kpr probe ... --json`` prints (traffic.probes makes it) and what the runner reads back
(parse.probe.parse_probe_json), one type for both."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class Verdict(str, enum.Enum):
    # raw SYN
    ACCEPTED = "accepted"
    RESET = "reset"
    ICMP_UNREACHABLE = "icmp-unreachable"
    # connect()
    CONNECTED = "connected"
    REFUSED = "refused"
    UNREACHABLE = "unreachable"
    # both
    TIMEOUT = "timeout"
    NO_ROUTE = "no-route"
    INCONCLUSIVE = "inconclusive"
    # http
    HTTP = "http"  # an HTTP response arrived (see http_code)
    # udp
    ANSWERED = "answered"  # a datagram came back (see reply_from: the address recvfrom() reported)

    def __str__(self) -> str:
        return self.value


#: ICMP destination-unreachable codes, for readable reports.
ICMP_CODES = {0: "net-unreachable", 1: "host-unreachable", 2: "protocol-unreachable", 3: "port-unreachable",
              9: "net-prohibited", 10: "host-prohibited", 13: "admin-prohibited"}


@dataclass(frozen=True)
class ProbeResult:
    probe: str  # syn | connect | http | hold
    target: str  # ip:port or URL
    verdict: Verdict
    elapsed_ms: float
    icmp_type: int | None = None
    icmp_code: int | None = None
    errno: int | None = None
    errno_name: str | None = None
    http_code: int | None = None
    source: str | None = None  # ip:port the probe sent from
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """One flat JSON object: the probe's own fields (``peer``, ``socket_peer``, ``reply_from``, ...) beside the common
        ones, where the suites and the fake cluster read them."""
        d = asdict(self)
        d.update(d.pop("extra"))
        d["verdict"] = self.verdict.value
        d["elapsed_ms"] = round(self.elapsed_ms, 3)
        return {k: v for k, v in d.items() if v is not None and v != {} and v != ""}

    def explain(self) -> str:
        parts = [f"{self.probe} {self.target}: {self.verdict.value} in {self.elapsed_ms:.1f} ms"]
        if self.icmp_type is not None:
            parts.append(f"ICMP type {self.icmp_type} code {self.icmp_code} ({ICMP_CODES.get(self.icmp_code or -1, '?')})")
        if self.errno_name:
            parts.append(self.errno_name)
        if self.http_code is not None:
            parts.append(f"HTTP {self.http_code}")
        if self.detail:
            parts.append(self.detail)
        return "; ".join(parts)


#: the verdicts a probe prints
VERDICTS = frozenset(v.value for v in Verdict)


@dataclass(frozen=True)
class ProbeAnswer:
    """What a suite keeps of one probe: where it went, its verdict, and for connect() the errno and how long it took."""
    target: str
    verdict: str
    errno: str | None = None
    elapsed_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "errno": self.errno, "elapsed_ms": self.elapsed_ms}
