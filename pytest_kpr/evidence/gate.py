"""The regression gate: ``kpr matrix --compare OLD NEW [--older DIR ...]``.

A workflow's report job compares this run's cells (NEW) with the baseline: for each cell, the last run on main in which
that cell ran (OLD, then each ``--older`` directory, newest first). It must survive what changes between two healthy
runs and still catch every real regression:

* **A cell is what the matrix asked for**, not the machine it landed on: the artifact's name with its versions cut to
  major.minor (``kpr-cilium-1.19.8`` -> ``kpr-cilium-1.19``; ``kpr-kernel-6.1-20250616.013250`` -> ``kpr-kernel-6.1``),
  the Cilium minor, the profile, the provider and the address families. A kernel string (a runner image update, an LVH
  tag bump) or a Cilium patch release is shown as a notice, never a failure; a runner kernel that moved to another
  minor still pairs when it is the cell's only run on each side.
* **Notices, not failures:** a cell that left the matrix, a new cell, a cell with no baseline (its artifacts expired).
* **Failures (exit 1):** within a paired cell, per address family and per test, what passed in every baseline run of
  the cell and now fails, is skipped, is only an expected failure (``xfail``) or is missing -- for *every* NEW run of
  the cell (a re-run that fails is not hidden by one that passed). Verdicts are derived from the tests' outcomes, never
  taken from the ``verdict`` field; a NEW record that contradicts itself fails. A NEW run that failed before its
  suites, did not complete or has no results fails whether or not it has a baseline.

Everything taken from an artifact is printed through :func:`safe`: no line break, control or terminal sequence, and no
``::`` that a CI runner could read as a workflow command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.versions import Version, kernel_tuple
from .columns import SETUP, Column, collect
from .results import verdict

#: a version-like token in an artifact's name: 1.19.8, 6.1-20250616.013250, 6.1.0-50-amd64, 1.18.5-1.19.8
_VERSIONED = re.compile(r"(\d+)\.(\d+)(?:[.+~][0-9A-Za-z]+|-(?!\d{1,3}\.\d{1,3}(?:\D|$))[0-9A-Za-z]+)*")
#: a verdict as the outcome of the test that would give it (a run without per-test records has only verdicts)
OUTCOME = {"pass": "passed", "fail": "failed", "skip": "skipped", "xfail": "xfailed"}
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def safe(text: Any) -> str:
    """Artifact text made inert on one line: control characters, C1 (terminal) codes, line and paragraph separators and
    bidirectional overrides become ``\\xNN``/``\\uNNNN``; ``::`` becomes ``:\\x3a`` (no workflow command can form)."""
    out = _UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", str(text).replace("\\", "\\\\"))
    while "::" in out:
        out = out.replace("::", ":\\x3a")
    return out


def cell_name(name: str) -> str:
    """The matrix's name for a cell, its versions cut to major.minor (see the module's docstring)."""
    return _VERSIONED.sub(lambda m: f"{m[1]}.{m[2]}", name)


def _minor(version: str) -> str:
    try:
        v = Version.parse(version)
        return f"{v.major}.{v.minor}"
    except ValueError:
        return version


def _kernel_minor(kernel: str) -> tuple[int, ...] | str:
    t = kernel_tuple(kernel)
    return t[:2] if t else kernel


@dataclass
class Run:
    """One run of a cell as the gate reads it."""

    col: Column
    root: Path
    #: the artifact directory's own name under the input (a workflow's artifact), "" for a run given directly
    name: str = ""
    #: (property, family) -> outcomes; family "" for a property tested once
    outcomes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: test id -> outcome
    tests: dict[str, str] = field(default_factory=dict)
    #: what the record says that it contradicts elsewhere
    contradictions: list[str] = field(default_factory=list)

    @property
    def group(self) -> tuple[Any, ...]:
        c = self.col
        return (cell_name(self.name), c.profile, c.provider, c.families)

    @property
    def key(self) -> str:
        name = f"{self.name}: " if self.name and self.name not in self.col.key else ""
        return safe(name + self.col.key)


def read_runs(root: Path) -> list[Run]:
    runs = []
    for col in collect([root]):
        rel = col.evidence.relative_to(root).parts
        run = Run(col, root, rel[0] if len(rel) > 1 else "")
        _read_outcomes(run)
        runs.append(run)
    return runs


def _read_outcomes(run: Run) -> None:
    col = run.col
    tests = col.tests or []
    for t in tests:
        if not isinstance(t, dict):
            continue
        prop, out = str(t.get("property") or "?"), str(t.get("outcome") or "?")
        run.outcomes.setdefault((prop, str(t.get("family") or "")), []).append(out)
        run.tests[str(t.get("test") or "?")] = out
    seen = {p for p, _ in run.outcomes}
    for prop, cell in col.cells.items():
        if prop == SETUP:
            continue
        if prop in seen:  # the verdict field is a claim; the tests' outcomes decide
            derived = verdict([o for (p, _), outs in run.outcomes.items() if p == prop for o in outs])
            if derived != cell["verdict"]:
                run.contradictions.append(f"{safe(prop)} is recorded as {safe(cell['verdict'])} but its tests give {derived}")
            for fam, claimed in (cell.get("families") or {}).items():
                outs = run.outcomes.get((prop, fam))
                if outs is not None and verdict(outs) != claimed:
                    run.contradictions.append(f"{safe(prop)} [{safe(fam)}] is recorded as {safe(claimed)} but its tests give {verdict(outs)}")
            continue
        fams = cell.get("families") or {}  # no per-test record (a JUnit-only run): the recorded verdicts are all there is
        for fam, v in (fams.items() if fams else [("", cell["verdict"])]):
            run.outcomes[(prop, fam)] = [OUTCOME.get(v, v)]
    rec = col.run or {}
    failed = [t for t, o in run.tests.items() if o == "failed"]
    if rec.get("exit_status") == 0 and failed:
        run.contradictions.append(f"exit status 0 with {len(failed)} failed test(s)")
    if rec.get("complete") is True and rec.get("interrupted_by"):
        run.contradictions.append(f"complete, yet interrupted by {safe(rec['interrupted_by'])}")
    if rec.get("cilium_version") and col.cilium not in ("?", "") and str(rec["cilium_version"]) != col.cilium:
        run.contradictions.append(f"results.json says Cilium {safe(rec['cilium_version'])}, cluster.json {safe(col.cilium)}")


def pair(old: list[Run], new: list[Run]) -> tuple[list[tuple[list[Run], Run, list[str]]], list[Run], list[Run]]:
    """Each NEW run with the baseline runs of its cell (every OLD twin) and the notices the pairing gives; the NEW runs
    with no baseline; the OLD runs no NEW run pairs with."""
    pairs: list[tuple[list[Run], Run, list[str]]] = []
    used: set[int] = set()
    lonely: list[Run] = []
    # one NEW cell (its twins together) at a time
    cells: dict[tuple[Any, ...], list[Run]] = {}
    for n in new:
        cells.setdefault(n.group + (_minor(n.col.cilium), _kernel_minor(n.col.kernel)), []).append(n)
    pending = []
    for key, twins in cells.items():
        base = [o for o in old if o.group + (_minor(o.col.cilium), _kernel_minor(o.col.kernel)) == key]
        if base:
            used.update(id(o) for o in base)
            pairs += [(base, n, _changes(base, n)) for n in twins]
        else:
            pending.append(twins)
    # the cell's kernel moved to another minor (a runner image update): its only run on each side still pairs; and two
    # runs given directly, one on each side, are compared whatever they are (kpr matrix --compare run-a run-b by hand)
    for twins in pending:
        n0 = twins[0]
        same = [o for o in old if id(o) not in used and o.group == n0.group and _minor(o.col.cilium) == _minor(n0.col.cilium)]
        if not same and len(old) == 1 and len(cells) == 1 and not n0.name and not old[0].name:
            same = list(old)
        if same and len({(_minor(o.col.cilium), _kernel_minor(o.col.kernel)) for o in same}) == 1:
            used.update(id(o) for o in same)
            pairs += [(same, n, _changes(same, n)) for n in twins]
        else:
            lonely += twins
    return pairs, lonely, [o for o in old if id(o) not in used]


def _changes(base: list[Run], n: Run) -> list[str]:
    o = base[0].col
    out = []
    if o.cilium != n.col.cilium:
        out.append(f"Cilium {safe(o.cilium)} -> {safe(n.col.cilium)}")
    if o.kernel != n.col.kernel:
        out.append(f"kernel {safe(o.kernel)} -> {safe(n.col.kernel)}")
    return [f"{n.key}: since the baseline, {', '.join(out)} (shown, not judged)"] if out else []


_VERB = {"failed": "fails", "skipped": "is skipped", "xfailed": "is only an expected failure (xfail)", None: "is missing"}


def _short(test: str) -> str:
    """A test's name without its file (``suites/test_x.py::test_y[IPv6]`` -> ``test_y[IPv6]``)."""
    return test.split(".py::", 1)[-1]


def _judge(base: list[Run], n: Run) -> list[str]:
    """What passed in every baseline run of the cell and does not pass in this NEW run, one line per property: the
    property's families (fails, is skipped, is only an xfail, is missing) and, after a dash, each test that passed before
    and does not now (also when its property still passes through another test)."""
    families: dict[str, list[str]] = {}
    tests: dict[str, list[str]] = {}
    guarded = set.intersection(*({k for k, outs in b.outcomes.items() if verdict(outs) == "pass"} for b in base))
    for prop, fam in sorted(guarded):
        outs = n.outcomes.get((prop, fam))
        now = verdict(outs) if outs is not None else None
        if now != "pass":
            families.setdefault(prop, []).append(_VERB[OUTCOME.get(now)] + (f" for {safe(fam)}" if fam else ""))
    passed = set.intersection(*({t for t, o in b.tests.items() if o == "passed"} for b in base))
    props = {str(t.get("test")): str(t.get("property") or "?") for t in n.col.tests if isinstance(t, dict)}
    for test in sorted(passed):
        now = n.tests.get(test)
        if now is not None and now != "passed":
            tests.setdefault(props.get(test, "?"), []).append(f"{safe(_short(test))} {_VERB.get(now) or 'is ' + safe(now)}")
    lines = []
    for prop in dict.fromkeys([*families, *tests]):
        summary = "; ".join(families.get(prop, [])) or "passes, but not every test that passed there"
        detail = f" -- {', '.join(tests[prop])}" if prop in tests else ""
        cell = n.col.cells.get(prop) or {}
        fig, why = cell.get("figure"), cell.get("reason")
        # OLD and NEW named as such: with one Cilium version, kernel and profile the two columns have the same key
        lines.append(f"{safe(prop)}: passed in OLD {base[0].key}, {summary} in NEW {n.key}{detail}" + (f" ({safe(fig)})" if fig else "")
                     + (f"; why: {safe(why)}" if why else ""))
    return lines


@dataclass
class Verdict:
    failures: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: NEW cells whose every earlier run judged nothing (setup failed, incomplete, no results): nothing to compare with,
    #: which is not "no regression" (exit 3)
    uncomparable: list[str] = field(default_factory=list)


def judged_nothing(run: Run) -> str | None:
    """Why a run of a cell cannot be a baseline, or None: its setup failed, it did not complete (interrupted,
    cancelled), or it left no results -- a run that judged nothing says nothing passed, so nothing could regress."""
    if SETUP in run.col.cells:
        return f"its setup failed ({safe(run.col.cells[SETUP]['figure'])})"
    if not run.col.complete:
        return f"it did not complete ({safe(run.col.ended)})"
    if not run.col.cells:
        return "it left no results"
    return None


def compare_runs(old: list[Run], new: list[Run], older: list[list[Run]] = ()) -> Verdict:  # type: ignore[assignment]
    v = Verdict()
    passed_over: dict[tuple[Any, ...], list[str]] = {}  # a NEW cell's group -> why its runs could not be baselines

    def usable(runs: list[Run]) -> list[Run]:
        out = []
        for r in runs:
            why = judged_nothing(r)
            if why is None:
                out.append(r)
            else:
                passed_over.setdefault(r.group, []).append(f"{safe(r.root.name)}: {why}")
        return out

    pairs, lonely, left = pair(usable(old), new)
    for runs in older:  # a NEW cell OLD did not run, or ran without judging it: the last run in which it was judged
        if not lonely:
            break
        more, lonely, _ = pair(usable(runs), lonely)
        for base, n, notes in more:
            notes.insert(0, f"{n.key}: baseline from an older run ({safe(base[0].root.name)}), the last one in which this cell was judged")
        pairs += more
    for n in new:
        if SETUP in n.col.cells:
            v.failures.append(f"{n.key}: {safe(n.col.cells[SETUP]['figure'])} (its properties were not judged)")
        elif not n.col.complete:
            v.failures.append(f"{n.key}: the run did not complete ({safe(n.col.ended)}): nothing compared")
        elif not n.col.cells:
            v.failures.append(f"{n.key}: no results (no results.json, no JUnit XML): nothing compared")
        elif n.contradictions:
            v.failures.append(f"{n.key}: its record contradicts itself ({'; '.join(n.contradictions)}): not trusted")
    judged = {id(n) for n in new if judged_nothing(n) is None and not n.contradictions}
    for base, n, notes in pairs:
        v.notices += notes
        for b in base:
            if b.contradictions:
                v.notices.append(f"{b.key} (baseline): its record contradicts itself ({'; '.join(b.contradictions)}); judged from its tests")
        if id(n) in judged:
            v.failures += _judge(base, n)
    for n in lonely:
        if n.group in passed_over:
            v.uncomparable.append(f"{n.key}: could not compare: no earlier run judged this cell ({'; '.join(passed_over[n.group])})")
        else:
            v.notices.append(f"{n.key}: no baseline (a new cell, or its last run's artifacts expired): nothing to compare")
    for o in left:
        v.notices.append(f"{o.key}: not in this run (the cell left the matrix): nothing to compare")
    return v
