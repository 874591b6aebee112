"""One cluster for every pytest-xdist worker (pytest_kpr.run.shared_run): the lock, attaching, the last one out.

Workers are threads here, each with its own open file description of the lock (flock conflicts between
descriptions, in one process as across processes); the xdist run itself is in tests/test_suites_vs_fake.py.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_kpr.core.errors import ProvisioningError
from pytest_kpr.run.shared_run import SharedRun, by_worker


def test_one_worker_provisions_while_the_others_wait_then_attach_to_what_it_shared(tmp_path: Path) -> None:
    events: list[str] = []
    attached: dict[str, dict[str, Any]] = {}

    def worker(name: str) -> None:
        run = SharedRun(tmp_path, name, 3)

        def provision() -> dict[str, Any]:
            events.append(f"provision start {name}")
            time.sleep(0.2)  # the others must wait for the lock meanwhile
            events.append(f"provision end {name}")
            return {"kubeconfig": f"/kube/{name}"}

        def attach(shared: dict[str, Any]) -> None:
            events.append(f"attach {name}")
            attached[name] = shared

        run.join(provision, attach)

    threads = [threading.Thread(target=worker, args=(f"gw{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    starts = [e for e in events if e.startswith("provision start")]
    assert len(starts) == 1, events
    provisioner = starts[0].split()[-1]
    assert events[1] == f"provision end {provisioner}" and all(e.startswith("attach") for e in events[2:]), "nobody attaches before it is provisioned"
    assert attached == {n: {"kubeconfig": f"/kube/{provisioner}"} for n in ("gw0", "gw1", "gw2") if n != provisioner}
    state = SharedRun(tmp_path, "x", 3).read()
    assert state is not None and state["provisioned_by"] == provisioner and sorted(state["joined"]) == ["gw0", "gw1", "gw2"]


def test_only_the_last_worker_out_tears_down_and_only_once(tmp_path: Path) -> None:
    runs = [SharedRun(tmp_path, f"gw{i}", 3) for i in range(3)]
    for r in runs:
        r.join(lambda: {"x": 1}, lambda shared: None)
    torn: list[str] = []

    def teardown_by(r: SharedRun) -> Any:
        return lambda: torn.append(r.worker)

    assert [r.leave(teardown_by(r)) for r in (runs[1], runs[0], runs[2])] == [False, False, True]
    assert torn == ["gw2"]
    state = runs[0].read()
    assert state is not None and state["torn_down"] and state["torn_down_by"] == "gw2"


def test_a_worker_that_finishes_before_the_others_joined_does_not_tear_down(tmp_path: Path) -> None:
    """The provisioner may be done before a slow worker has even attached: the count is of all the run's workers."""
    fast, slow = SharedRun(tmp_path, "gw0", 2), SharedRun(tmp_path, "gw1", 2)
    fast.join(lambda: {"x": 1}, lambda shared: None)
    torn: list[str] = []
    assert not fast.leave(lambda: torn.append("gw0"))
    slow.join(lambda: pytest.fail("already provisioned"), lambda shared: None)
    assert slow.leave(lambda: torn.append("gw1")) and torn == ["gw1"]


def test_a_failed_provisioning_stops_the_other_workers_with_its_reason(tmp_path: Path) -> None:
    first, second = SharedRun(tmp_path, "gw0", 2), SharedRun(tmp_path, "gw1", 2)

    def broken() -> dict[str, Any]:
        raise ProvisioningError("kind create cluster kpr failed: no space left on device")

    with pytest.raises(ProvisioningError, match="no space left"):
        first.join(broken, lambda shared: None)
    with pytest.raises(ProvisioningError, match=r"gw0 could not provision the run's cluster: kind create cluster kpr failed: no space left"):
        second.join(lambda: pytest.fail("must not provision again"), lambda shared: pytest.fail("nothing to attach to"))
    assert not second.leave(lambda: pytest.fail("nothing was provisioned to tear down"))


def test_parts_come_back_in_worker_order_whatever_order_the_workers_ended_in() -> None:
    assert [p["worker"] for p in by_worker([{"worker": f"gw{i}"} for i in (10, 2, 0)])] == ["gw0", "gw2", "gw10"]


def test_the_controller_tears_down_what_a_dead_worker_left_behind(pytester: pytest.Pytester) -> None:
    """gw1 joined and never left (it died): after the workers finished, the controller attaches through the
    provider and tears the run's cluster down, then removes the run's directory."""
    pytester.makeconftest("""
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
PROVIDER = FakeProvider(FakeCluster(FakeConfig()))
def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
""")
    config = pytester.parseconfigure("--kpr-artifacts=artifacts")
    from pytest_kpr.plugin.hooks import kpr_session
    from pytest_kpr.run.shared_run import run_dir

    s = kpr_session(config)
    d = run_dir(s.settings.artifacts, "r1")
    gw0, gw1 = SharedRun(d, "gw0", 2), SharedRun(d, "gw1", 2)
    gw0.join(lambda: {"name": "fake", "created": True}, lambda shared: None)
    gw1.join(lambda: {}, lambda shared: None)
    assert not gw0.leave(lambda: pytest.fail("gw1 has not left"))
    s.end_on_controller("r1")
    provider = config.pluginmanager.get_plugin(str(pytester.path / "conftest.py")).PROVIDER  # type: ignore[union-attr]
    assert provider.events == ["preflight", "attach", "teardown"]
    assert not d.exists()
