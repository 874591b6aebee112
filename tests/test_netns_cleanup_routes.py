"""``kpr cleanup --routes`` on a real kernel, in network namespaces as root: a run killed outright (SIGKILL) while it
routed a VIP through a node leaves the route and its ledger; cleanup lists it, removes it with --yes, and leaves a route
of the same protocol that no ledger names (someone else's) as it was. Routing is the same on every kernel the project
supports, so the qemu kernel cells do not run it (tests/test_kernel_cells.py NOT_KERNEL_DEPENDENT)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from netns import can_use_netns, three_namespaces

pytestmark = [pytest.mark.netns]

HOLD = """
import sys, time
from pytest_kpr.cluster.outside import LocalOutside
from pytest_kpr.cluster.routes import RouteLedger
node, vip, ready = sys.argv[1], sys.argv[2], sys.argv[3]
with LocalOutside(ledger=RouteLedger(run_id="r-killed")).via(node, [vip]) as why:
    assert why is None, why
    open(ready, "w").write("routed")
    time.sleep(600)  # killed here, the route still in place
"""


def test_a_killed_runs_route_is_removed_and_a_route_no_ledger_names_stays(tmp_path_factory: pytest.TempPathFactory) -> None:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("cleanup-routes")
    state, ready = work / "state", work / "ready"
    t = three_namespaces(work)
    env = ["env", f"KPR_STATE_DIR={state}"]  # the killed run and the cleanup below share this ledger directory
    try:
        node = f"{t.subnets['left']}.2"
        t.exec("client", "ip", "route", "add", "198.18.21.77/32", "via", node, "proto", "233")  # no ledger names it
        p = t.spawn("client", [*env, sys.executable, "-c", HOLD, node, "198.18.21.10", str(ready)])
        deadline = time.monotonic() + 60  # a bound on the child's start-up only (a loaded runner: slow imports), not a timing claim
        while not ready.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the run did not route the VIP"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        routes = lambda: sorted(t.exec("client", "ip", "-4", "route", "show", "proto", "233").stdout.split("\n"))  # noqa: E731
        assert [r.split()[0] for r in routes() if r] == ["198.18.21.10", "198.18.21.77"]
        listed = t.exec("client", *env, sys.executable, "-m", "pytest_kpr", "cleanup", "--routes", "--no-cluster", check=False, timeout=60)
        assert listed.returncode == 1 and "198.18.21.10/32 via" in listed.stdout and "run r-killed" in listed.stdout, listed
        assert "198.18.21.77" not in listed.stdout
        done = t.exec("client", *env, sys.executable, "-m", "pytest_kpr", "cleanup", "--routes", "--no-cluster", "--yes", check=False, timeout=60)
        assert done.returncode == 0 and "deleted route 198.18.21.10/32" in done.stderr, done
        assert [r.split()[0] for r in routes() if r] == ["198.18.21.77"]
        assert list(Path(state).glob("routes-*.json")) == []
    finally:
        t.close()
