"""The runs ``kpr matrix`` and its gate read: every evidence directory with a ``cluster.json`` under an artifact directory
is one :class:`Column` (Cilium version, lowest node kernel, profile), its cells from ``results.json`` or, for a run that
predates it, from the JUnit XML beside it."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.inputs import BadInput
from ..core.versions import Version
from .results import verdict

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
    #: results.json's tests (each test's id, property, outcome, family) and run record, as written: the gate's input
    tests: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)

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
        col.tests, col.run = list(data.get("tests") or []), dict(run)
        for prop, cell in col.cells.items():  # a FAIL cell says why: its first failed test, the reason, the bundle
            first = next((t for t in col.tests if isinstance(t, dict) and t.get("property") == prop and t.get("outcome") == "failed"), None)
            if cell["verdict"] == "fail" and first is not None:
                cell["failed_test"] = str(first.get("test", "")).rsplit("::", 1)[-1][:200]
                if first.get("message"):
                    cell["reason"] = str(first["message"])[:300]
                if first.get("evidence") and not str(first["evidence"]).startswith(("/", "..")):
                    cell["failure_evidence"] = str(first["evidence"])
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
