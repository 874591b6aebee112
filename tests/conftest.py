from __future__ import annotations

import pytest

pytest_plugins = ["pytester", "ci_gate", "cpu_report"]


def pytest_configure(config: pytest.Config) -> None:
    """The runner's route ledgers (pytest_kpr.cluster.routes) of the self-tests go to a directory of this session's, not
    to the machine's /run/pytest-kpr, where a real run's `kpr cleanup --routes` would read them."""
    import os
    import tempfile

    if not os.environ.get("KPR_STATE_DIR"):
        os.environ["KPR_STATE_DIR"] = config._kpr_state_dir = tempfile.mkdtemp(prefix=f"kpr-state-{os.getpid()}-")  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    made = getattr(config, "_kpr_state_dir", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester without the caller's PYTEST_ADDOPTS (as pytest-django does).

    The inner runs import pytest_kpr again in this process, so pytest warns it cannot rewrite its
    asserts; that is expected here and silenced. Hypothesis's plugin costs 0.6 s per inner session and
    is not used there.
    """
    # --kpr-suites=none: an inner run with kpr tests of its own does not get the packaged suites added
    monkeypatch.setenv("PYTEST_ADDOPTS", "-W ignore::pytest.PytestAssertRewriteWarning -p no:hypothesispytest --kpr-suites=none")
    # the inner runs do not inherit the outer CI variable (it changes what a kpr run requires): a test that means CI sets it
    monkeypatch.delenv("CI", raising=False)
    return pytester


def _hypothesis_profiles() -> None:
    """Every run replays the same examples: derandomised (Hypothesis's seed is fixed per test), without a database, so
    make test passes or fails the same way on every machine and every run, CI or not. Finding new examples is a
    separate step: scripts/hypothesis_fresh_runs.sh N FILE sets KPR_HYPOTHESIS=explore (random seeds, three times the
    examples: helpers.examples) and runs the file N times; each counterexample it finds becomes an explicit @example
    (docs/contributing/index.md, "Property tests")."""
    from hypothesis import HealthCheck, settings

    from helpers import EXPLORING

    # no deadline: a self-test must not depend on the machine's speed (a 200 ms deadline failed a loaded run of
    # scripts/stress_selftests.sh: an example took 312 ms)
    calm = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}  # nor its generation speed
    settings.register_profile("replay", derandomize=True, database=None, print_blob=True, **calm)
    settings.register_profile("explore", derandomize=False, database=None, print_blob=True, **calm)
    settings.load_profile("explore" if EXPLORING else "replay")


_hypothesis_profiles()


def _import_what_the_inner_runs_import() -> None:
    """pytester's inner runs forget every module they imported (a sys.modules snapshot is restored after each run), and
    with PYTHONDONTWRITEBYTECODE pytest re-rewrites and recompiles them every time: 0.7 s per run of the suites. Imported
    here once, they stay."""
    import importlib
    import pkgutil

    import hypothesis.strategies  # noqa: F401 - the shared-VIP suite's

    import pytest_kpr

    for mod in pkgutil.walk_packages(pytest_kpr.__path__, "pytest_kpr."):
        if not mod.name.endswith(".__main__"):  # that one runs the CLI
            importlib.import_module(mod.name)


_import_what_the_inner_runs_import()


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: a checkout without it (make test-package's) must still collect
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """make test's default distribution (``--dist load``), except for the tests that share one run of the suites: the
    rows of a fault group in tests/test_faults.py, and the readers of the healthy run in tests/test_suites_vs_fake.py,
    each go to one worker, which runs their run once (xdist's own ``loadgroup`` cannot group them: see
    pytest_kpr/plugin/hooks.py, pytest_cmdline_main); the replay of a fault group's run goes with its rows. Every other
    test is a scope of its own, as under ``load``."""
    if config.getvalue("dist") != "load":
        return None
    from test_faults import GROUP_OF, REPLAY_TEST, ROW_TEST
    from test_suites_vs_fake import HEALTHY_READERS
    from xdist.scheduler import LoadScopeScheduling

    class SharedRunsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path, _, rest = nodeid.partition("::")
            for test in (ROW_TEST, REPLAY_TEST):  # a group's rows and the replay of its run: one worker, one run
                if path.endswith("test_faults.py") and rest.startswith(f"{test}[") and rest.endswith("]"):
                    return f"fault-group-{GROUP_OF.get(rest[len(test) + 1:-1], rest)}"
            if path.endswith("test_suites_vs_fake.py") and rest in HEALTHY_READERS:
                return "healthy-run"
            return nodeid

    return SharedRunsTogether(config, log)  # type: ignore[arg-type]
