#!/usr/bin/env python3
"""Run Cilium's load-balancer test scripts against the fake agent and count, or pin, the outcomes.

    .venv/bin/python scripts/lb_txtar_outcomes.py DIR            # PASS/FAIL/UNSUPPORTED counts, one line per file
    .venv/bin/python scripts/lb_txtar_outcomes.py DIR --pin      # also rewrite tests/data/lb-txtar-outcomes.json

DIR holds copies of cilium/cilium pkg/loadbalancer/tests/testdata/*.txtar. The pins record each file's outcome with
the SHA-256 of the text it was measured on (tests/testing/test_lb_txtar.py enforces an outcome only for that text: a
newer version of a script is run, and reported, but cannot break a pin it was never measured against). Re-pin only
after reading why an outcome changed: a PASS that turns FAIL is a regression of the fake, not a pin to update.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "tests" / "data" / "lb-txtar-outcomes.json"
sys.path.insert(0, str(ROOT))

from pytest_kpr.testing.txtar import run_file  # noqa: E402


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--pin", action="store_true", help=f"rewrite {PINS.relative_to(ROOT)}")
    a = ap.parse_args()
    files = sorted(a.dir.glob("*.txtar"))
    if not files:
        print(f"lb_txtar_outcomes: no *.txtar in {a.dir}", file=sys.stderr)
        return 2
    pins: dict[str, dict[str, str]] = {}
    counts: Counter[str] = Counter()
    for f in files:
        o = run_file(f)
        print(o.line())
        counts[o.verdict] += 1
        pins[f.name] = {"sha256": digest(f), "outcome": o.verdict, **({"detail": o.detail} if o.verdict != "PASS" else {})}
    print(f"{len(files)} files: {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['UNSUPPORTED']} UNSUPPORTED")
    if a.pin:
        PINS.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
        print(f"pinned in {PINS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
