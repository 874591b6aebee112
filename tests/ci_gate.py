"""The real-kernel tier's CI gate and hygiene, as a plugin (tests/conftest.py loads it).

Tests marked ``netns`` need root and network namespaces. Locally they skip with a reason when that is
not available. With KPR_REQUIRE_NETNS=1 (set by .ci/run) a skipped netns test is a failure, and so is
a run in which no netns test ran at all. When netns tests ran, anything of theirs still present at
the end (its own namespaces, cgroups, BPF programs, processes) fails the run; leftovers of an earlier
run that is dead (killed) are removed at the start. Another live run's objects are never touched:
names carry their owner (ownership.py).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

REQUIRE_NETNS = "KPR_REQUIRE_NETNS"
_NETNS_RAN = pytest.StashKey[list[str]]()


_WORKER_LEAKS = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_NETNS_RAN] = []
    config.stash[_WORKER_LEAKS] = []
    _CONFIG[:] = [config]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    if item.get_closest_marker("netns") is None:
        return report
    if report.skipped and os.environ.get(REQUIRE_NETNS) == "1" and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"real-kernel tier skipped but {REQUIRE_NETNS}=1 requires it to run: {reason}"
    return report


def _hygiene_enabled(config: pytest.Config) -> bool:
    return os.geteuid() == 0 and not config.option.collectonly and config.getoption("kpr_netns_hygiene", True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-netns-hygiene", dest="kpr_netns_hygiene", action="store_false", default=True,
                     help="Do not remove/report kprt-* leftovers (for nested pytester runs)")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _hygiene_enabled(session.config):
        from realkernel import remove_stale

        removed = remove_stale()
        if removed:
            print(f"real-kernel tier: removed leftovers of an earlier run: {', '.join(removed)}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Counts the netns tests that ran. Reports reach the pytest-xdist controller too, so the gate below is
    judged there for the whole run, not per worker."""
    if report.when == "call" and not report.skipped and "netns" in report.keywords:
        _ran().append(report.nodeid)


_CONFIG: list[pytest.Config] = []


def _ran() -> list[str]:
    return _CONFIG[0].stash[_NETNS_RAN]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist controller: a worker's leak check (it has no terminal of its own) fails the run here."""
    left = getattr(node, "workeroutput", {}).get("kpr_leaks")
    if left:
        _CONFIG[0].stash[_WORKER_LEAKS].extend(left)


@pytest.hookimpl(trylast=True)  # after the runner has torn down every fixture (also on Ctrl-C)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    tr = config.pluginmanager.get_plugin("terminalreporter")
    worker = getattr(config, "workerinput", None) is not None
    worker_leaks: list[str] = config.stash[_WORKER_LEAKS]
    left = [*worker_leaks]
    if config.stash[_NETNS_RAN] and _hygiene_enabled(config):
        from realkernel import leftovers

        left += leftovers()
    if left and worker:
        config.workeroutput["kpr_leaks"] = left  # type: ignore[attr-defined]
        return
    if left:
        _fail_run(session, tr, "real-kernel tier leak check", f"this run left resources behind: {'; '.join(left)}")
    if worker or os.environ.get(REQUIRE_NETNS) != "1" or config.option.collectonly:
        return
    if not session.config.stash[_NETNS_RAN] and exitstatus in (0, 5):
        _fail_run(session, tr, "real-kernel tier gate", f"no real-kernel (netns) test ran, but {REQUIRE_NETNS}=1 requires the tier")


def _fail_run(session: pytest.Session, tr: Any, what: str, message: str) -> None:
    """Fail the run after the tests: exit status 1 and an error in the counts, which pytest's summary then
    shows in its ERRORS section and as a red "N passed, 1 error" (a line written here instead was glued to
    the -q progress line and followed by a green "N passed")."""
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if tr is None:
        return
    report = pytest.TestReport(nodeid=what, location=(__file__, 0, what), keywords={}, outcome="failed",
                               longrepr=message, when="teardown")
    tr.stats.setdefault("error", []).append(report)
