"""``kpr matrix``: many runs' results side by side, and the regression gate between two runs.

Each argument is an artifact directory of a run (``--kpr-artifacts``; a workflow's downloaded artifact). In it, every
evidence directory with a ``cluster.json`` is one column: (Cilium version, lowest node kernel, profile), read from
cluster.json. Its cells come from ``results.json`` (the verdict, counts and key figure of each property, written
at the end of a run), or, for a run that predates it, from the JUnit XML found in the directory (one property per
suite module). Each cell links to the column's evidence directory.

Outputs: Markdown (for ``$GITHUB_STEP_SUMMARY``), JSON, and a self-contained HTML page. A cell that fails where
the column before it (same kernel and profile, older Cilium; or simply the one before) passed is marked as a
regression. ``kpr matrix --compare OLD NEW`` is the regression gate the workflows call (``gate.py``): each NEW cell
against the last run in which that cell ran; exit 1 on a test or family that passed there and does not pass now.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.inputs import BadInput
from .columns import Column, collect

SYMBOL = {"pass": "pass", "fail": "FAIL", "skip": "skip", "xfail": "xfail", None: "-"}


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


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/._-~")


def _link(c: Column, base: Path | None) -> str:
    """A percent-encoded relative path (or the path itself): a directory named ``javascript:alert(1)`` stays a path."""
    path = os.path.relpath(c.evidence, base) if base is not None else str(c.evidence)
    return _quote(path if path.startswith(("/", ".")) else f"./{path}")


def md(text: Any) -> str:
    """A Markdown table cell's text: no cell breaks (``|``), no line breaks, no raw HTML, no link syntax."""
    out = str(text).replace("\\", "\\\\").replace("\r", " ").replace("\n", " ")
    for ch, esc in (("|", "\\|"), ("<", "&lt;"), (">", "&gt;"), ("[", "\\["), ("]", "\\]"), ("`", "\\`"), ("*", "\\*"), ("_", "\\_")):
        out = out.replace(ch, esc)
    return out


@dataclass(frozen=True)
class CellView:
    """One cell of the page, as both renderings show it."""

    verdict: str
    families: str  # family_note
    regressed_from: str | None  # the run it passed in, when it regressed
    figure: str
    reason: str | None  # a FAIL's why: its reason, the failed test, its bundle's link (None: none to show)
    failed_test: str
    evidence: str | None  # the failure bundle's href


def grid(cols: list[Column], base: Path | None = None) -> list[tuple[str, list[CellView | None]]]:
    """Each property (a row) with a cell per run (a column; None where the run has no such property): walked once, for
    the Markdown and the HTML page alike."""
    reg = regressions(cols)
    rows = []
    for p in properties(cols):
        cells: list[CellView | None] = []
        for c in cols:
            cell = c.cells.get(p)
            if cell is None:
                cells.append(None)
                continue
            failed = cell.get("failed_test") or ""
            href = f"{_link(c, base)}/{_quote(cell['failure_evidence'])}" if failed and cell.get("failure_evidence") else None
            cells.append(CellView(cell["verdict"], family_note(cell), reg.get((c.key, p)), cell.get("figure", "") or "",
                                  cell.get("reason", "") if failed else None, failed, href))
        rows.append((p, cells))
    return rows


def to_markdown(cols: list[Column], base: Path | None = None) -> str:
    head = "| property | " + " | ".join(f"[{md(c.key)}]({_link(c, base)})" for c in cols) + " |"
    rows = [head, "|---|" + "---|" * len(cols)]
    for p, cells in grid(cols, base):
        rows.append(f"| {md(p)} | " + " | ".join("-" if v is None else _md_cell(v) for v in cells) + " |")
    return "\n".join(rows) + "\n"


def _md_cell(v: CellView) -> str:
    mark = " ⚠ regression" if v.regressed_from is not None else ""
    fig = f" {md(v.figure)}" if v.figure else ""
    why = ""
    if v.reason is not None:  # a FAIL cell's why: the reason, the failed test, a link to its failure bundle
        why = f"<br>{md(v.reason)} ({md(v.failed_test)})" + (f" [evidence]({v.evidence})" if v.evidence else "")
    return f"**{SYMBOL[v.verdict]}**{md(v.families)}{mark}{fig}{why}"


NO_CELL = '<td class="none">-</td>'


def _html_cell(v: CellView) -> str:
    esc = html.escape
    mark = f'<span class="regression" title="passed in {esc(v.regressed_from)}">regression</span>' if v.regressed_from is not None else ""
    why = ""
    if v.reason is not None:
        link = f' <a href="{esc(v.evidence)}">evidence</a>' if v.evidence else ""
        why = f'<div class="why">{esc(v.reason)} <span class="test">({esc(v.failed_test)})</span>{link}</div>'
    return (f'<td class="{v.verdict}{" regressed" if v.regressed_from is not None else ""}"><b>{esc(SYMBOL[v.verdict])}</b>'
            f'{esc(v.families)}{mark}<div class="fig">{esc(v.figure)}</div>{why}</td>')


def family_note(cell: dict[str, Any]) -> str:
    """`` (IPv4 pass, IPv6 FAIL)`` for a cell whose property ran per family beyond IPv4 alone; empty otherwise."""
    fams = cell.get("families") or {}
    if not fams or list(fams) == ["IPv4"]:
        return ""
    return " (" + ", ".join(f"{f} {SYMBOL[v]}" for f, v in sorted(fams.items())) + ")"


def to_html(cols: list[Column], base: Path | None = None) -> str:
    esc = html.escape
    th = "".join(f'<th><a href="{esc(_link(c, base))}">{esc(c.key)}</a></th>' for c in cols)
    rows = grid(cols, base)
    body = [f"<tr><th>{esc(p)}</th>{''.join(NO_CELL if v is None else _html_cell(v) for v in cells)}</tr>" for p, cells in rows]
    regressed = sum(1 for _, cells in rows for v in cells if v is not None and v.regressed_from is not None)
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
.why {{ font-size: .8em; color: #700; max-width: 28em; margin-top: .3em; }} .why .test {{ color: #555; }}
</style></head>
<body><h1>kpr conformance matrix</h1>
<table id="matrix"><thead><tr><th>property</th>{th}</tr></thead>
<tbody>{''.join(body)}</tbody></table>
<p>{len(cols)} runs, {len(rows)} properties, {regressed} regressions.</p>
</body></html>
"""


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
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 is for the temporary name: the page is read as any file is
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


def _umask() -> int:
    """The process's umask (reading it means setting it: set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def register(sub: Any) -> None:
    import argparse

    from ..core.exits import declare_exit

    p = sub.add_parser("matrix", help="Put many runs' results side by side (Markdown, JSON, HTML); --compare OLD NEW is the regression gate",
                       description="Read artifact directories of kpr runs and write a conformance matrix: one row per property, one "
                                   "column per (Cilium version, kernel, profile), each cell pass/fail/skip/xfail with its key figure. "
                                   "With --compare OLD NEW: the regression gate -- each NEW cell against its baseline in OLD (or, with --older, the last "
                                   "earlier run in which the cell ran); one line for each regression. A kernel or Cilium patch change, a cell "
                                   "that left or joined the matrix and a missing baseline are notices.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.description += " " + declare_exit(p, {
        0: "when the matrix was written, or (--compare) no regression", 1: "(--compare) for a test or address family that "
        "passed in the baseline and fails, is skipped, is only an xfail or is missing now, and for a NEW run that failed "
        "before its suites, did not complete or contradicts itself", 2: "for bad input", 3: "(--compare) could not compare: "
        "a NEW cell whose every earlier run judged nothing (setup failed, incomplete, no results: never a baseline)"})
    p.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="artifact directories (as --kpr-artifacts names them)")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"), help="the regression gate between two runs")
    p.add_argument("--older", action="append", type=Path, metavar="DIR",
                   help="with --compare: an earlier baseline (repeatable, newest first) for a cell OLD did not run")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write the Markdown table here (default: print it)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the matrix as JSON")
    p.add_argument("--html", type=Path, metavar="FILE", help="write a self-contained HTML page")
    p.set_defaults(func=_run)


def _run(args: Any) -> int:
    import sys

    from .gate import safe

    if args.compare:
        if args.dirs:
            raise BadInput("--compare takes exactly two directories and no others (earlier baselines: --older)")
        from .gate import compare_runs, read_runs

        old, new = read_runs(args.compare[0]), read_runs(args.compare[1])
        verdict = compare_runs(old, new, [read_runs(d) for d in args.older or []])
        for line in verdict.failures:
            print(f"REGRESSION {line}")
        for line in verdict.uncomparable:
            print(f"COULD NOT COMPARE {line}")
        for line in verdict.notices:
            print(f"notice: {line}")
        if verdict.failures:
            return 1
        if verdict.uncomparable:  # never "no regression": a baseline that judged nothing cannot show one
            return 3
        print(f"no regression: every test that passed in the baseline of each cell passes in {safe(args.compare[1])}")
        return 0
    if args.older:
        raise BadInput("--older is for --compare")
    if not args.dirs:
        raise BadInput("name at least one artifact directory (or --compare OLD NEW)")
    cols = collect(args.dirs)
    outputs = _outputs(args, cols)
    write_all(outputs, inputs=args.dirs)
    if not (args.markdown or args.json or args.html):
        sys.stdout.write(to_markdown(cols))
    return 0
