"""One cluster for every pytest-xdist worker of a run: a file lock in the artifacts directory.

``pytest -m kpr -n N`` starts N worker processes that each collect every test. The first worker to
take the lock provisions the cluster (as a run without xdist would) and writes what the others need to
attach to it (:meth:`Provider.share`); the others wait for the lock and attach (:meth:`Provider.attach`).
Each worker uses namespaces of its own. The state file lists who joined and who left: the worker that
leaves last (all ``workercount`` joined and left) tears down what the run created. If a worker died
without leaving, the controller does it after the workers have finished (KprRun.end_on_controller).

What the controller needs for the run's single summary does not go through files: each test's outcome, figures and
cost (and the report.txt values its suite gave) ride on its report (pytest_kpr.plugin.reporter), and each worker hands
over its facts and cost as it ends (pytest-xdist's ``workeroutput``); the controller writes one report.txt and one
cluster.json from them.

Layout, under ``<artifacts>/.kpr-xdist/<testrunuid>/``: ``lock``, ``state.json`` (and ``failed-<worker>`` markers: a
worker saw a failure, so the one that tears down collects the cluster's logs).
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ..core.errors import ProvisioningError

DIRNAME = ".kpr-xdist"


def run_dir(artifacts: Path, testrunuid: str) -> Path:
    return artifacts / DIRNAME / testrunuid


class SharedRun:
    def __init__(self, directory: Path, worker: str, workercount: int):
        self.dir = directory
        self.worker = worker
        self.workercount = workercount

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The run's lock (``flock``: released by the kernel if the holder dies)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / "lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def read(self) -> dict[str, Any] | None:
        p = self.dir / "state.json"
        return json.loads(p.read_text()) if p.exists() else None

    def _write(self, state: dict[str, Any]) -> None:
        tmp = self.dir / f"state.json.{self.worker}"
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.dir / "state.json")

    def join(self, provision: Callable[[], dict[str, Any]], attach: Callable[[dict[str, Any]], None]) -> str:
        """Provision (first worker) or attach (the others), under the lock. Returns ``provisioned`` or
        ``attached``. A failed provisioning is recorded, so the other workers stop with its reason
        instead of trying again."""
        with self.locked():
            st = self.read()
            if st is None:
                try:
                    shared = provision()
                except BaseException as e:
                    self._write({"failed": str(e).splitlines()[0] if str(e) else type(e).__name__, "by": self.worker, "joined": [self.worker],
                                 "left": []})
                    raise
                self._write({"shared": shared, "provisioned_by": self.worker, "joined": [self.worker], "left": [], "torn_down": False})
                return "provisioned"
            if "failed" in st:
                st["joined"].append(self.worker)
                self._write(st)
                raise ProvisioningError(f"{st['by']} could not provision the run's cluster: {st['failed']}")
            attach(st["shared"])
            st["joined"].append(self.worker)
            self._write(st)
            return "attached"

    def leave(self, teardown: Callable[[], None]) -> bool:
        """This worker is done. The last to leave (every worker of the run joined and left) calls
        ``teardown`` under the lock and returns True."""
        with self.locked():
            st = self.read()
            if st is None:
                return False
            st["left"].append(self.worker)
            last = len(set(st["left"])) >= self.workercount and not st.get("torn_down", True)
            if last:
                try:
                    teardown()
                finally:
                    st["torn_down"] = True
                    st["torn_down_by"] = self.worker
            self._write(st)
            return last



def by_worker(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The workers' parts in worker order (gw0, gw1, ..., gw10), whatever order they ended in."""
    def order(part: dict[str, Any]) -> tuple[int, str]:
        name = str(part.get("worker", ""))
        digits = "".join(c for c in name if c.isdigit())
        return (int(digits) if digits else 0, name)

    return sorted(parts, key=order)
