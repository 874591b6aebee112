"""``kpr matrix``: many runs' results side by side, and the regression gate between two runs.

Each argument is an artifact directory of a run (``--kpr-artifacts``; a workflow's downloaded artifact). In it, every
evidence directory with a ``cluster.json`` is one column: (Cilium version, lowest node kernel, profile), read from
cluster.json. Its cells come from ``results.json`` (the verdict, counts and key figure of each property, written
at the end of a run), or, for a run that predates it, from the JUnit XML found in the directory (one property per
suite module). Each cell links to the column's evidence directory.

Outputs: Markdown (for ``$GITHUB_STEP_SUMMARY``), JSON, and a self-contained HTML page. A cell that fails where
the column before it (same kernel and profile, older Cilium; or simply the one before) passed is marked as a
regression. ``kpr matrix --compare OLD NEW`` lists every property that passed in OLD and fails in NEW and exits 1
when there is one: the regression gate the workflows call.
"""

from __future__ import annotations

import html
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.inputs import BadInput
from .results import verdict
from ..core.versions import Version

SYMBOL = {"pass": "pass", "fail": "FAIL", "skip": "skip", "xfail": "xfail", None: "-"}


#: the row of a run that failed before its suites ("failed at install: ...")
SETUP = "setup"


@dataclass
class Column:
    cilium: str
    kernel: str
    profile: str
    evidence: Path
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: where the cluster came from (cluster.json provider): a "fake" column tested no real datapath, and says so
    provider: str = ""
    #: results.json's run: whether the run ended on its own (not Ctrl-C, not SIGTERM) and its exit status
    complete: bool = True
    ended: str = ""
    #: the n-th run of the same (Cilium, kernel, profile) among those read: twins are distinct columns
    twin: int = 1
    #: the families the family-dependent suites ran for (results.json run.ip_families)
    families: tuple[str, ...] = ("IPv4",)

    @property
    def key(self) -> str:
        fake = " (fake cluster: no real datapath)" if self.provider == "fake" else ""
        twin = f" #{self.twin}" if self.twin > 1 else ""
        fams = "" if self.families == ("IPv4",) else f" / {'+'.join(self.families)}"
        return f"Cilium {self.cilium} / kernel {self.kernel} / {self.profile}{fams}{fake}{twin}"

    def sort_key(self) -> tuple[Any, ...]:
        try:
            v = Version.parse(self.cilium)
            cv: tuple[int, ...] = (v.major, v.minor, v.patch)
        except ValueError:
            cv = (0,)
        return (self.profile, self.kernel, cv)


def _min_kernel(nodes: list[dict[str, Any]]) -> str:
    from ..core.versions import kernel_tuple

    kernels = [n.get("kernel", "") for n in nodes if n.get("kernel")]
    parsed = [(kernel_tuple(k) or (), k) for k in kernels]
    return min(parsed)[1] if parsed else "?"


def read_column(evidence: Path) -> Column:
    from .artifacts import CLUSTER_SCHEMA, RESULTS_SCHEMA, load

    facts = load(evidence / "cluster.json", CLUSTER_SCHEMA)
    col = Column(str(facts.get("cilium_version", "?")), _min_kernel(facts.get("nodes") or []), str(facts.get("profile") or "default"), evidence,
                 provider=str(facts.get("provider") or ""))
    from .runrecord import failed_at

    failed = failed_at(facts)
    if failed:  # the run stopped before its suites: one red cell says where and why
        col.cells[SETUP] = {"verdict": "fail", "figure": failed, "counts": {}}
    results = evidence / "results.json"
    if os.path.lexists(results):
        data = load(results, RESULTS_SCHEMA)
        for prop, r in data["properties"].items():
            col.cells[prop] = {"verdict": r["verdict"], "figure": r.get("figure", ""), "counts": r.get("counts", {}),
                               **({"families": r["families"]} if r.get("families") else {})}
        run = data.get("run") or {}
        col.families = tuple(run.get("ip_families") or ("IPv4",))
        col.complete = run.get("complete", True)
        col.ended = f"exit status {run.get('exit_status')}" + (f", {run['interrupted_by']}" if run.get("interrupted_by") else "")
        return col
    for junit in sorted(evidence.parent.rglob("*.xml")):
        outcomes: dict[str, list[str]] = {}
        from .artifacts import read_bytes

        try:
            root = ET.fromstring(read_bytes(junit))
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            prop = case.get("classname", "?").rsplit(".", 1)[-1].removeprefix("test_").replace("_", " ")
            kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), None)
            skipped = case.find("skipped")
            if kind == "skipped" and skipped is not None and "xfail" in skipped.get("type", ""):
                out = "xfailed"
            else:
                out = {"failure": "failed", "error": "failed", "skipped": "skipped", None: "passed"}[kind]
            outcomes.setdefault(prop, []).append(out)
        for prop, outs in outcomes.items():
            col.cells[prop] = {"verdict": verdict(outs), "figure": "", "counts": {o: outs.count(o) for o in set(outs)}}
    return col


def collect(dirs: list[Path]) -> list[Column]:
    cols = []
    for d in dirs:
        if not d.is_dir():
            raise BadInput(f"{d} is not a directory (an artifact directory of a run, as --kpr-artifacts names it)")
        found = sorted(p.parent for p in d.rglob("cluster.json"))
        if not found:
            raise BadInput(f"{d} has no cluster.json: not the artifact directory of a kpr run")
        cols += [read_column(e) for e in found]
    seen: dict[str, int] = {}
    for c in sorted(cols, key=lambda c: str(c.evidence)):  # twins: numbered in a stable order
        base = c.key
        seen[base] = seen.get(base, 0) + 1
        c.twin = seen[base]
    return sorted(cols, key=lambda c: (c.sort_key(), c.twin))


def regressions(cols: list[Column]) -> dict[tuple[str, str], str]:
    """(column key, property) -> the column it regressed from: a fail where the previous column of the same kernel and
    profile passed."""
    out: dict[tuple[str, str], str] = {}
    prev: dict[tuple[str, str], Column] = {}
    for c in cols:
        before = prev.get((c.profile, c.kernel))
        if before is not None and before.cilium != c.cilium:  # a twin (the same versions) is not "before"
            for prop, cell in c.cells.items():
                if cell["verdict"] == "fail" and before.cells.get(prop, {}).get("verdict") == "pass":
                    out[(c.key, prop)] = before.key
        prev[(c.profile, c.kernel)] = c
    return out


def properties(cols: list[Column]) -> list[str]:
    seen: list[str] = []
    for c in cols:
        seen += [p for p in c.cells if p not in seen]
    return seen


def to_json(cols: list[Column]) -> dict[str, Any]:
    reg = regressions(cols)
    return {"columns": [{"key": c.key, "cilium": c.cilium, "kernel": c.kernel, "profile": c.profile, "families": list(c.families), "provider": c.provider,
                         "evidence": str(c.evidence)} for c in cols],
            "properties": {p: {c.key: {**c.cells[p], **({"regressed_from": reg[(c.key, p)]} if (c.key, p) in reg else {})}
                               for c in cols if p in c.cells} for p in properties(cols)}}


def _link(c: Column, base: Path | None) -> str:
    """A percent-encoded relative path (or the path itself): a directory named ``javascript:alert(1)`` stays a path."""
    from urllib.parse import quote

    path = os.path.relpath(c.evidence, base) if base is not None else str(c.evidence)
    return quote(path if path.startswith(("/", ".")) else f"./{path}", safe="/._-~")


def md(text: Any) -> str:
    """A Markdown table cell's text: no cell breaks (``|``), no line breaks, no raw HTML, no link syntax."""
    out = str(text).replace("\\", "\\\\").replace("\r", " ").replace("\n", " ")
    for ch, esc in (("|", "\\|"), ("<", "&lt;"), (">", "&gt;"), ("[", "\\["), ("]", "\\]"), ("`", "\\`"), ("*", "\\*"), ("_", "\\_")):
        out = out.replace(ch, esc)
    return out


def to_markdown(cols: list[Column], base: Path | None = None) -> str:
    reg = regressions(cols)
    head = "| property | " + " | ".join(f"[{md(c.key)}]({_link(c, base)})" for c in cols) + " |"
    rows = [head, "|---|" + "---|" * len(cols)]
    for p in properties(cols):
        cells = []
        for c in cols:
            cell = c.cells.get(p)
            if cell is None:
                cells.append("-")
                continue
            mark = " ⚠ regression" if (c.key, p) in reg else ""
            fig = f" {md(cell['figure'])}" if cell.get("figure") else ""
            cells.append(f"**{SYMBOL[cell['verdict']]}**{md(family_note(cell))}{mark}{fig}")
        rows.append(f"| {md(p)} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def family_note(cell: dict[str, Any]) -> str:
    """`` (IPv4 pass, IPv6 FAIL)`` for a cell whose property ran per family beyond IPv4 alone; empty otherwise."""
    fams = cell.get("families") or {}
    if not fams or list(fams) == ["IPv4"]:
        return ""
    return " (" + ", ".join(f"{f} {SYMBOL[v]}" for f, v in sorted(fams.items())) + ")"


def to_html(cols: list[Column], base: Path | None = None) -> str:
    reg = regressions(cols)
    esc = html.escape
    th = "".join(f'<th><a href="{esc(_link(c, base))}">{esc(c.key)}</a></th>' for c in cols)
    body = []
    for p in properties(cols):
        tds = []
        for c in cols:
            cell = c.cells.get(p)
            if cell is None:
                tds.append('<td class="none">-</td>')
                continue
            regressed = (c.key, p) in reg
            mark = f'<span class="regression" title="passed in {esc(reg[(c.key, p)])}">regression</span>' if regressed else ""
            tds.append(f'<td class="{cell["verdict"]}{" regressed" if regressed else ""}"><b>{esc(SYMBOL[cell["verdict"]])}</b>'
                       f'{esc(family_note(cell))}{mark}'
                       f'<div class="fig">{esc(cell.get("figure", ""))}</div></td>')
        body.append(f"<tr><th>{esc(p)}</th>{''.join(tds)}</tr>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kpr conformance matrix</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #999; padding: .3em .6em; vertical-align: top; }}
td.pass {{ background: #d8f5d0; }} td.fail {{ background: #f8d0d0; }} td.skip, td.xfail {{ background: #eee; }}
td.regressed {{ outline: 3px solid #b00; }}
.regression {{ margin-left: .4em; color: #fff; background: #b00; padding: 0 .3em; border-radius: 3px; font-size: .8em; }}
.fig {{ font-size: .8em; color: #333; max-width: 28em; }}
</style></head>
<body><h1>kpr conformance matrix</h1>
<table id="matrix"><thead><tr><th>property</th>{th}</tr></thead>
<tbody>{''.join(body)}</tbody></table>
<p>{len(cols)} runs, {len(properties(cols))} properties, {len(reg)} regressions.</p>
</body></html>
"""


def pair_columns(old: list[Column], new: list[Column]) -> tuple[list[tuple[Column, Column]], list[Column]]:
    """OLD's columns with their NEW partners -- same kernel and profile; a NEW column that failed before it knew its
    kernel takes the one unpaired OLD column of its profile; one column on each side pair with each other -- and the
    OLD columns left without one."""
    if len(old) == 1 and len(new) == 1:
        return [(old[0], new[0])], []
    pairs, unpaired = [], []
    taken: set[int] = set()
    for o in old:
        n = next((n for n in new if id(n) not in taken and (n.kernel, n.profile) == (o.kernel, o.profile)), None)
        if n is None:
            unpaired.append(o)
        else:
            pairs.append((o, n))
            taken.add(id(n))
    for n in [n for n in new if id(n) not in taken and n.kernel == "?"]:
        same = [o for o in unpaired if o.profile == n.profile]
        if len(same) == 1:
            pairs.append((same[0], n))
            unpaired.remove(same[0])
    return pairs, unpaired


def compare(old: list[Column], new: list[Column]) -> list[str]:
    """The regression gate, one line each: a property that passed in OLD and fails, is skipped or is missing in NEW; a
    NEW run that failed before its suites; an OLD column with no NEW partner (nothing was compared for it)."""
    out = []
    pairs, unpaired = pair_columns(old, new)
    for o in unpaired:
        out.append(f"{o.key}: no run in NEW to compare with (missing cell)")
    for o, n in pairs:
        if SETUP in n.cells:
            out.append(f"{n.key}: {n.cells[SETUP]['figure']} (its properties were not judged)")
            continue
        if not n.complete:
            out.append(f"{n.key}: the run did not complete ({n.ended}): nothing compared")
            continue
        if not n.cells:
            out.append(f"{n.key}: no results (no results.json, no JUnit XML): nothing compared")
            continue
        for prop, cell in o.cells.items():
            if prop == SETUP or cell["verdict"] != "pass":
                continue
            now = n.cells.get(prop)
            if now is None:
                out.append(f"{prop}: passed in {o.key}, missing in {n.key}")
            elif now["verdict"] in ("fail", "skip"):
                verb = "fails" if now["verdict"] == "fail" else "is skipped"
                out.append(f"{prop}: passed in {o.key}, {verb} in {n.key}" + (f" ({now['figure']})" if now.get("figure") else ""))
    return out


# -- the command ----------------------------------------------------------------------------------------------------


def _outputs(args: Any, cols: list[Column]) -> list[tuple[Path, str]]:
    """Every output rendered before any is written (``-``: standard output, links then relative to the cwd)."""
    out = []
    for target, render in ((args.json, lambda base: json.dumps(to_json(cols), indent=2) + "\n"), (args.html, lambda base: to_html(cols, base)),
                           (args.markdown, lambda base: to_markdown(cols, base))):
        if target is not None:
            base = Path.cwd() if str(target) == "-" else target.resolve().parent
            out.append((target, render(base)))
    return out


def write_all(outputs: list[tuple[Path, str]], inputs: list[Path]) -> None:
    """Write every output or none: each to a temporary file beside it, then all renamed into place. An output that is
    an input, or inside one's tree of evidence, or a directory, is refused before anything is written."""
    import sys
    import tempfile

    roots = [d.resolve() for d in inputs]
    for target, _ in outputs:
        if str(target) == "-":
            continue
        r = target.resolve()
        if any(r == d or d in r.parents for d in roots):
            raise BadInput(f"{target} is inside an input directory ({next(d for d in roots if r == d or d in r.parents)}): write it elsewhere")
        if r.is_dir():
            raise BadInput(f"{target} is a directory: name a file")
    temps: list[tuple[str, Path]] = []
    try:
        for target, text in outputs:
            if str(target) == "-":
                continue
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.resolve().parent)
            temps.append((tmp, target))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        for tmp, target in temps:
            os.replace(tmp, target)
    except OSError as e:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise BadInput(f"cannot write the outputs ({e.filename or ''}: {e.strerror}); none was written") from None
    for target, text in outputs:
        if str(target) == "-":
            sys.stdout.write(text)


def register(sub: Any) -> None:
    import argparse

    p = sub.add_parser("matrix", help="Put many runs' results side by side (Markdown, JSON, HTML); --compare OLD NEW is the regression gate",
                       description="Read artifact directories of kpr runs and write a conformance matrix: one row per property, one "
                                   "column per (Cilium version, kernel, profile), each cell pass/fail/skip/xfail with its key figure. "
                                   "With --compare OLD NEW: the regression gate -- exit 1, one line each, for a property that passed in OLD and fails, "
                                   "is skipped or is missing in NEW, a NEW run that failed before its suites, and an OLD run with no NEW partner.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="artifact directories (as --kpr-artifacts names them)")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"), help="the regression gate between two runs")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write the Markdown table here (default: print it)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the matrix as JSON")
    p.add_argument("--html", type=Path, metavar="FILE", help="write a self-contained HTML page")
    p.set_defaults(func=_run)


def _run(args: Any) -> int:
    import sys

    if args.compare:
        if args.dirs:
            raise BadInput("--compare takes exactly two directories and no others")
        old, new = collect([args.compare[0]]), collect([args.compare[1]])
        lines = compare(old, new)
        for line in lines:
            print(line)
        if not lines:
            print(f"no regression: every property that passed in {args.compare[0]} passes in {args.compare[1]}")
        return 1 if lines else 0
    if not args.dirs:
        raise BadInput("name at least one artifact directory (or --compare OLD NEW)")
    cols = collect(args.dirs)
    outputs = _outputs(args, cols)
    write_all(outputs, inputs=args.dirs)
    if not (args.markdown or args.json or args.html):
        sys.stdout.write(to_markdown(cols))
    return 0
