"""``kpr replay DIR``: re-judge a recorded run with today's suites and judges, offline, and say which verdicts changed.

DIR is a run's evidence directory: its ``results.json`` holds the verdicts the run reached, its ``recording.jsonl.gz``
the cluster's answers (pytest_kpr.run.recording). ``pytest -m kpr --kpr-provider=replay`` runs in a process of its own
against that recording (with the recording's address families and profile, evidence in a fresh directory); then each
test's recorded verdict is printed beside today's, the changed ones first (the exit status says whether one changed):
a rule change can be checked against every recording the project keeps. The suites are the packaged ones the recorded run ran; extra arguments go to pytest instead
(the paths of a user's own suites, ``-k``). With ``--blind-spots`` the same suites also run against the fake, and each kind
of answer the recording holds in a shape the fake never gave is listed (pytest_kpr.run.shapes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from ..core.exits import declare_exit
from ..core.inputs import BadInput


def _key(test: str) -> str:
    """``suites/test_x.py::test_y[IPv4]`` -> ``test_x.py::test_y[IPv4]``: a test by its module's name, wherever it lies."""
    path, _, name = test.partition("::")
    return f"{path.rsplit('/', 1)[-1]}::{name}"


def verdicts(results: Path) -> dict[str, tuple[str, str]]:
    """test key -> (outcome, reason) of a results.json."""
    try:
        doc = json.loads(results.read_text())
    except (OSError, ValueError) as e:
        raise BadInput(f"{results}: not a run's results.json: {e}") from None
    return {_key(t["test"]): (str(t.get("outcome")), str(t.get("reason") or "")) for t in doc.get("tests") or []}


def compare(recorded: dict[str, tuple[str, str]], today: dict[str, tuple[str, str]]) -> tuple[list[str], list[str]]:
    """(changed lines, unchanged lines): ``CHANGED  test  recorded -> today (today's reason)`` first, then ``same``."""
    changed, same = [], []
    for test in sorted(set(recorded) | set(today)):
        was, now = recorded.get(test, ("absent", "")), today.get(test, ("absent", ""))
        if was[0] != now[0]:
            reason = f"  ({now[1].splitlines()[0][:200]})" if now[1] else ""
            changed.append(f"CHANGED  {test}  {was[0]} -> {now[0]}{reason}")
        else:
            same.append(f"same     {test}  {now[0]}")
    return changed, same


def fake_blind_spots(directory: Path, meta: dict, argv_tail: Sequence[str], python: str = sys.executable) -> list[str]:
    """The recorded run's suites run against the fake (the recording's families and profile); each kind of answer whose
    shape the recording has and the fake's run has not (pytest_kpr.run.shapes), one line per shape element."""
    from ..run.recording import read_recording, recording_meta
    from ..run.replay import recording_file
    from ..run.shapes import blind_spots

    with tempfile.TemporaryDirectory(prefix="kpr-fake-") as out:
        subprocess.run([python, "-m", "pytest", "-m", "kpr", "-p", "no:cacheprovider", "-q", "--kpr-provider=fake", f"--kpr-artifacts={out}",
                        f"--kpr-ip-families={','.join(meta.get('ip_families') or ['IPv4'])}", f"--kpr-profile={meta.get('profile') or 'default'}",
                        *argv_tail], capture_output=True, text=True)
        found = sorted(Path(out).glob("*/recording*.jsonl.gz"))
        if not found:
            return ["BLIND SPOTS  the fake run wrote no recording: nothing to compare with"]
        fake = found[0].read_bytes()
    data = recording_file(directory).read_bytes()
    spots = blind_spots(read_recording(data), read_recording(fake), (str(meta.get("run_id") or ""), str(recording_meta(fake).get("run_id") or "")))
    return [f"BLIND SPOT  {kind}: {element}" for kind, elements in spots.items() for element in elements[:10]]


def replay(directory: Path, pytest_args: Sequence[str], python: str = sys.executable, blind_spots: bool = False) -> int:
    from ..run.recording import recording_meta
    from ..run.replay import recording_file

    results = directory / "results.json"
    if not results.is_file():
        raise BadInput(f"{directory}: no results.json (give a run's evidence directory, e.g. kpr-artifacts/latest/kind)")
    try:
        meta = recording_meta(recording_file(directory).read_bytes())
    except Exception as e:  # noqa: BLE001 - Unavailable (no recording), an unreadable one: one line either way
        raise BadInput(str(e).splitlines()[0]) from None
    recorded = verdicts(results)
    if not pytest_args:  # the packaged suites the recorded run ran, and no other (they would ask what it never did)
        from ..run.resources import packaged_dir

        suites = packaged_dir("suites")
        modules = sorted({k.split("::", 1)[0] for k in recorded})
        pytest_args = [str(suites / m) for m in modules if suites is not None and (suites / m).is_file()]
        missing = [m for m in modules if suites is None or not (suites / m).is_file()]
        if missing:
            raise BadInput(f"{directory}: the recorded run ran {', '.join(missing)}, which is not a packaged suite: name the suites to "
                           "run after DIR (kpr replay DIR path/to/suites)")
    with tempfile.TemporaryDirectory(prefix="kpr-replay-") as out:
        argv = [python, "-m", "pytest", "-m", "kpr", "-p", "no:cacheprovider", "-q", "--kpr-provider=replay", f"--kpr-replay={directory}",
                f"--kpr-artifacts={out}", f"--kpr-ip-families={','.join(meta.get('ip_families') or ['IPv4'])}",
                f"--kpr-profile={meta.get('profile') or 'default'}", *pytest_args]
        print(f"kpr replay: re-judging {len(recorded)} recorded tests of {directory} (pytest -m kpr --kpr-provider=replay)", flush=True)
        run = subprocess.run(argv, capture_output=True, text=True)
        found = sorted(Path(out).glob("*/results.json"))
        if not found:
            tail = (run.stdout + run.stderr).strip().splitlines()[-1:] or ["no output"]
            print(f"kpr replay: the replay wrote no results (pytest exit {run.returncode}): {tail[0]}")
            return 2
        today = verdicts(found[0])
    changed, same = compare(recorded, today)
    for line in changed + same:
        print(line)
    print(f"kpr replay: {len(changed)} of {len(set(recorded) | set(today))} verdicts changed" if changed
          else f"kpr replay: no verdict changed ({len(same)} tests)")
    if blind_spots:
        spots = fake_blind_spots(directory, meta, pytest_args, python)
        for line in spots:
            print(line)
        print(f"kpr replay: {len({s.split(': ', 1)[0] for s in spots})} kinds of answer the fake never gave in that shape" if spots
              else "kpr replay: the fake gave every kind of answer in the recorded shapes")
    return 1 if changed else 0


def _run(args: argparse.Namespace) -> int:
    return replay(Path(args.dir), args.pytest_args, blind_spots=args.blind_spots)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("replay", help="Re-judge a recorded run offline with today's suites; exit 1 when a verdict changed",
                       description=" ".join(__doc__.split("\n\n")[0].split()))
    p.description += " " + declare_exit(p, {0: "when no verdict changed", 1: "when a verdict changed or a test is on one "
                                            "side only", 2: "when DIR is not a recorded run, or the replay wrote no results"})
    p.add_argument("--blind-spots", action="store_true", help="also run the same suites against the fake and list each kind of answer "
                   "the recording holds in a shape the fake never gave (fields, formats, orders): where the fake is wrong")
    p.add_argument("dir", metavar="DIR", help="a run's evidence directory (results.json and recording.jsonl.gz)")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARG", help="passed to pytest (suite paths, -k)")
    p.set_defaults(func=_run)
