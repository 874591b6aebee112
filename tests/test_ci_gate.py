"""The CI gate: with KPR_REQUIRE_NETNS=1 the real-kernel tier cannot silently skip."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_skipped_real_kernel_tier_fails_when_required(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    netns: real kernel\naddopts = -p ci_gate --no-netns-hygiene\n")
    pytester.makepyfile("import pytest\n@pytest.mark.netns\ndef test_k():\n    pytest.skip('not root')\n")
    monkeypatch.delenv("KPR_REQUIRE_NETNS", raising=False)
    pytester.runpytest().assert_outcomes(skipped=1)
    monkeypatch.setenv("KPR_REQUIRE_NETNS", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*real-kernel tier skipped but KPR_REQUIRE_NETNS=1 requires it to run: *not root*"])


def test_a_run_without_any_real_kernel_test_fails_when_required(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\naddopts = -p ci_gate --no-netns-hygiene\n")
    pytester.makepyfile("def test_plain(): pass\n")
    monkeypatch.setenv("KPR_REQUIRE_NETNS", "1")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*ERROR at teardown of real-kernel tier gate*",
                                 "no real-kernel (netns) test ran, but KPR_REQUIRE_NETNS=1 requires the tier",
                                 "*1 passed, 1 error*"])


GATE_INI = "[pytest]\nmarkers =\n    netns: real kernel\naddopts = -p ci_gate --no-netns-hygiene\n"


def test_with_xdist_the_gate_is_judged_for_the_whole_run_on_the_controller(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make test` runs in pytest-xdist workers: a worker that got no netns test must not fail the run, the
    run as a whole must have run one; a run with none still fails."""
    pytester.makeini(GATE_INI)
    pytester.makepyfile(test_k="import pytest\n@pytest.mark.netns\ndef test_k(): pass\n", test_plain="def test_a(): pass\ndef test_b(): pass\n")
    monkeypatch.setenv("KPR_REQUIRE_NETNS", "1")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # ci_gate and its helpers
    ok = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    ok.assert_outcomes(passed=3)
    assert ok.ret == 0
    none = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "test_plain.py")
    assert none.ret == pytest.ExitCode.TESTS_FAILED
    none.stdout.fnmatch_lines(["*no real-kernel (netns) test ran, but KPR_REQUIRE_NETNS=1 requires the tier*"])


@pytest.mark.netns
def test_with_xdist_a_workers_leak_fails_the_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker has no terminal: its leak check hands what it found to the controller, which fails the run."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    pytester.makeini("[pytest]\nmarkers =\n    netns: real kernel\naddopts = -p ci_gate\n")
    here = os.path.dirname(__file__)
    pytester.makepyfile(test_leak=f"""
import subprocess, sys
sys.path.insert(0, {here!r})
import pytest
from ownership import name

@pytest.mark.netns
def test_leaks_a_namespace():
    subprocess.run(["ip", "netns", "add", name("leak", "x")], check=True)
""", test_plain="def test_a(): pass\n")
    monkeypatch.setenv("PYTHONPATH", here)
    monkeypatch.delenv("KPR_REQUIRE_NETNS", raising=False)
    before = set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())
    try:
        result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*real-kernel tier leak check*", "*this run left resources behind: *kprt-*-leak-x*"])
    finally:
        for ns in set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()) - before:
            if "-leak-x" in ns:
                subprocess.run(["ip", "netns", "delete", ns], check=False)
