"""Evidence: the files the lab asks for, key figures for the terminal summary, failure bundles.

Files go to ``<artifacts>/<cluster>/``: ``iptables.json``, ``svc.json``, ``scale.json``, ``ct.json``,
``prog.json``, ``nodeport.json``, ``ghost.json``, ``report.txt``, ``cluster.json``, and on a failure
``failures/<test>/`` with the agents' service list, bpf lb list and conntrack, and the pods' state.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


#: report.txt keys, in the lab's order
REPORT_KEYS = (
    "kube_proxy_replacement", "socket_lb_coverage", "web_backends", "holder_backend", "holder_program",
    "nodeport_iptables_lines", "ghost_no_backend_response",
)


def put_text(path: Path, text: str) -> Path:
    """The one writer of an evidence file (its directory made as needed): every file of a run's evidence is written here,
    by :class:`Evidence` or by the diagnostics (tests/test_layers.py holds the rest of the package to it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def put_bytes(path: Path, data: bytes) -> Path:
    """:func:`put_text` for a binary evidence file (the run's compressed recording)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@dataclass
class Evidence:
    dir: Path
    figures: dict[str, str] = field(default_factory=dict)
    #: property -> family -> figure, for the family-dependent suites
    by_family: dict[str, dict[str, str]] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    #: a pytest-xdist worker keeps report.txt's values for the controller instead of writing the file
    defer_report: bool = False
    report: dict[str, str] | None = None

    def write(self, name: str, data: dict[str, Any]) -> Path:
        """A JSON evidence file (cluster.json and results.json too: the run writes them here)."""
        p = put_text(self.dir / name, json.dumps(data, indent=2) + "\n")
        if name not in self.written:
            self.written.append(name)
        return p

    def read(self, name: str) -> dict[str, Any] | None:
        p = self.dir / name
        return json.loads(p.read_text()) if p.exists() else None

    def figure(self, prop: str, text: str, family: str | None = None) -> None:
        """The key figure of a property for the terminal summary (``backend slots: converged in 1.4s``); a family-dependent
        suite gives its ``family``, and a run of more than IPv4 shows each (``IPv4 ...; IPv6 ...``)."""
        if family is None:
            self.figures[prop] = text
            return
        mine = self.by_family.setdefault(prop, {})
        mine[family] = text
        self.figures[prop] = text if list(mine) == ["IPv4"] else "; ".join(f"{f} {t}" for f, t in sorted(mine.items()))

    def write_report(self, values: dict[str, Any]) -> Path | None:
        """report.txt; on a pytest-xdist worker (``defer_report``) the values are only kept, for the controller
        to merge with the other workers' (pytest_kpr.run.shared_run)."""
        self.report = {k: str(values.get(k, "n/a")) for k in REPORT_KEYS}
        if self.defer_report:
            return None
        return put_text(self.dir / "report.txt", "".join(f"{k}={self.report[k]}\n" for k in REPORT_KEYS))


def family_file(name: str, family: str) -> str:
    """The evidence file of a family-dependent suite for ``family``: ``ct.json`` for IPv4 (as in a run of IPv4 only),
    ``ct-ipv6.json`` for IPv6."""
    return name if family == "IPv4" else name.replace(".json", f"-{family.lower()}.json")


def write_sections(dest: Path, sections: dict[str, str]) -> None:
    """A failure's snapshot's text (:class:`pytest_kpr.observe.diagnose.FailureSnapshot`), one file per section under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for title, text in sections.items():
        put_text(dest / (re.sub(r"[^A-Za-z0-9_.-]+", "-", title).strip("-") + ".txt"), text)
