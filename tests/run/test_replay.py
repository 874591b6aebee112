"""Replay (pytest_kpr.run.replay): a recorded run answers today's suites offline, request by request.

A fake run's recording replays to identical verdicts for every suite (the healthy default, IPv6 only, hostns-only here;
every fault group's run in tests/test_faults.py, under make test-reach); a recording with one answer removed stops at that request with one
line naming what was asked and what the recording has next; the Player's rules on hand-made entries."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_kpr.core.errors import ApiError, KprError
from pytest_kpr.run.recording import Recorder
from pytest_kpr.run.replay import Player, ReplayClock, ReplayDivergence, ReplayKube
from test_suites_vs_fake import BOUND, CONFTEST, SUITES


def run(pytester: pytest.Pytester, config: str, *args: str, artifacts: str) -> pytest.RunResult:
    import shutil
    import textwrap

    dest = pytester.path / "suites"
    if not dest.exists():
        shutil.copytree(SUITES, dest)
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config=config)))
    return pytester.runpytest(str(dest), "-m", "kpr", f"--kpr-artifacts={artifacts}", "-p", "no:cacheprovider", "--import-mode=importlib",
                              *BOUND, *args)


def verdicts(artifacts: Path) -> dict[str, str]:
    return {t["test"]: t["outcome"] for t in json.loads((artifacts / "results.json").read_text())["tests"]}


def record_and_replay(pytester: pytest.Pytester, config: str, *args: str) -> tuple[dict[str, str], dict[str, str], pytest.RunResult]:
    run(pytester, config, *args, artifacts="rec")
    rec = pytester.path / "rec" / "fake"
    replay = run(pytester, "", "--kpr-provider=replay", f"--kpr-replay={rec}", *args, artifacts="rep")
    return verdicts(rec), verdicts(pytester.path / "rep" / "fake"), replay


#: the configurations no fault group of tests/test_faults.py runs in (each of those groups' runs is replayed there: dual
#: stack, Maglev, topology, drop, small maps, ...): the healthy default, IPv6 only, hostns-only coverage alone
@pytest.mark.parametrize(("config", "args"), [
    ("", ()),
    ("ip_families=('IPv6',)", ("--kpr-ip-families=IPv6",)),
    ("socket_lb_hostns_only=True", ()),
], ids=["default", "ipv6", "hostns-only"])
def test_a_fake_runs_recording_replays_offline_to_the_same_verdicts(pytester: pytest.Pytester, config: str, args: tuple[str, ...]) -> None:
    recorded, replayed, result = record_and_replay(pytester, config, *args)
    assert len(recorded) >= 90 and replayed == recorded
    result.stdout.no_fnmatch_line("*diverged*")


def test_a_recording_with_an_answer_removed_stops_at_that_request_with_one_line(pytester: pytest.Pytester) -> None:
    only = ("-k", "test_headless or test_nodeport")  # a suite before NodePort's, and NodePort's: the rest adds nothing here
    run(pytester, "", *only, artifacts="rec")
    path = pytester.path / "rec" / "fake" / "recording.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    # the first request a NodePort test made: remove it
    i, gone = next((i, json.loads(x)) for i, x in enumerate(lines) if '"test": "suites/test_nodeport.py::' in x)
    path.write_bytes(gzip.compress(("\n".join(lines[:i] + lines[i + 1:]) + "\n").encode()))
    result = run(pytester, "", "--kpr-provider=replay", f"--kpr-replay={path.parent}", *only, artifacts="rep")
    out = result.stdout.str()
    first = next(line for line in out.splitlines() if "replay diverged at request" in line)
    assert f"replay diverged at request {gone['seq'] + 1}: the run asked {gone['seam']} {gone['op']} " in first, first
    assert "the recording has next" in first and "(made by suites/test_nodeport.py::" in first
    assert verdicts(pytester.path / "rep" / "fake")[gone["test"]] in ("failed", "error")


def test_replay_refusals_are_one_line(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_x="import pytest\n@pytest.mark.kpr(property='x')\ndef test_x(): pass\n")
    r = pytester.runpytest("-m", "kpr", "--kpr-provider=replay", "-p", "no:cacheprovider")
    r.stderr.fnmatch_lines(["*--kpr-provider=replay needs --kpr-replay=DIR (the evidence directory of a recorded run)*"])
    r = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", f"--kpr-replay={tmp_path}", "-p", "no:cacheprovider")
    r.stderr.fnmatch_lines(["*--kpr-replay* means nothing with --kpr-provider=fake; it is for --kpr-provider=replay*"])
    r = pytester.runpytest("-m", "kpr", "--kpr-provider=replay", f"--kpr-replay={tmp_path}", "-p", "no:cacheprovider")
    r.stdout.fnmatch_lines(["*--kpr-replay: no recording.jsonl.gz in *"])


def test_a_recording_of_other_families_is_refused_naming_them(pytester: pytest.Pytester) -> None:
    run(pytester, "ip_families=('IPv4', 'IPv6')", "--kpr-ip-families=IPv4,IPv6", "-k", "headless", artifacts="rec")
    r = run(pytester, "", "--kpr-provider=replay", f"--kpr-replay={pytester.path / 'rec' / 'fake'}", artifacts="rep")
    assert "--kpr-replay: the recording was made with --kpr-ip-families=IPv4,IPv6; replay it with the same" in r.stdout.str() + r.stderr.str()


# -- the Player, on hand-made entries ----------------------------------------------------------------------------------------


def entries(*calls: tuple[str, str, dict[str, Any], Any]) -> list[dict[str, Any]]:
    rec = Recorder(iter([1.0, 2.0, 3.0, 4.0]).__next__, lambda: "t::x")
    for seam, op, args, answer in calls:
        if isinstance(answer, BaseException):
            rec.add(seam, op, args, error=answer)
        else:
            rec.add(seam, op, args, answer=answer)
    from pytest_kpr.run.recording import read_recording

    return read_recording(rec.dump())


def test_the_player_answers_in_order_and_moves_the_clock() -> None:
    clock = ReplayClock(0.0, 0.0)
    kube = ReplayKube(Player(entries(("kube", "get", {"args": ["Pod", "a", "ns"]}, {"kind": "Pod"}),
                                     ("kube", "list", {"args": ["Pod", "ns"]}, [])), clock))
    assert kube.get("Pod", "a", "ns") == {"kind": "Pod"} and clock.monotonic() == 1.0
    assert kube.list("Pod", "ns") == [] and clock.monotonic() == 2.0
    clock.sleep(0.5)
    assert clock.monotonic() == 2.5
    with pytest.raises(ReplayDivergence, match=r"^replay: the run asked kube get .* after the recording's last request$"):
        kube.get("Pod", "b", "ns")


def test_a_recorded_error_is_raised_again_as_its_type() -> None:
    kube = ReplayKube(Player(entries(("kube", "get", {"args": ["Pod", "a"]}, ApiError(404, "NotFound", "pods \"a\" not found")),
                                     ("kube", "get", {"args": ["Pod", "b"]}, RuntimeError("boom"))), ReplayClock(0.0, 0.0)))
    with pytest.raises(ApiError) as e:
        kube.get("Pod", "a")
    assert (e.value.status, e.value.reason) == (404, "NotFound")
    with pytest.raises(KprError, match="RuntimeError: boom"):
        kube.get("Pod", "b")


def test_after_a_divergence_every_request_says_the_same_first_divergence() -> None:
    kube = ReplayKube(Player(entries(("kube", "get", {"args": ["Pod", "a"]}, None), ("kube", "get", {"args": ["Pod", "b"]}, None)),
                             ReplayClock(0.0, 0.0)))
    with pytest.raises(ReplayDivergence) as first:
        kube.get("Pod", "z")
    assert str(first.value).startswith('replay diverged at request 1: the run asked kube get {"args": ["Pod", "z"]}; the recording has '
                                       'next kube get {"args": ["Pod", "a"]} (made by t::x)')
    with pytest.raises(ReplayDivergence) as again:
        kube.get("Pod", "a")
    assert str(again.value) == str(first.value)


def test_an_answer_cut_at_the_cap_is_not_guessed() -> None:
    rec = Recorder(lambda: 0.0, lambda: None, answer_cap=10)
    rec.add("kube", "logs", {"args": ["ns", "p"]}, answer="x" * 100)
    from pytest_kpr.run.recording import read_recording

    kube = ReplayKube(Player(read_recording(rec.dump()), ReplayClock(0.0, 0.0)))
    with pytest.raises(ReplayDivergence, match=r"replay: the answer to request 1 .* was cut at the recording's cap"):
        kube.logs("ns", "p")


RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "recordings"


@pytest.mark.parametrize("recording", sorted(p.name for p in RECORDINGS.iterdir() if p.is_dir()))
def test_every_kept_recording_replays_to_its_verdicts(recording: str) -> None:
    """tests/data/recordings/<name>: today's suites and judges on each recording the project keeps (kpr replay) reach the
    recorded verdicts, but for those its expect.json says a fix changed on purpose."""
    import subprocess
    import sys

    d = RECORDINGS / recording
    expect = json.loads((d / "expect.json").read_text()) if (d / "expect.json").exists() else {}
    r = subprocess.run([sys.executable, "-m", "pytest_kpr", "replay", str(d)], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[2])
    changed = {line.split()[1]: line.split()[4] for line in r.stdout.splitlines() if line.startswith("CHANGED")}  # test: today's
    assert changed == expect and r.returncode == (1 if expect else 0), r.stdout[-3000:] + r.stderr[-2000:]
    assert (RECORDINGS / "PROVENANCE.md").read_text().count(f"| {recording} |") == 1, "each recording has its PROVENANCE row"
