from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester without the caller's PYTEST_ADDOPTS (as pytest-django does).

    The inner runs import pytest_kpr again in this process, so pytest warns it cannot rewrite its
    asserts; that is expected here and silenced. Hypothesis's plugin costs 0.6 s per inner session and
    is not used there.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-W ignore::pytest.PytestAssertRewriteWarning -p no:hypothesispytest")
    return pytester


# -- the real-kernel tier must not silently skip in CI ----------------------------------------------
#
# Tests marked ``netns`` need root and network namespaces. Locally they skip with a reason when that
# is not available. With KPR_REQUIRE_NETNS=1 (set by .ci/run) a skipped netns test is a failure, and
# so is a run in which no netns test ran at all.

import os  # noqa: E402

REQUIRE_NETNS = "KPR_REQUIRE_NETNS"
_NETNS_RAN = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_NETNS_RAN] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    if item.get_closest_marker("netns") is None:
        return report
    if report.when == "call" and not report.skipped:
        item.config.stash[_NETNS_RAN].append(item.nodeid)
    if report.skipped and os.environ.get(REQUIRE_NETNS) == "1" and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"real-kernel tier skipped but {REQUIRE_NETNS}=1 requires it to run: {reason}"
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get(REQUIRE_NETNS) != "1" or session.config.option.collectonly:
        return
    if not session.config.stash[_NETNS_RAN] and exitstatus in (0, 5):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"ERROR: no real-kernel (netns) test ran, but {REQUIRE_NETNS}=1 requires the tier", red=True)
