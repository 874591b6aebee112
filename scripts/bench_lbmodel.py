#!/usr/bin/env python3
"""How long `kpr lbmodel replay` takes for a long event list, as JSON and as YAML, for docs/explanation/shared-vip.md.

    .venv/bin/python scripts/bench_lbmodel.py [--events 100000]

Writes the same generated list (500 services moving over 50,000 frontends, one event per millisecond) both ways into
a temporary directory and times the command on each (wall clock, one run each).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    n = ap.parse_args().events
    events = [{"at_ms": i, "op": "upsert", "service": f"t/s{i % 500}", "frontends": [f"10.0.{i % 250}.{i % 200 + 1}:80/TCP"]}
              for i in range(n)]
    with tempfile.TemporaryDirectory(prefix="kpr-bench-lbmodel-") as tmp:
        for name, text in (("events.json", json.dumps({"events": events})), ("events.yaml", yaml.safe_dump({"events": events}))):
            f = Path(tmp) / name
            f.write_text(text)
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, "-m", "pytest_kpr", "lbmodel", "replay", str(f)], capture_output=True, text=True)
            took = time.monotonic() - t0
            print(f"{name}: {n} events, {f.stat().st_size / 1e6:.1f} MB, exit {r.returncode}, {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
