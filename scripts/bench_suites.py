#!/usr/bin/env python3
"""Run the conformance suites against the in-memory fake cluster with the default timeouts and settle
window, as a user's run would wait, and print wall and CPU time and what the run cost the cluster (execs, node commands, API calls).

    .venv/bin/python scripts/bench_suites.py [--settle S] [--repeat N] [--workers N ...]

Copies suites/ into a temporary directory next to a conftest that provides the fake, runs
``pytest -m kpr`` there in a fresh process, and reports the best of N runs. The fake answers at once,
so the wall time is what the suites wait for (polling, the shared-VIP release watch), the CPU time what
they compute. By default it runs without pytest-xdist and with ``-n 2`` (workers' CPU included).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFTEST = """
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

PROVIDER = FakeProvider(FakeCluster(FakeConfig(pod_ready_ticks=2)))


def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""


def run_once(settle: float | None, workers: int) -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory(prefix="kpr-bench-suites-") as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "suites", root / "suites")
        (root / "conftest.py").write_text(CONFTEST)
        args = [sys.executable, "-m", "pytest", "suites", "-m", "kpr", "-q", "-p", "no:cacheprovider", "--kpr-artifacts=artifacts"]
        if settle is not None:
            args.append(f"--kpr-settle={settle}")
        if workers:
            args += ["-n", str(workers)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(args, cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        summary = next((line for line in reversed(r.stdout.splitlines()) if " in " in line and ("passed" in line or "failed" in line)), r.stdout[-300:])
        cost = next((line for line in r.stdout.splitlines() if line.startswith("cluster cost:")), "cluster cost: not reported")
        return wall, cpu, f"{summary.strip('= ')}\n{cost}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settle", type=float, help="--kpr-settle for the run (default: the plugin's, 5 s)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workers", type=int, nargs="+", default=[0, 2], help="pytest-xdist workers per variant (0: without xdist)")
    args = ap.parse_args()
    for workers in args.workers:
        runs = [run_once(args.settle, workers) for _ in range(args.repeat)]
        wall, cpu, summary = min(runs)
        how = f"-n {workers}" if workers else "without xdist"
        print(f"suites against the fake, {how}: wall {wall:.1f} s, CPU {cpu:.1f} s ({summary})")


if __name__ == "__main__":
    main()
