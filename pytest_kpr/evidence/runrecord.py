"""The record of one kpr run: who ran what, and how far it got, phase by phase.

``cluster.json`` carries it from the first moment of the run (``run`` and ``phases``), so a run that fails in its helm
install or waits in vain for Cilium still leaves a file that says where and why -- and ``kpr matrix`` shows that cell
as "failed at install: ..." instead of losing it. The phases, in order: preflight, provision, install (the kind
provider's helm install), readiness, facts, suites, cleanup. Each has an outcome (running, ok, failed), when it
started (UTC), how long it took (wall clock: the cluster's time, also under the fake) and its error.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

PHASES = ("preflight", "provision", "install", "readiness", "facts", "suites", "cleanup")
#: the phases that come before the suites: a failure there means no property was judged
SETUP_PHASES = PHASES[:5]


def git_sha(where: Path, timeout: float = 5.0) -> str | None:
    """The commit checked out at ``where`` (a user's repository running the suites), or None."""
    try:
        r = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = r.stdout.strip()
    return sha if r.returncode == 0 and len(sha) == 40 else None


@dataclass
class RunRecord:
    """What ran and the phases it went through; :meth:`to_json` is the ``run``/``phases`` part of cluster.json."""

    meta: dict[str, Any]
    phases: list[dict[str, Any]] = field(default_factory=list)
    clock: Callable[[], float] = time.monotonic
    _started: float = 0.0

    @property
    def current(self) -> dict[str, Any] | None:
        return self.phases[-1] if self.phases and self.phases[-1]["outcome"] == "running" else None

    def begin(self, phase: str) -> None:
        """Start ``phase``; the phase still running (if any) ended well."""
        assert phase in PHASES, phase
        self.end()
        self._started = self.clock()
        self.phases.append({"phase": phase, "outcome": "running", "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                            "duration_s": None, "error": None})

    def end(self, error: str | None = None) -> None:
        """End the running phase: ok, or failed with ``error``."""
        cur = self.current
        if cur is None:
            return
        cur["outcome"] = "failed" if error else "ok"
        cur["error"] = error
        cur["duration_s"] = round(self.clock() - self._started, 3)

    def failed(self) -> dict[str, Any] | None:
        """The phase that failed, if one did."""
        return next((p for p in self.phases if p["outcome"] == "failed"), None)

    def to_json(self) -> dict[str, Any]:
        return {"run": dict(self.meta), "phases": [dict(p) for p in self.phases]}


def failed_at(cluster_json: dict[str, Any]) -> str | None:
    """"failed at <phase>: <error>" for a run whose setup failed (read back from cluster.json), else None."""
    for p in cluster_json.get("phases") or []:
        if isinstance(p, dict) and p.get("outcome") == "failed" and p.get("phase") in SETUP_PHASES:
            return f"failed at {p['phase']}: {p.get('error') or 'no error recorded'}"
    return None
