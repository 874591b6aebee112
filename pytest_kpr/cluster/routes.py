"""Which runner routes are whose: a ledger per run process of the routes it added (``ip route ... proto 233``).

:meth:`pytest_kpr.cluster.outside.LocalOutside.via` writes each route it adds to its process's ledger before the
route exists and removes it after the route is gone, so a run killed outright (SIGKILL, an OOM kill, a lost runner)
leaves a ledger that names exactly its routes. ``kpr cleanup --routes`` reads the ledgers of dead processes (or of one
run, ``--run ID``) and removes those routes, and only those: a route of proto 233 no ledger names (another tool's,
another run's still alive) stays. A ledger holds the process's id and start time (a reused pid is not the same
process), its network namespace (a ledger from another namespace is left alone) and the run's id.

Where: ``$KPR_STATE_DIR``, else ``/run/pytest-kpr`` as root, else ``$XDG_RUNTIME_DIR/pytest-kpr``, else
``~/.cache/pytest-kpr``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


def state_dir() -> Path:
    if os.environ.get("KPR_STATE_DIR"):
        return Path(os.environ["KPR_STATE_DIR"])
    if os.geteuid() == 0:
        return Path("/run/pytest-kpr")
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "pytest-kpr"
    return Path.home() / ".cache" / "pytest-kpr"


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _netns() -> str:
    try:
        return str(os.stat("/proc/self/ns/net").st_ino)
    except OSError:
        return "?"


class RouteLedger:
    """This process's ledger (created on its first route, removed when it holds none)."""

    def __init__(self, directory: Path | None = None, run_id: str | None = None):
        self.directory = directory
        self.run_id = run_id
        self.routes: list[list[str]] = []

    @property
    def path(self) -> Path:
        return (self.directory or state_dir()) / f"routes-{os.getpid()}.json"

    def _save(self) -> None:
        path = self.path
        if not self.routes:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {"pid": os.getpid(), "start": _start_time(os.getpid()), "netns": _netns(), "run_id": self.run_id,
                "written": time.time(), "routes": self.routes}
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)

    def adding(self, route: list[str]) -> None:
        """Called before ``ip route add``: a kill between the two leaves a ledger entry without a route (harmless)."""
        self.routes.append(list(route))
        self._save()

    def removed(self, route: list[str]) -> None:
        """Called after ``ip route del``."""
        if list(route) in self.routes:
            self.routes.remove(list(route))
        self._save()


@dataclass
class Ledger:
    """A ledger file as :func:`ledgers` reads it."""
    path: Path
    pid: int
    run_id: str | None
    routes: list[list[str]]
    alive: bool
    same_netns: bool
    written: float
    problems: list[str] = field(default_factory=list)


def ledgers(directory: Path | None = None) -> list[Ledger]:
    """Every ledger under the state directory (unreadable ones skipped, with the reason in ``problems``)."""
    d = directory or state_dir()
    out: list[Ledger] = []
    here = _netns()
    for p in sorted(d.glob("routes-*.json")) if d.is_dir() else []:
        try:
            if p.is_symlink() or not p.is_file():
                continue
            data: dict[str, Any] = json.loads(p.read_text())
            pid = int(data["pid"])
            routes = [[str(x) for x in r] for r in data.get("routes") or []]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        start = _start_time(pid)
        out.append(Ledger(p, pid, data.get("run_id"), routes, alive=start is not None and start == data.get("start"),
                          same_netns=data.get("netns") == here, written=float(data.get("written") or p.stat().st_mtime)))
    return out


def remove_routes(ledger: Ledger, run_ip: Callable[[list[str]], tuple[int, str]]) -> list[str]:
    """Remove the ledger's routes that still exist as it wrote them (``ip route del`` of exactly that route, proto
    included: a route someone else put at the same address is another route and is not matched), then the ledger.
    The routes removed, as text."""
    gone = []
    for route in ledger.routes:
        rc, _ = run_ip(["route", "del", *route])
        if rc == 0:
            gone.append(" ".join(route))
    ledger.path.unlink(missing_ok=True)
    return gone
