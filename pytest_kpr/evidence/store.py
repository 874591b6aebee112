"""Evidence: the files the lab asks for, key figures for the terminal summary, failure bundles.

Files go to ``<artifacts>/<cluster>/``: ``iptables.json``, ``svc.json``, ``scale.json``, ``ct.json``,
``prog.json``, ``nodeport.json``, ``ghost.json``, ``report.txt``, ``cluster.json``, and on a failure
``failures/<test>/`` with the agents' service list, bpf lb list and conntrack, and the pods' state.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import KprError
from ..core.redact import clean, redact_text


#: report.txt keys, in its order: three from the cluster's facts (report_from_facts), the rest as the suite that
#: observes each gave it (Evidence.report_value: the backend-slots, socket-LB and NodePort suites)
REPORT_KEYS = (
    "kube_proxy_replacement", "socket_lb_coverage", "web_backends", "holder_backend", "holder_program",
    "nodeport_iptables_lines", "ghost_no_backend_response",
)
#: the keys a suite gives, and which suite: a key whose suite did not run is ``n/a`` with that said
REPORT_SUITES = {"web_backends": "backend slots", "holder_backend": "socket LB", "holder_program": "socket LB",
                 "nodeport_iptables_lines": "NodePort"}


def report_from_facts(facts: dict[str, Any]) -> dict[str, str]:
    """report.txt's values that are the cluster's facts (read at the start, and again after an upgrade)."""
    out = {}
    if "kube_proxy_replacement" in facts:
        out["kube_proxy_replacement"] = str(facts["kube_proxy_replacement"])
    if facts.get("socket_lb_coverage"):
        out["socket_lb_coverage"] = str(facts["socket_lb_coverage"])
    if facts.get("no_backend_response"):
        out["ghost_no_backend_response"] = str(facts["no_backend_response"])
    return out


def report_text(values: dict[str, Any]) -> str:
    """report.txt: every key in its order, ``n/a`` (saying why) for a value no suite of the run gave."""
    def value(k: str) -> str:
        if k in values:
            return str(values[k])
        return f"n/a ({REPORT_SUITES[k]} did not run)" if k in REPORT_SUITES else "n/a (not in the cluster's facts)"
    return "".join(f"{k}={value(k)}\n" for k in REPORT_KEYS)


class EvidencePathError(KprError):
    """An evidence file's path would leave its directory ('..' in a name a cluster or a recording gave) or go through a
    symlink found under it: refused in one line, nothing written."""


def safe_name(text: str) -> str:
    """One file name from a name the cluster (or a recording) gives, a pod's or a node's: only ``[A-Za-z0-9_.-]``, runs of
    anything else as one ``-``, never ``.`` or ``..`` (so never a path)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")
    return name if name.strip(".") else "-" * max(1, len(name))


#: the runs' artifacts directories (``--kpr-artifacts``, or ``kpr-artifacts/<stamp>``): a file under one is checked from
#: there down, whatever narrower root its writer names (a ``failures`` or ``setup-failure`` that is a symlink is refused)
_ROOTS: list[Path] = []


def register_root(artifacts: Path) -> None:
    """Every evidence file under ``artifacts`` is checked for symlinks from ``artifacts`` down (the run calls it)."""
    root = Path(artifacts).absolute()
    if root not in _ROOTS:
        _ROOTS.append(root)


def _widest(path: Path, root: Path | None) -> tuple[Path, Path]:
    """(path, root) made absolute, the root widened to the registered artifacts directory that holds the path."""
    path = Path(path).absolute()  # (not normalised: a ".." in it is refused by _checked, never resolved away)
    for r in _ROOTS:
        if path.is_relative_to(r):
            return path, r
    return path, Path(root).absolute() if root is not None else path.parent


def _checked(path: Path, root: Path | None) -> Path:
    """``path`` under ``root`` (default: its own directory; widened to the run's artifacts directory that holds it): no
    ``..`` below the root, and no symlink from the root down, the directories made as needed."""
    path, root = _widest(path, root)
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise EvidencePathError(f"not writing {path}: it is not under {root}") from None
    if any(part in ("..", ".", "") for part in rel.parts) or not rel.parts:
        raise EvidencePathError(f"not writing {path}: its name leaves {root}")
    root.mkdir(parents=True, exist_ok=True)
    here = root
    for part in rel.parts[:-1]:
        here = here / part
        if here.is_symlink():
            raise EvidencePathError(f"not writing {path}: {here} is a symlink (evidence never follows one)")
        here.mkdir(exist_ok=True)
    return path


def writable_here(path: Path, root: Path | None = None) -> None:
    """EvidencePathError when ``path`` could not be written as evidence (a symlink on its way from the root, a name that
    leaves it); nothing is written, the directories are made."""
    path = _checked(path, root)
    if path.is_symlink():
        raise EvidencePathError(f"not writing {path}: it is a symlink (evidence never follows one)")


def _write(path: Path, data: bytes, root: Path | None) -> Path:
    _checked(path, root)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        if path.is_symlink():
            raise EvidencePathError(f"not writing {path}: it is a symlink (evidence never follows one)") from None
        raise
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def put_text(path: Path, text: str, root: Path | None = None) -> Path:
    """The one writer of an evidence file (its directory made as needed): every file of a run's evidence is written here,
    by :class:`Evidence` or by the diagnostics (tests/test_layers.py holds the rest of the package to it). Never outside
    ``root`` (default: the file's directory) and never through a symlink under it (EvidencePathError). The text goes
    through the recording's filter first (pytest_kpr.core.redact.redact_text): no credential reaches a file."""
    return _write(path, redact_text(text).encode(), root)


def put_bytes(path: Path, data: bytes, root: Path | None = None) -> Path:
    """:func:`put_text` for a binary evidence file (the run's compressed recording)."""
    return _write(path, data, root)


@dataclass
class Evidence:
    dir: Path
    figures: dict[str, str] = field(default_factory=dict)
    #: property -> family -> figure, for the family-dependent suites
    by_family: dict[str, dict[str, str]] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)
    #: report.txt's values the suites gave (report_value): they ride on the test reports to the run's reporter
    report: dict[str, str] = field(default_factory=dict)

    def write(self, name: str, data: dict[str, Any]) -> Path:
        """A JSON evidence file (cluster.json and results.json too: the run writes them here), through the recording's
        filter for objects (pytest_kpr.core.redact.clean) and then for text."""
        p = put_text(self.dir / name, json.dumps(clean(data), indent=2) + "\n", root=self.dir)
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

    def report_value(self, key: str, value: Any) -> None:
        """One of report.txt's values, as the suite that observes it saw it (the first it gives: the run's first family's)."""
        assert key in REPORT_SUITES, f"report.txt has no key {key!r} a suite gives"
        self.report.setdefault(key, str(value))

    def write_report(self, values: dict[str, Any]) -> Path:
        """report.txt from the values the run's reporter summed (and the facts)."""
        return put_text(self.dir / "report.txt", report_text(values), root=self.dir)


def family_file(name: str, family: str) -> str:
    """The evidence file of a family-dependent suite for ``family``: ``ct.json`` for IPv4 (as in a run of IPv4 only),
    ``ct-ipv6.json`` for IPv6."""
    return name if family == "IPv4" else name.replace(".json", f"-{family.lower()}.json")


def write_sections(dest: Path, sections: dict[str, str]) -> None:
    """A failure's snapshot's text (:class:`pytest_kpr.observe.diagnose.FailureSnapshot`), one file per section under ``dest``."""
    for title, text in sections.items():  # (put_text makes the directories, refusing a symlink on the way)
        put_text(dest / (safe_name(title) + ".txt"), text, root=dest)
