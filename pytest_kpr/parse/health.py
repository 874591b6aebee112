"""Module health: ``Modules Health`` in ``cilium-dbg status [--verbose]`` and ``cilium-dbg shell -- db/show health``.

Formats (cilium/cilium ``pkg/health/client/modules.go`` @ 21d690e1, PR #46739; ``pkg/hive/health/types/types.go``):

- plain ``status``: ``Modules Health:<tab>Stopped(N) Degraded(N) OK(N)``;
- ``status --verbose`` up to PR #46739: no tally, the tree either starts on the ``Modules Health:`` line
  (every tree line padded to the outer tabwriter's column) or on the line after it; after #46739: the
  tally on that line and the tree below, indented by two spaces;
- tree leaves: ``<name>   [OK|DEGRADED|STOPPED] <message> (<age>, x<count>)`` -- never the error text;
- ``db/show health``: a statedb table ``Module Component Level Message Error LastOK UpdatedAt Count``
  whose Component and Error cells may be empty (cut at the header's column starts, like statedb).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .common import cut_table
from .errors import ParseError

_TALLY = re.compile(r"Stopped\((\d+)\) Degraded\((\d+)\) OK\((\d+)\)")
_LEVELS = ("OK", "DEGRADED", "STOPPED")
_META = re.compile(r"\[(OK|DEGRADED|STOPPED)\] (?P<message>.*) \((?P<age>[^(),]+), x(?P<count>\d+)\)")
_AGE = re.compile(r"n/a|(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h|d|y))+")
_NODE = re.compile(r"(?P<name>\S+)(?: +(?P<meta>\[(?:OK|DEGRADED|STOPPED)\] .*))?")
_BRANCH = re.compile(r"((?:│   |    )*)(├── |└── )?(.*)")


@dataclass(frozen=True)
class HealthLeaf:
    path: tuple[str, ...]  # module ID parts then component parts, e.g. ("agent", "controlplane", ..., "job-x")
    level: str  # OK | DEGRADED | STOPPED (as the tree prints it)
    message: str
    age: str
    count: int

    @property
    def id(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class ModulesHealth:
    #: the tally; None where the agent printed only the tree (``--verbose`` before PR #46739)
    stopped: int | None
    degraded: int | None
    ok: int | None
    leaves: tuple[HealthLeaf, ...]  # () without --verbose

    @property
    def degraded_leaves(self) -> tuple[HealthLeaf, ...]:
        return tuple(leaf for leaf in self.leaves if leaf.level == "DEGRADED")


def parse_tally(value: str, lineno: int = 1) -> tuple[int, int, int] | None:
    m = _TALLY.fullmatch(value.strip())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def parse_tree(lines: list[tuple[int, str]], fmt: str = "status") -> tuple[HealthLeaf, ...]:
    """Tree lines as printed (any common indentation). A node is either a reporter leaf (with its
    ``[LEVEL] ... (age, xN)``) or has children, never both (``upsertTree`` moves a parent's own report
    to a ``[reporter]`` child); depth grows by one level at a time."""
    body = [(n, line.rstrip()) for n, line in lines if line.strip()]
    if not body:
        return ()
    indent = min(len(line) - len(line.lstrip(" ")) for _, line in body)
    nodes: list[tuple[int, str, int, str, str | None]] = []
    for lineno, raw in body:
        b = _BRANCH.fullmatch(raw[indent:])
        assert b is not None
        prefix, connector, rest = b.group(1), b.group(2), b.group(3)
        if connector is None and prefix:
            raise ParseError(fmt, lineno, raw, "a tree line without ├── or └──")
        depth = len(prefix) // 4 + (1 if connector else 0)
        node = _NODE.fullmatch(rest)
        if node is None:
            raise ParseError(fmt, lineno, raw, "not a module health tree line")
        if depth > (nodes[-1][2] + 1 if nodes else 0):
            raise ParseError(fmt, lineno, raw, "the tree skips a level")
        nodes.append((lineno, raw, depth, node.group("name"), node.group("meta")))
    leaves: list[HealthLeaf] = []
    path: list[str] = []
    for i, (lineno, raw, depth, name, meta) in enumerate(nodes):
        del path[depth:]
        path.append(name)
        has_children = i + 1 < len(nodes) and nodes[i + 1][2] > depth
        if has_children:
            if meta is not None:
                raise ParseError(fmt, lineno, raw, "a health reporter with children (reporters are leaves)")
            continue
        m = _META.fullmatch(meta or "")
        if m is None or not _AGE.fullmatch(m.group("age")):
            raise ParseError(fmt, lineno, raw, "a tree leaf without [OK|DEGRADED|STOPPED] <message> (<age>, x<count>)")
        leaves.append(HealthLeaf(tuple(path), m.group(1), m.group("message"), m.group("age"), int(m.group("count"))))
    return tuple(leaves)


def modules_health_from_status(value: str | None, block: list[tuple[int, str]], value_lineno: int = 1) -> ModulesHealth | None:
    """From ``status``'s ``Modules Health:`` value and the indented lines under it."""
    if value is None:
        return None
    tally = parse_tally(value)
    lines = list(block)
    if tally is None and value.strip():
        # the pre-#46739 verbose layout: the tree's root is on the "Modules Health:" line itself
        if not _NODE.fullmatch(value.strip()) or value.strip().startswith("["):
            raise ParseError("status", value_lineno, f"Modules Health: {value}",
                             "expected Stopped(N) Degraded(N) OK(N) or the module tree")
        root_indent = min((len(line) - len(line.lstrip(" ")) for _, line in lines if line.strip()), default=0)
        lines = [(value_lineno, " " * root_indent + value.strip())] + lines
    leaves = parse_tree(lines)
    if tally is None and not leaves:
        raise ParseError("status", value_lineno, f"Modules Health: {value}", "neither a tally nor a module tree")
    s, d, o = tally if tally is not None else (None, None, None)
    return ModulesHealth(s, d, o, leaves)


# -- db/show health --------------------------------------------------------------------------------

HEALTH_COLUMNS = ("Module", "Component", "Level", "Message", "Error", "LastOK", "UpdatedAt", "Count")
HEALTH_LEVELS = frozenset({"OK", "Degraded", "Stopped"})
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


@dataclass(frozen=True)
class HealthStatus:
    module: str  # dotted module ID, e.g. agent.controlplane.loadbalancer-reflectors
    component: str  # dotted component path ("" for the module itself)
    level: str  # OK | Degraded | Stopped
    message: str
    error: str
    last_ok: str
    updated_at: str
    count: int

    @property
    def id(self) -> str:
        return f"{self.module}.{self.component}" if self.component else self.module


def parse_db_health(text: str) -> list[HealthStatus]:
    """``db/show health``. The reflector's Error is ``errors.Join`` of its errors, which separates them with
    newlines: such a cell continues on the following lines (the last of which carries LastOK, UpdatedAt and
    Count), and the parser joins it back."""
    fmt = "db-health"
    out: list[HealthStatus] = []
    open_row: dict[str, str] | None = None  # a row whose Error continues on the next line
    for lineno, line, cells in cut_table(text, fmt, HEALTH_COLUMNS, "Module", continuation=lambda c: c.get("Level") not in HEALTH_LEVELS):
        if cells.get("Level") not in HEALTH_LEVELS:
            if open_row is None:
                raise ParseError(fmt, lineno, line, f"unknown level {cells.get('Level')!r}")
            parts = re.split(r" {2,}", line.strip())
            if len(parts) >= 4 and _RFC3339.fullmatch(parts[-3]) and _RFC3339.fullmatch(parts[-2]) and parts[-1].isdigit():
                open_row["Error"] += "\n" + "  ".join(parts[:-3])
                open_row.update(LastOK=parts[-3], UpdatedAt=parts[-2], Count=parts[-1])
                out.append(_health_status(fmt, lineno, line, open_row))
                open_row = None
            else:
                open_row["Error"] += "\n" + line.strip()
            continue
        if open_row is not None:
            raise ParseError(fmt, lineno, line, "a new row while the previous row's Error is still open")
        missing = [c for c in ("Module", "Level") if not cells.get(c)]
        if missing:
            raise ParseError(fmt, lineno, line, f"empty {', '.join(missing)}")
        if "LastOK" in cells and not cells["LastOK"] and not cells.get("UpdatedAt") and not cells.get("Count"):
            open_row = dict(cells)  # the Error continues on the next line
            continue
        out.append(_health_status(fmt, lineno, line, cells))
    if open_row is not None:
        raise ParseError(fmt, lineno if out or open_row else 1, text.splitlines()[-1] if text.strip() else "", "the last row's Error never ends")
    return out


def _health_status(fmt: str, lineno: int, line: str, cells: dict[str, str]) -> HealthStatus:
    for col in ("LastOK", "UpdatedAt"):
        if col in cells and not _RFC3339.fullmatch(cells[col]):
            raise ParseError(fmt, lineno, line, f"{col} is not an RFC 3339 time: {cells[col]!r}")
    count = cells.get("Count", "0")
    if not count.isdigit():
        raise ParseError(fmt, lineno, line, f"Count is not a number: {count!r}")
    return HealthStatus(cells["Module"], cells.get("Component", ""), cells["Level"], cells.get("Message", ""), cells.get("Error", ""),
                        cells.get("LastOK", ""), cells.get("UpdatedAt", ""), int(count))
