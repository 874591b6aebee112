"""What the self-tests cost in CPU, per test and per file, as a plugin (tests/conftest.py loads it).

Each test's CPU is measured where it runs (an xdist worker or the only process): the process's own CPU time plus that of
the children it waited for (subprocesses, act, qemu), between one report and the next, so setup, call and teardown are
each counted once. The controller adds them up. At the end of a run the terminal shows the total, the files that cost
most, and the reference the budget is written against: the CPU of one run of every suite against the fake, measured in
the same run (tests/test_packaging.py::test_a_dry_run_in_an_empty_directory_runs_the_packaged_suites: `pytest -m kpr
--kpr-provider=fake` in a process of its own). With
KPR_SELFTEST_CPU=FILE the figures are also written there as JSON (scripts/bench_selftests.py reads them).

Figures only: nothing here fails a run (a loaded machine is normal; the budget is measured by the script and written in
docs/contributing/index.md, not asserted).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

#: the test whose CPU is the yardstick: one run of every suite against the fake, as a user starts it
YARDSTICK = "tests/test_packaging.py::test_a_dry_run_in_an_empty_directory_runs_the_packaged_suites"
_MARK = pytest.StashKey[float]()
_TOTALS = pytest.StashKey[dict[str, float]]()


def cpu_now() -> float:
    """This process's CPU seconds and those of the children it has waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


_OUT = pytest.StashKey["str | None"]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TOTALS] = defaultdict(float)
    # taken out of the environment: the runs the tests start (pytester, subprocesses) must not write there too
    config.stash[_OUT] = os.environ.pop("KPR_SELFTEST_CPU", None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    item.stash[_MARK] = cpu_now()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    now = cpu_now()
    report.kpr_cpu = now - item.stash.get(_MARK, now)  # an attribute of the report: xdist carries it to the controller
    item.stash[_MARK] = now
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cpu = getattr(report, "kpr_cpu", None)
    if isinstance(cpu, float) and _CONFIG:
        _CONFIG[0].stash[_TOTALS][report.nodeid] += cpu


_CONFIG: list[pytest.Config] = []


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG[:] = [session.config]


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def summary(per_test: dict[str, float]) -> dict:
    per_file: dict[str, float] = defaultdict(float)
    for nodeid, cpu in per_test.items():
        per_file[_file(nodeid)] += cpu
    return {"tests_cpu_s": round(sum(per_test.values()), 2), "yardstick_cpu_s": round(per_test[YARDSTICK], 2) if YARDSTICK in per_test else None,
            "files": {f: round(c, 2) for f, c in sorted(per_file.items(), key=lambda kv: -kv[1])},
            "tests": {t: round(c, 3) for t, c in sorted(per_test.items(), key=lambda kv: -kv[1])}}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    per_test = config.stash[_TOTALS]
    if len(per_test) < 100 and not config.stash[_OUT]:  # a file or a few tests: not worth a section
        return
    s = summary(per_test)
    write = terminalreporter.write_line
    terminalreporter.section("self-test CPU", sep="-")
    top = ", ".join(f"{Path(f).name} {c:.0f}" for f, c in list(s["files"].items())[:6])
    write(f"tests: {s['tests_cpu_s']:.0f} CPU-s in {len(per_test)} tests; most: {top}")
    if s["yardstick_cpu_s"]:
        write(f"one run of every suite against the fake: {s['yardstick_cpu_s']:.1f} CPU-s; these tests cost "
              f"{s['tests_cpu_s'] / s['yardstick_cpu_s']:.0f} of it (the whole of make test: scripts/bench_selftests.py)")
    out = config.stash[_OUT]
    if out:
        path = Path(out)
        old = json.loads(path.read_text()) if path.is_file() else {}
        old.setdefault("tiers", []).append(s)
        path.write_text(json.dumps(old, indent=1) + "\n")
