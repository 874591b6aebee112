"""``cilium-dbg bpf metrics list``: the datapath's forward and drop counters, per reason and direction (and, since
v1.16, per source line and file), and which drop reasons rose between two readings.

The printer (cilium/cilium ``cilium-dbg/cmd/bpf_metrics_list.go``, read at 03a87723): a tabwriter with padding 3,
``fmt.Fprintf(w, "%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n", reasonTitle, directionTitle, packetsTitle, bytesTitle, lineTitle, fileTitle)``
and one row per (reason, direction, line, file); ``No entries found.`` goes to stderr with nothing on stdout. Before
v1.16 (PR #30972) there were four columns: REASON DIRECTION PACKETS BYTES. A reason may contain single spaces
("Service backend not found"); cells are at least three spaces apart (the tabwriter's padding), so a run of two or
more spaces separates them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .common import numbered
from .errors import ParseError

_HEADER = re.compile(r"REASON\s+DIRECTION\s+PACKETS\s+BYTES(\s+LINE\s+FILE)?\s*")
_CELLS = re.compile(r" {2,}|\t")

#: reasons that count forwarded packets, not drops: cilium/cilium pkg/monitor/api/drop.go (read at ed49278a)
#: ``// DropMin numbers less than this are non-drop reason codes`` / ``var DropMin uint8 = 130``; the codes below 130
#: are these (0 "Success", 3 "Interface", 4 "Interface Decrypted", 5-8 "LB, sock cgroup: ...", 9-10 fragments)
NOT_DROPS = frozenset({"Success", "Interface", "Interface Decrypted", "LB, sock cgroup: No backend slot entry found",
                       "LB, sock cgroup: No backend entry found", "LB, sock cgroup: Reverse entry update failed",
                       "LB, sock cgroup: Reverse entry stale", "Fragmented packet", "Fragmented packet entry update failed"})


@dataclass(frozen=True)
class MetricRow:
    reason: str
    direction: str
    packets: int
    bytes: int
    line: int | None = None
    file: str | None = None

    @property
    def is_drop(self) -> bool:
        return self.reason not in NOT_DROPS


def parse_bpf_metrics_list(text: str) -> list[MetricRow]:
    out = []
    with_place = None
    for lineno, line in numbered(text):
        if not line.strip():
            continue
        header = _HEADER.fullmatch(line)
        if header:
            with_place = header.group(1) is not None
            continue
        if with_place is None:
            raise ParseError("bpf-metrics-list", lineno, line, "expected the REASON DIRECTION PACKETS BYTES header first")
        cells = _CELLS.split(line.strip())
        if len(cells) != (6 if with_place else 4) or not cells[2].isdigit() or not cells[3].isdigit() \
                or (with_place and not cells[4].isdigit()):
            raise ParseError("bpf-metrics-list", lineno, line)
        out.append(MetricRow(cells[0], cells[1].lower(), int(cells[2]), int(cells[3]),
                             int(cells[4]) if with_place else None, cells[5] if with_place else None))
    return out


@dataclass(frozen=True)
class DropRise:
    node: str
    reason: str
    direction: str
    packets: int
    where: str | None  # "bpf_lxc.c:1286" (v1.16+)

    def __str__(self) -> str:
        place = f", {self.where}" if self.where else ""
        return f"{self.reason} x{self.packets} on {self.node} ({self.direction}{place})"


def drops_that_rose(before: dict[str, list[MetricRow]], after: dict[str, list[MetricRow]]) -> list[DropRise]:
    """Per node, the drop counters that went up from ``before`` to ``after`` (a node missing before: from zero), the
    largest first. Forward counters (:data:`NOT_DROPS`) are left out."""
    out = []
    for node, rows in after.items():
        was = {(r.reason, r.direction, r.line, r.file): r.packets for r in before.get(node, [])}
        for r in rows:
            rose = r.packets - was.get((r.reason, r.direction, r.line, r.file), 0)
            if r.is_drop and rose > 0:
                out.append(DropRise(node, r.reason, r.direction, rose, f"{r.file}:{r.line}" if r.file else None))
    return sorted(out, key=lambda d: (-d.packets, d.node, d.reason))
