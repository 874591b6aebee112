"""Run Cilium's load-balancer test scripts against the fake agent.

    python -m pytest_kpr.testing.txtar FILE.txtar...

Cilium tests its load-balancing control plane with script files (cilium/cilium pkg/loadbalancer/tests/testdata/
*.txtar, run by pkg/loadbalancer/tests/script_test.go): each adds Kubernetes objects, starts the agent's cells and
compares what the agent derived -- the ``services``, ``frontends`` and ``backends`` tables (``db/cmp``) and the BPF
maps (``lb/maps-dump``) -- with expected text written by Cilium's developers. This runs each script against
:class:`pytest_kpr.testing.lbcp.Agent` and prints one line per file:

    PASS <file>
    FAIL <file>: <where>: <first difference>
    UNSUPPORTED <file>: <the command, flag or condition the fake does not model>

Exit status 0 when no file FAILs, 1 otherwise (2 on a usage error).

The script language is cilium/hive's (rsc.io/script with a retry prefix): ``[cond]`` prefixes, ``!`` (the command
must fail), ``*`` (retried until it succeeds: the fake is settled by the time a command runs, so once), single-quoted
words, ``$VAR`` expansion. ``db/cmp`` is statedb's CompareCmd (script.go): the expected file's header picks the
columns (case-insensitively) and their positions, rows are compared cell by cell in the table's primary-key order.
A script does not name the Cilium it was written for; two of its markers do: a backends table whose header names
``Service`` (the per-service layout of 2026-03-06) and, for the maps, whether any expected dump holds a wildcard
entry (``:0/ANY``, Cilium 1.19; before it, none).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from .lbcp import Agent, AgentConfig, ConfigError, L3n4
from .lbcp.bpf import Maps
from .lbcp.config import parse_flags
from .lbcp.tables import NodeAddress, backend_json_new

__all__ = ["Outcome", "run_file", "run_text", "main"]


class Unsupported(Exception):
    """The script needs something the fake does not model."""


class ScriptFailure(Exception):
    """A command's check failed: where, and the first difference."""

    def __init__(self, where: str, detail: str):
        super().__init__(f"{where}: {detail}")
        self.where, self.detail = where, detail


@dataclass
class Outcome:
    file: str
    verdict: str  # PASS | FAIL | UNSUPPORTED
    detail: str = ""

    def line(self) -> str:
        return f"{self.verdict} {self.file}" + (f": {self.detail}" if self.detail else "")


def parse_txtar(text: str) -> tuple[str, dict[str, str]]:
    """The script (the comment part of a txtar archive) and its files (``-- name --`` sections)."""
    marker = re.compile(r"^-- (.+?) --$")
    script: list[str] = []
    files: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines(keepends=True):
        m = marker.match(line.rstrip("\r\n"))
        if m:
            current = m.group(1).strip()
            files[current] = ""
        elif current is None:
            script.append(line)
        else:
            files[current] += line
    return "".join(script), files


def split_words(line: str, env: dict[str, str]) -> list[str]:
    """rsc.io/script word splitting: whitespace separates words, single quotes quote ('' is a quote), $NAME and ${NAME}
    expand outside quotes."""
    words: list[str] = []
    cur: list[str] = []
    have = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "'":
            have = True
            j = i + 1
            while True:
                k = line.find("'", j)
                if k < 0:
                    raise Unsupported(f"unterminated quote in {line!r}")
                cur.append(line[j:k])
                if k + 1 < len(line) and line[k + 1] == "'":
                    cur.append("'")
                    j = k + 2
                    continue
                i = k + 1
                break
            continue
        if c.isspace():
            if have or cur:
                words.append("".join(cur))
            cur, have = [], False
            i += 1
            continue
        if c == "$":
            m = re.match(r"\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+)", line[i:])
            if m:
                cur.append(env.get(m.group(1) or m.group(2), ""))
                have = True
                i += m.end()
                continue
        cur.append(c)
        have = True
        i += 1
    if have or cur:
        words.append("".join(cur))
    return words


# -- tabwriter and the statedb table commands --------------------------------------------------------------------------

def tabwrite(rows: list[list[str]], minwidth: int = 5, padding: int = 3) -> str:
    """Go text/tabwriter with statedb's settings (minWidth 5, padding 3, spaces): every cell but a line's last padded to
    its column's widest cell plus the padding."""
    if not rows:
        return ""
    ncols = max(len(r) for r in rows)
    widths = []
    for c in range(ncols - 1):
        w = max((len(r[c]) for r in rows if len(r) > c + 1), default=0) + padding
        widths.append(max(w, minwidth))
    out = []
    for r in rows:
        line = "".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:-1])) + (r[-1] if r else "")
        out.append(line)
    return "\n".join(out) + "\n"


def split_header(line: str) -> tuple[list[str], list[int]]:
    """statedb splitHeaderLine."""
    names, pos = [], []
    start, skip = 0, True
    for i, ch in enumerate(line):
        if ch in " \t":
            if not skip:
                names.append(line[start:i])
                pos.append(start)
                start = -1
            skip = True
        else:
            skip = False
            if start == -1:
                start = i
    if 0 <= start < len(line):
        names.append(line[start:])
        pos.append(start)
    return names, pos


def split_by_positions(line: str, positions: list[int]) -> list[str]:
    """statedb splitByPositions."""
    out = []
    start = 0
    for p in positions[1:]:
        if start >= len(line):
            out.append("")
            start = len(line)
            continue
        out.append(line[start:min(p, len(line))].rstrip(" \t"))
        start = p
    out.append(line[min(start, len(line)):].rstrip(" \t"))
    return out


def join_by_positions(row: list[str], positions: list[int]) -> str:
    out, prev = "", 0
    for cell, p in zip(row, positions):
        out += " " * max(p - prev, 0) + cell
        prev = p + len(cell)
    return out


#: the columns each table has (TableHeader()); the backends table has two layouts
HEADERS = {
    "services": ["Name", "Source", "PortNames", "TrafficPolicy", "Flags"],
    "frontends": ["Address", "Type", "ServiceName", "PortName", "Backends", "RedirectTo", "Status", "Since", "Error"],
    "backends-old": ["Address", "Instances", "Shadows", "NodeName"],
    "backends-new": ["Service", "Address", "Source", "Priority", "State", "PortNames", "Weight", "Zone", "NodeName"],
    "node-addresses": ["Address", "NodePort", "Primary", "DeviceName"],
}
#: columns whose value is a duration since the last change: the fake's clock does not run, so they are not compared
_UNMODELLED_COLUMNS = {"Since"}


def backends_layout(columns: list[str]) -> str:
    lower = {c.lower() for c in columns}
    return "new" if lower & {"service", "source", "priority", "state", "portnames", "weight", "zone"} else "old"


# -- the script engine ---------------------------------------------------------------------------------------------------

@dataclass
class Hive:
    """The script's hive: its flags, the agent (None before ``hive start``... the tables exist from the start), the BPF
    maps, which outlive a hive (the unprivileged harness's fake maps are the test's)."""
    flags: list[str]
    era_wildcards: bool
    maps: Maps = field(default_factory=Maps)
    agent: Agent | None = None

    def config(self, extra: list[str] | None = None) -> AgentConfig:
        cfg = parse_flags(self.flags + (extra or []))
        if not self.era_wildcards:
            cfg.cilium_minor = min(cfg.cilium_minor, (1, 18))
        return cfg


class Script:
    def __init__(self, name: str, text: str):
        self.name = name
        self.script, self.files = parse_txtar(text)
        lines = self.script.splitlines()
        self.flags: list[str] = []
        if lines and lines[0].startswith("#!"):
            self.flags = split_words(lines[0][2:].strip(), {})
        self.env: dict[str, str] = {"WORK": "/tmp/kpr-txtar-work"}
        self.stdout = ""
        dumps = [t for n, t in self.files.items() if "SVC:" in t or "REV:" in t]
        wildcard_era = any(":0/ANY" in t for t in dumps) or not any(
            re.search(r"^SVC: ID=\d+ ADDR=[^ ]+ SLOT=0 .*FLAGS=(ClusterIP|LoadBalancer)", t, re.M) for t in dumps)
        self.hive = Hive(self.flags, wildcard_era)
        self.agent = Agent(self.hive.config(), self.hive.maps)

    # -- running -----------------------------------------------------------------------------------------------------

    def run(self) -> Outcome:
        try:
            self.hive.config()
        except ConfigError as e:
            return Outcome(self.name, "UNSUPPORTED", str(e))
        n = 0
        for raw in self.script.splitlines():
            n += 1
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                if self.line(line) == "stop":
                    break
            except Unsupported as e:
                return Outcome(self.name, "UNSUPPORTED", f"line {n}: {e}")
            except ConfigError as e:
                return Outcome(self.name, "UNSUPPORTED", f"line {n}: {e}")
            except ScriptFailure as e:
                return Outcome(self.name, "FAIL", f"line {n} ({line}): {e}")
            except Exception as e:  # noqa: BLE001 - a bug of the runner or the fake agent: a FAIL in one line, not a traceback
                return Outcome(self.name, "FAIL", f"line {n} ({line}): the runner failed: {type(e).__name__}: {e}")
        return Outcome(self.name, "PASS")

    def line(self, line: str) -> str | None:
        words = split_words(line, self.env)
        negate = retry = maybe = False
        while words and words[0].startswith("["):
            cond = words.pop(0)
            if not cond.endswith("]"):
                raise Unsupported(f"condition {cond}")
            name = cond[1:-1]
            neg = name.startswith("!")
            value = self.condition(name.lstrip("!"))
            if value == neg:
                return None
        while words and words[0][:1] in ("!", "*", "?"):
            w = words.pop(0)
            for ch in w:
                if ch == "!":
                    negate = True
                elif ch == "*":
                    retry = True
                elif ch == "?":
                    maybe = True
                else:
                    words.insert(0, w[w.index(ch):])
                    break
        if not words:
            raise Unsupported(f"empty command in {line!r}")
        cmd, args = words[0], words[1:]
        _ = retry  # the fake is settled before each command: a retried command runs once
        try:
            result = self.command(cmd, args)
        except ScriptFailure:
            if negate or maybe:
                return None
            raise
        if negate:
            raise ScriptFailure(cmd, "succeeded, the script expects it to fail")
        return result

    @staticmethod
    def condition(name: str) -> bool:
        if name == "privileged":
            return False  # testutils.IsPrivileged: the privileged tests are not run
        raise Unsupported(f"condition [{name}]")

    # -- files ----------------------------------------------------------------------------------------------------

    def read(self, name: str) -> str:
        if name == "stdout":
            return self.stdout
        if name not in self.files:
            raise ScriptFailure(name, "no such file")
        return self.files[name]

    def yaml_docs(self, name: str) -> list[dict[str, Any]]:
        try:
            return [d for d in yaml.safe_load_all(self.read(name)) if isinstance(d, dict)]
        except yaml.YAMLError as e:
            raise ScriptFailure(name, f"not YAML: {e}") from None

    # -- commands -------------------------------------------------------------------------------------------------

    def command(self, cmd: str, args: list[str]) -> str | None:
        handler = self.COMMANDS.get(cmd)
        if handler is None:
            raise Unsupported(f"command {cmd}")
        self.stdout_next: str | None = None
        out = handler(self, args)
        if self.stdout_next is not None:  # a command that writes output replaces the buffer; the others leave it
            self.stdout = self.stdout_next
        return out

    def c_hive(self, args: list[str]) -> None:
        sub, rest = (args[0], args[1:]) if args else ("", [])
        {"start": self.c_hive_start, "stop": self.c_hive_stop}.get(sub, self._unknown_hive)(rest)

    def _unknown_hive(self, args: list[str]) -> None:
        raise Unsupported("command hive " + " ".join(args))

    def c_hive_start(self, args: list[str]) -> None:
        self.agent.start()

    def c_hive_stop(self, args: list[str]) -> None:
        self.agent.sync()
        self.agent.running = False

    def c_hive_recreate(self, args: list[str]) -> None:
        """A new hive with these flags (the script's ``#!`` ones plus the given) and a fresh StateDB (no node addresses, no
        tables); the fake API server's objects carry over, as do the BPF maps, from which the new reconciler restores IDs
        (kpr-transition-to-disabled.txtar: "The replacement Hive has a fresh StateDB but sees the retained maps")."""
        cfg = self.hive.config(args)
        old = self.agent
        self.agent = Agent(cfg, self.hive.maps)
        self.agent.objects = dict(old.objects)

    def c_k8s_add(self, args: list[str]) -> None:
        for f in args:
            for doc in self.yaml_docs(f):
                self.agent.k8s_upsert(doc)

    def c_k8s_delete(self, args: list[str]) -> None:
        for f in args:
            for doc in self.yaml_docs(f):
                self.agent.k8s_delete(doc)

    #: k8s/resync's resource names (group.version.plural) and the kinds they list
    RESYNC_KINDS = {"v1.services": "Service", "discovery.k8s.io.v1.endpointslices": "EndpointSlice", "v1.pods": "Pod"}

    def c_k8s_resync(self, args: list[str]) -> None:
        """The reflector re-lists the resource and gets an empty set (resync.txtar@6ce288b2: "Force a resync of the
        endpoint slices with empty set of endpoint slices"): what it held of that kind is gone."""
        for res in args:
            kind = self.RESYNC_KINDS.get(res)
            if kind is None:
                raise Unsupported(f"k8s/resync {res}")
            for obj in [o for o in self.agent.objects.values() if o.kind == kind]:
                self.agent.k8s_delete(obj.body)

    def c_db_insert(self, args: list[str]) -> None:
        self._node_addresses(args, insert=True)

    def c_db_delete(self, args: list[str]) -> None:
        self._node_addresses(args, insert=False)

    def _node_addresses(self, args: list[str], insert: bool) -> None:
        if len(args) < 2:
            raise ScriptFailure("db/insert", "expected table and path(s)")
        if args[0] != "node-addresses":
            raise Unsupported(f"db/insert into {args[0]}")
        cur = dict(self.agent.node_addresses)
        for f in args[1:]:
            for part in self.read(f).split("---"):
                doc = yaml.safe_load(part)
                if not isinstance(doc, dict):
                    continue
                na = NodeAddress.from_yaml(doc)
                if insert:
                    cur[na.key] = na
                else:
                    cur.pop(na.key, None)
        self.agent.set_node_addresses(cur.values())

    def c_db_empty(self, args: list[str]) -> None:
        for t in args:
            n = self.agent.count(t)
            if n < 0:
                raise Unsupported(f"table {t}")
            if n:
                raise ScriptFailure(f"db/empty {t}", f"table {t!r} not empty, found {n} objects")

    def c_db_initialized(self, args: list[str]) -> None:
        self.agent.sync()

    def _table(self, name: str, columns: list[str]) -> list[dict[str, str]]:
        if name == "backends":
            layout = backends_layout(columns)
            return self.agent.table("backends", layout)
        return self.agent.table(name)

    def _header(self, name: str, columns: list[str]) -> list[str]:
        if name == "backends":
            return HEADERS["backends-" + backends_layout(columns)]
        if name not in HEADERS:
            raise Unsupported(f"table {name}")
        return HEADERS[name]

    def c_db_cmp(self, args: list[str]) -> None:
        grep = None
        plain = []
        for a in args:
            if a.startswith("--grep="):
                grep = re.compile(a.split("=", 1)[1])
            elif a.startswith("--timeout"):
                continue
            else:
                plain.append(a)
        if len(plain) != 2:
            raise ScriptFailure("db/cmp", "expected table and filename")
        table, fname = plain
        lines = [ln for ln in self.read(fname).split("\n") if ln.strip()]
        if not lines:
            raise ScriptFailure(fname, "missing header line")
        names, positions = split_header(lines[0])
        header = self._header(table, names)
        cols = []
        for n in names:
            match = next((h for h in header if h.lower() == n.lower()), None)
            if match is None:
                raise ScriptFailure(f"db/cmp {table} {fname}", f"column {n!r} not part of {header}")
            if match in _UNMODELLED_COLUMNS:
                raise Unsupported(f"column {match} of {table}")
            cols.append(match)
        rows = self._table(table, names)
        want = lines[1:]
        for row in rows:
            raw = [row.get(c, "") for c in cols]
            shown = join_by_positions(raw, positions)
            if grep is not None and not grep.search(shown):
                continue
            if not want:
                raise ScriptFailure(f"db/cmp {table} {fname}", f"extra row: {shown.strip()!r}")
            exp = want.pop(0)
            if split_by_positions(exp, positions) != raw:
                raise ScriptFailure(f"db/cmp {table} {fname}", f"got {shown.rstrip()!r}, expected {exp.rstrip()!r}")
        if want:
            raise ScriptFailure(f"db/cmp {table} {fname}", f"missing row: {want[0].rstrip()!r}")

    def c_db_show(self, args: list[str]) -> None:
        out, fmt, columns, rest = self._query_flags(args)
        if len(rest) != 1:
            raise ScriptFailure("db/show", "missing table name")
        self._write_table(rest[0], self._table(rest[0], columns), out, fmt, columns)

    def c_db(self, args: list[str]) -> None:
        """``db``: describes the tables -- into the script's log, which no script compares."""
        if args:
            raise Unsupported("db " + " ".join(args))

    def c_db_list(self, args: list[str]) -> None:
        self._query(args, prefix=False)

    def c_db_prefix(self, args: list[str]) -> None:
        self._query(args, prefix=True)

    def _query(self, args: list[str], prefix: bool) -> None:
        index, rest_args = "", []
        it = iter(args)
        for a in it:
            if a in ("-i", "--index"):
                index = next(it, "")
            elif a.startswith("--index="):
                index = a.split("=", 1)[1]
            else:
                rest_args.append(a)
        out, fmt, columns, rest = self._query_flags(rest_args)
        if len(rest) != 2:
            raise ScriptFailure("db/list", "expected table and key")
        table, query = rest
        layout = backends_layout(columns) if table == "backends" else "old"
        try:
            rows = self.agent.indexed(table, index, layout)
        except ConfigError as e:
            raise Unsupported(str(e)) from None
        if table in ("frontends", "backends") and index in ("", "address"):
            key = address_key(query)
        else:
            key = query.encode()
        picked = [row for k, row in rows if (k.startswith(key) if prefix else k == key)]
        self._write_table(table, picked, out, fmt, columns)

    def _query_flags(self, args: list[str]) -> tuple[str, str, list[str], list[str]]:
        out, fmt, columns, rest = "", "table", [], []
        it = iter(args)
        for a in it:
            if a in ("-o", "--out"):
                out = next(it, "")
            elif a.startswith(("--out=", "-o=")):
                out = a.split("=", 1)[1]
            elif a in ("-f", "--format"):
                fmt = next(it, "")
            elif a.startswith(("--format=", "-f=")):
                fmt = a.split("=", 1)[1]
            elif a == "--columns":
                columns = next(it, "").split(",")
            elif a.startswith("--columns="):
                columns = a.split("=", 1)[1].split(",")
            elif a.startswith("-"):
                raise Unsupported(f"flag {a}")
            else:
                rest.append(a)
        if fmt not in ("table", "json"):
            raise Unsupported(f"db output format {fmt}")
        return out, fmt, columns, rest

    def _write_table(self, table: str, rows: list[dict[str, str]], out: str, fmt: str, columns: list[str]) -> None:
        if fmt == "json":
            if table != "backends" or columns:
                raise Unsupported(f"db/show {table} -f json")
            try:
                text = backend_json_new(list(self.agent.backends.values()))
            except ValueError as e:
                raise Unsupported(str(e)) from None
            if out:
                self.files[out] = text
            else:
                self.stdout_next = text
            return
        header = self._header(table, columns)
        cols = [next((h for h in header if h.lower() == c.lower()), c) for c in columns] if columns else header
        if any(c in _UNMODELLED_COLUMNS for c in cols):
            raise Unsupported(f"column Since of {table}")
        text = tabwrite([cols] + [[r.get(c, "") for c in cols] for r in rows])
        if out:
            self.files[out] = text
        else:
            self.stdout_next = text

    def c_lb_maps_dump(self, args: list[str]) -> None:
        self.agent.sync()
        lines = self.hive.maps.dump()
        text = "\n".join(lines) + ("\n" if lines else "")
        if args:
            self.files[args[0]] = text
        else:
            self.stdout_next = text

    def c_lb_maps_empty(self, args: list[str]) -> None:
        self.agent.sync()
        n = len(self.hive.maps.dump())
        if n:
            raise ScriptFailure("lb/maps-empty", f"{n} entries remain in LBMaps")

    def c_lb_maps_snapshot(self, args: list[str]) -> None:
        self.agent.sync()
        self.snapshot = self.hive.maps.snapshot()

    def c_lb_maps_restore(self, args: list[str]) -> None:
        if any(a != "--any-proto" for a in args):
            raise Unsupported("lb/maps-restore " + " ".join(args))
        snap = getattr(self, "snapshot", None)
        if snap is None:
            raise ScriptFailure("lb/maps-restore", "no snapshot")
        self.agent.sync()
        self.hive.maps.restore(snap, any_proto=bool(args))

    def c_lb_prune(self, args: list[str]) -> None:
        self.agent.prune()

    def c_metrics(self, args: list[str]) -> None:
        """``metrics [-s] [-o FILE] [PATTERN]``: of the agent's metrics the fake keeps one, the reconciler's prune rounds."""
        out, patterns = "", []
        it = iter(args)
        for a in it:
            if a == "-s":
                continue
            if a in ("-o", "--out"):
                out = next(it, "")
            elif a.startswith("-"):
                raise Unsupported(f"metrics {a}")
            else:
                patterns.append(a)
        name = "cilium_reconciler_prune_count"
        if not patterns or not all(re.search(p, name) for p in patterns):
            raise Unsupported("metrics " + " ".join(args) + " (the fake keeps cilium_reconciler_prune_count only)")
        self.agent.sync()
        text = tabwrite([["Metric", "Labels", "Value"], [name, "module_id=agent.controlplane.loadbalancer-reconciler",
                                                       f"{self.agent.prune_count:.6f}"]])
        if out:
            self.files[out] = text
        else:
            self.stdout_next = text

    def c_test_init_wait(self, args: list[str]) -> None:
        self.agent.sync()

    def c_test_set_node_labels(self, args: list[str]) -> None:
        labels = {}
        for a in args:
            k, eq, v = a.partition("=")
            if not eq:
                raise ScriptFailure("test/set-node-labels", f"bad key=value: {a!r}")
            labels[k] = v
        self.agent.set_node_labels(labels)

    def c_test_set_node_ip(self, args: list[str]) -> None:
        """The local node's IP: what proxy delegation compares a backend's address with when a Service (not one of its
        frontends) selects its local backends (writer.go isLocalProxyDelegation)."""
        if len(args) != 1:
            raise ScriptFailure("test/set-node-ip", "expected 'ip'")
        self.agent.node_ip = args[0]

    def c_test_update_backend_health(self, args: list[str]) -> None:
        if len(args) != 3:
            raise ScriptFailure("test/update-backend-health", "expected service name, backend address and health")
        self.agent.sync()
        self.agent.update_backend_health(args[0], L3n4.parse(args[1]), args[2].lower() in ("true", "1", "t"))
        self.agent.reconcile()

    def c_test_bpfops_summary(self, args: list[str]) -> None:
        self.agent.sync()
        self.stdout_next = self.agent.bpf.summary()

    def c_test_bpfops_reset(self, args: list[str]) -> None:
        self.agent.sync()
        self.agent.bpf.reset_and_restore()

    def c_test_bpfops_state_empty(self, args: list[str]) -> None:
        self.agent.sync()
        if not self.agent.bpf.state_empty():
            raise ScriptFailure("test/bpfops-state-empty", "the reconciler's state is not empty:\n" + self.agent.bpf.summary())

    # -- the script language's own commands (cilium/hive script/cmds.go) -------------------------------------------

    def c_cmp(self, args: list[str]) -> None:
        if args and args[0] == "-q":
            args = args[1:]
        if len(args) != 2:
            raise ScriptFailure("cmp", "usage: cmp [-q] file1 file2")
        a, b = self.read(args[0]), self.read(args[1])
        if a != b:
            la, lb = a.splitlines(), b.splitlines()
            for i in range(max(len(la), len(lb))):
                x = la[i] if i < len(la) else "<none>"
                y = lb[i] if i < len(lb) else "<none>"
                if x != y:
                    raise ScriptFailure(f"cmp {args[0]} {args[1]}", f"line {i + 1}: {args[0]} has {x!r}, {args[1]} has {y!r}")
            raise ScriptFailure(f"cmp {args[0]} {args[1]}", "differ (whitespace)")

    def c_cp(self, args: list[str]) -> None:
        if len(args) != 2:
            raise Unsupported("cp to a directory")
        self.files[args[1]] = self.read(args[0])

    def c_mv(self, args: list[str]) -> None:
        if len(args) != 2:
            raise ScriptFailure("mv", "usage: mv old new")
        self.files[args[1]] = self.read(args[0])
        del self.files[args[0]]

    def c_sed(self, args: list[str]) -> None:
        if len(args) != 3:
            raise ScriptFailure("sed", "usage: sed regexp replacement file")
        pattern = re.compile(args[0], re.M)
        repl = go_replacement(args[1])
        self.files[args[2]] = pattern.sub(repl, self.read(args[2]))

    def c_replace(self, args: list[str]) -> None:
        if len(args) % 2 != 1:
            raise ScriptFailure("replace", "usage: replace [old new]... file")
        text = self.read(args[-1])
        pairs = [(go_unquote(args[i]), go_unquote(args[i + 1])) for i in range(0, len(args) - 1, 2)]
        self.files[args[-1]] = go_replacer(pairs, text)

    def c_grep(self, args: list[str]) -> None:
        self._match(args, None)

    def c_stdout(self, args: list[str]) -> None:
        self._match(args, self.stdout)

    def _match(self, args: list[str], text: str | None) -> None:
        count = 0
        if args and args[0].startswith("-count="):
            count = int(args.pop(0).split("=", 1)[1])
        if args and args[0] == "-q":
            args.pop(0)
        if not args:
            raise ScriptFailure("grep", "usage")
        pattern = re.compile(args[0], re.M)
        if text is None:
            text = self.stdout if len(args) == 1 or args[1] == "-" else self.read(args[1])
        if count:
            got = len(pattern.findall(text))
            if got != count:
                raise ScriptFailure("match", f"found {got} matches for {args[0]!r}")
        elif not pattern.search(text):
            raise ScriptFailure("match", f"no match for {args[0]!r}")

    def c_env(self, args: list[str]) -> None:
        for a in args:
            k, eq, v = a.partition("=")
            if eq:
                self.env[k] = v
            else:
                self.stdout_next = (self.stdout_next or "") + f"{k}={self.env.get(k, '')}\n"

    def c_echo(self, args: list[str]) -> None:
        self.stdout_next = " ".join(args) + "\n"

    def c_sleep(self, args: list[str]) -> None:
        self.agent.sync()

    def c_stop(self, args: list[str]) -> str:
        return "stop"

    def c_exists(self, args: list[str]) -> None:
        for a in args:
            self.read(a)

    COMMANDS: dict[str, Callable[[Script, list[str]], Any]] = {}


Script.COMMANDS = {
    "hive": Script.c_hive, "hive/start": Script.c_hive_start, "hive/stop": Script.c_hive_stop, "hive/recreate": Script.c_hive_recreate,
    "k8s/add": Script.c_k8s_add, "k8s/update": Script.c_k8s_add, "k8s/delete": Script.c_k8s_delete, "k8s/resync": Script.c_k8s_resync,
    "db/insert": Script.c_db_insert, "db/delete": Script.c_db_delete, "db/empty": Script.c_db_empty, "db/cmp": Script.c_db_cmp,
    "db/show": Script.c_db_show, "db": Script.c_db, "db/list": Script.c_db_list, "db/prefix": Script.c_db_prefix, "db/initialized": Script.c_db_initialized,
    "lb/maps-dump": Script.c_lb_maps_dump, "lb/maps-empty": Script.c_lb_maps_empty, "lb/prune": Script.c_lb_prune,
    "lb/maps-snapshot": Script.c_lb_maps_snapshot, "metrics": Script.c_metrics, "lb/maps-restore": Script.c_lb_maps_restore,
    "test/init-wait": Script.c_test_init_wait, "test/set-node-labels": Script.c_test_set_node_labels,
    "test/set-node-ip": Script.c_test_set_node_ip,
    "test/update-backend-health": Script.c_test_update_backend_health, "test/bpfops-summary": Script.c_test_bpfops_summary,
    "test/bpfops-reset": Script.c_test_bpfops_reset, "test/bpfops-state-empty": Script.c_test_bpfops_state_empty,
    "cmp": Script.c_cmp, "cp": Script.c_cp, "mv": Script.c_mv, "sed": Script.c_sed, "replace": Script.c_replace,
    "grep": Script.c_grep, "stdout": Script.c_stdout, "env": Script.c_env, "echo": Script.c_echo, "sleep": Script.c_sleep,
    "stop": Script.c_stop, "exists": Script.c_exists,
}


def address_key(query: str) -> bytes:
    """loadbalancer.go L3n4AddrFromString: a full or partial index key -- "<addr>:<port>/<proto>(/i)", or a classful
    prefix ("10.0.0.0/8": the address bytes up to the prefix)."""
    import ipaddress

    from .lbcp.addr import as16, ip_of, PROTO_BYTE

    s = query
    if s.startswith("["):
        addr, _, s = s[1:].partition("]")
        s = s.removeprefix(":")
    else:
        addr, _, s = s.partition(":")
    try:
        ip = ip_of(addr)
    except ValueError:
        net = ipaddress.ip_network(addr, strict=False)
        if net.prefixlen % 8:
            raise ScriptFailure("db/prefix", "only classful prefixes supported (/8,/16,/24,/32)") from None
        raw = as16(net.network_address)
        return raw[:net.prefixlen // 8] if net.version == 6 else raw[:12 + net.prefixlen // 8]
    key = as16(ip) + b"\0\0\0\0"
    if s:
        port, _, s = s.partition("/")
        key += int(port).to_bytes(2, "big")
    if s:
        proto, _, s = s.partition("/")
        key += PROTO_BYTE.get(proto.upper(), b"?") + (b"\1" if s == "i" else b"\0")
    return key


def go_replacement(template: str) -> Callable[[re.Match[str]], str]:
    """Go's regexp Expand: ``$1``/``${1}``/``${name}`` refer to groups (a missing one is empty), ``$$`` is a dollar."""
    def repl(m: re.Match[str]) -> str:
        out, i = [], 0
        while i < len(template):
            c = template[i]
            if c == "$" and i + 1 < len(template):
                if template[i + 1] == "$":
                    out.append("$")
                    i += 2
                    continue
                g = re.match(r"\{(\w+)\}|(\w+)", template[i + 1:])
                if g:
                    name = g.group(1) or g.group(2)
                    try:
                        out.append(m.group(int(name) if name.isdigit() else name) or "")
                    except IndexError:
                        out.append("")
                    i += 1 + g.end()
                    continue
            out.append(c)
            i += 1
        return "".join(out)
    return repl


def go_unquote(s: str) -> str:
    """strconv.Unquote of ``"s"``: backslash escapes."""
    return bytes(s, "utf-8").decode("unicode_escape") if "\\" in s else s


def go_replacer(pairs: list[tuple[str, str]], text: str) -> str:
    """strings.NewReplacer: at each position the first pair (in argument order) whose old string matches."""
    out, i = [], 0
    while i < len(text):
        for old, new in pairs:
            if old and text.startswith(old, i):
                out.append(new)
                i += len(old)
                break
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def run_text(name: str, text: str) -> Outcome:
    try:
        return Script(name, text).run()
    except ConfigError as e:
        return Outcome(name, "UNSUPPORTED", str(e))


def run_file(path: Path) -> Outcome:
    return run_text(path.name, path.read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pytest_kpr.testing.txtar", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, metavar="FILE.txtar")
    a = ap.parse_args(argv)
    failed = False
    for f in a.files:
        if not f.is_file():
            print(f"txtar: {f}: no such file", file=sys.stderr)
            return 2
        outcome = run_file(f)
        print(outcome.line(), flush=True)
        failed = failed or outcome.verdict == "FAIL"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
