"""A set-up problem stops the run at its first sign with one line and exit 3 (core.errors.SetupRefused), never a run
of failures that `kpr matrix --compare` would read as a regression: a named namespace that does not exist, a pull
Secret that is not there. (A permission the user lacks: tests/cli/test_check_access.py; an object that is not the
run's: tests/run/test_run_ownership.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
FAKE = FakeCluster(FakeConfig())
PROVIDER = FakeProvider(FAKE, created=False)

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""


@pytest.mark.parametrize(("args", "line"), [
    # the run's own namespace is made before the suites: a set-up failure of the run (its phase recorded), exit 3
    (["--kpr-namespace=team-a"], "pytest-kpr: --kpr-namespace team-a: no such namespace"),
    (["--kpr-image-pull-secret=creds/regcred"], "pytest-kpr: stopped: --kpr-image-pull-secret: no Secret creds/regcred"),
])
def test_a_set_up_problem_is_one_line_and_exit_3(pytester: pytest.Pytester, args: list[str], line: str) -> None:
    for name in ("test_nodeport.py", "test_headless.py", "test_iptables.py"):
        shutil.copy(REPO / "suites" / name, pytester.path / name)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest("-m", "kpr", "-p", "no:cacheprovider", "--import-mode=importlib", *args)
    out = result.stdout.str()
    assert result.ret == 3, out[-3000:]
    said = [ln for ln in out.splitlines() if ln.startswith(line)]
    assert len(said) == 1, out[-3000:]
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) <= 1 and not outcomes.get("passed"), outcomes
