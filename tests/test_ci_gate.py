"""The CI gate: with KPR_REQUIRE_NETNS=1 the real-kernel tier cannot silently skip."""

from __future__ import annotations

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
