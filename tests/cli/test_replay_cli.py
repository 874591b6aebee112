"""``kpr replay DIR`` (pytest_kpr.cli.replay): a recording made before a judge change reports exactly the tests whose
verdict changed (exit 1); one made with today's judges reports none (exit 0); a directory that is not a recorded run is
one line (exit 2). The comparison's table needs no run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_kpr.cli.replay import compare

SUITES = Path(__file__).resolve().parents[2] / "suites"

FAKE = """
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

PROVIDER = FakeProvider(FakeCluster(FakeConfig(pod_ready_ticks=2)))

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER if str(settings.provider) == "fake" else None
"""

#: yesterday's judge: the headless property's judgement before a change (for a NodePort Service it saw a problem today's
#: rule does not) -- patched in before the suite imports it
YESTERDAYS_JUDGE = """
import pytest_kpr.judge.headless as judge

_today = judge.headless_problems
judge.headless_problems = lambda obs: _today(obs) + (["yesterday's rule"] if obs.asks_for == "NodePort" else [])
"""


def record(tmp_path: Path, conftest: str) -> Path:
    work = tmp_path / "work"
    (work / "suites").mkdir(parents=True)
    for name in ("test_headless.py", "test_iptables.py"):
        shutil.copy(SUITES / name, work / "suites" / name)
    (work / "conftest.py").write_text(textwrap.dedent(FAKE + conftest))
    run = subprocess.run([sys.executable, "-m", "pytest", "suites", "-m", "kpr", "--kpr-provider=fake", "--kpr-artifacts=rec",
                          "-p", "no:cacheprovider", "-q", "--kpr-timeout-scale=0.05"], cwd=work, capture_output=True, text=True)
    assert (work / "rec" / "fake" / "recording.jsonl.gz").exists(), run.stdout[-2000:] + run.stderr[-2000:]
    (work / "conftest.py").write_text(textwrap.dedent(FAKE))  # today: the judges as they are
    return work


def kpr_replay(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_kpr", "replay", "rec/fake", *args], cwd=work, capture_output=True, text=True)


def test_a_recording_made_before_a_judge_change_reports_exactly_the_changed_tests(tmp_path: Path) -> None:
    work = record(tmp_path, YESTERDAYS_JUDGE)
    r = kpr_replay(work, "suites")
    assert r.returncode == 1, r.stdout + r.stderr
    changed = [line for line in r.stdout.splitlines() if line.startswith("CHANGED")]
    assert changed == ["CHANGED  test_headless.py::test_a_nodeport_service_labelled_headless_gets_no_nodeport  failed -> passed"], r.stdout
    assert "kpr replay: 1 of 5 verdicts changed" in r.stdout
    assert r.stdout.index("CHANGED") < r.stdout.index("same ")  # the changed ones first


def test_a_recording_made_with_todays_judges_reports_none(tmp_path: Path) -> None:
    work = record(tmp_path, "")
    r = kpr_replay(work, "suites")
    assert r.returncode == 0 and "kpr replay: no verdict changed (5 tests)" in r.stdout, r.stdout + r.stderr


def test_a_directory_that_is_not_a_recorded_run_is_one_line(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "pytest_kpr", "replay", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "no results.json" in r.stderr, r.stderr


@pytest.mark.parametrize(("recorded", "today", "changed"), [
    ({"a": ("passed", "")}, {"a": ("passed", "")}, []),
    ({"a": ("passed", "")}, {"a": ("failed", "x: y\nmore")}, ["CHANGED  a  passed -> failed  (x: y)"]),
    ({"a": ("passed", "")}, {}, ["CHANGED  a  passed -> absent"]),
    ({}, {"b": ("skipped", "why")}, ["CHANGED  b  absent -> skipped  (why)"]),
])
def test_compare(recorded: dict, today: dict, changed: list[str]) -> None:
    assert compare(recorded, today)[0] == changed


def test_blind_spots_of_a_fake_recording_are_none() -> None:
    """``--blind-spots`` on a kept recording of the fake: the same suites run against the fake give every kind of answer in
    the recorded shapes (a real cluster's recording is where it finds some: tests/run/test_shapes.py plants them)."""
    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-m", "pytest_kpr", "replay", "--blind-spots", "tests/data/recordings/fake-healthy-nodeport"],
                       cwd=repo, capture_output=True, text=True)
    assert r.returncode == 0 and "kpr replay: the fake gave every kind of answer in the recorded shapes" in r.stdout, r.stdout + r.stderr
