#!/usr/bin/env python3
"""What `make test` costs: wall time, CPU time, and CPU as a multiple of one run of every suite against the fake.

    python3 scripts/bench_selftests.py            # a fresh clone of this checkout's HEAD, as a new user gets it
    python3 scripts/bench_selftests.py --here     # this checkout as it is (its .venv, uncommitted changes included)

The clone gets its virtualenv first (`make venv`, timed on its own line, not in the figures). Then, one after the
other on the same machine:
  - the yardstick on an idle machine: `pytest -m kpr --kpr-provider=fake` in an empty directory, in a process of its own;
  - `make test`, its wall time and the CPU of everything it ran (the make process's waited-for children);
  - the yardstick measured inside that same run (tests/test_packaging.py's dry run, in a process of its own;
    tests/cpu_report.py adds up each test's CPU and writes it to KPR_SELFTEST_CPU).
The budget (docs/contributing/index.md): 150 s wall and 300 CPU-s on an idle 2-core machine, and CPU at most 30 times
the yardstick measured in the same run. The figures are printed and written to kpr-artifacts/bench/selftests.json;
the script exits with make test's status (a budget it misses is printed, not an exit status: a loaded machine is
normal). The clone is removed on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WALL_BUDGET_S = 150
CPU_BUDGET_S = 300
YARDSTICK_BUDGET = 30


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int, float, float]:
    """Run ``argv`` to the end in a session of its own; its exit status, wall seconds and CPU seconds."""
    cpu0, t0 = children_cpu(), time.monotonic()
    with log.open("w") as out:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait()
        except BaseException:
            os.killpg(p.pid, signal.SIGTERM)  # its own process group: everything it started
            p.wait()
            raise
    return rc, time.monotonic() - t0, children_cpu() - cpu0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--here", action="store_true", help="measure this checkout instead of a fresh clone")
    ap.add_argument("--out", type=Path, default=REPO / "kpr-artifacts" / "bench" / "selftests.json")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix=f"kpr-bench-{os.getpid()}-"))
    try:
        if a.here:
            repo = REPO
        else:
            repo = work / "clone"
            subprocess.run(["git", "clone", "-q", str(REPO), str(repo)], check=True)
            print(f"[bench] a fresh clone of {subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()} in {repo}", flush=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KPR_") and k not in ("PYTEST_ADDOPTS", "CI")}
        rc, wall, _ = timed(["make", "venv"], repo, env, work / "venv.log")
        if rc:
            print((work / "venv.log").read_text()[-3000:], file=sys.stderr)
            return rc
        print(f"[bench] make venv: {wall:.0f} s (not counted)", flush=True)

        empty = work / "empty"
        empty.mkdir()
        rc, _, idle = timed([str(repo / ".venv" / "bin" / "python"), "-m", "pytest", "-m", "kpr", "--kpr-provider=fake", "-q", "-p", "no:cacheprovider"],
                            empty, env, work / "yardstick.log")
        if rc:
            print((work / "yardstick.log").read_text()[-3000:], file=sys.stderr)
            return rc
        print(f"[bench] the yardstick on an idle machine: {idle:.2f} CPU-s", flush=True)

        figures = work / "cpu.json"
        print("[bench] make test ...", flush=True)
        rc, wall, cpu = timed(["make", "test"], repo, {**env, "KPR_SELFTEST_CPU": str(figures)}, work / "make-test.log")
        a.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(work / "make-test.log", a.out.parent / "make-test.log")  # kept: the clone is removed
        tiers = json.loads(figures.read_text())["tiers"] if figures.is_file() else []
        in_run = next((t["yardstick_cpu_s"] for t in tiers if t.get("yardstick_cpu_s")), None)
        files: dict[str, float] = {}
        for t in tiers:
            for f, c in t["files"].items():
                files[f] = files.get(f, 0.0) + c
        result = {
            "date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} CPUs", "make_test_exit": rc,
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "tests_cpu_s": round(sum(t["tests_cpu_s"] for t in tiers), 1),
            "yardstick_in_run_cpu_s": in_run, "yardstick_idle_cpu_s": round(idle, 2),
            "times_yardstick_in_run": round(cpu / in_run, 1) if in_run else None, "times_yardstick_idle": round(cpu / idle, 1),
            "files": dict(sorted(((f, round(c, 1)) for f, c in files.items()), key=lambda kv: -kv[1])),
        }
        a.out.write_text(json.dumps(result, indent=1) + "\n")
        verdict = lambda ok: "within" if ok else "OVER"  # noqa: E731
        print(f"[bench] make test: exit {rc}; {wall:.0f} s wall ({verdict(wall <= WALL_BUDGET_S)} {WALL_BUDGET_S}), "
              f"{cpu:.0f} CPU-s ({verdict(cpu <= CPU_BUDGET_S)} {CPU_BUDGET_S})")
        if in_run:
            print(f"[bench] one run of every suite against the fake, in the same run: {in_run:.2f} CPU-s; make test = "
                  f"{cpu / in_run:.0f} of it ({verdict(cpu / in_run <= YARDSTICK_BUDGET)} {YARDSTICK_BUDGET}); idle: {idle:.2f} CPU-s, {cpu / idle:.0f} of it")
        print("[bench] most CPU: " + ", ".join(f"{Path(f).name} {c:.0f}" for f, c in list(result["files"].items())[:8]))
        print(f"[bench] written to {a.out} (make test's log beside it)")
        if rc:
            print((work / "make-test.log").read_text()[-3000:], file=sys.stderr)
        return rc
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
