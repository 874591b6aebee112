#!/usr/bin/env python3
"""Benchmark the two large parsers on generated output in the real formats.

    .venv/bin/python scripts/bench_parse.py [--repeat N]

Targets (issue 3): `bpf ct list global` of 200,000 entries in about a second, 400,000 in about twice
that; `bpf lb list` with 10,000 services likewise. Also `service list -o json` of 20,000 services (the
strict JSON reader's checks included). Prints the best of N runs per size.

Then the whole command (issue 11): `kpr parse bpf-ct-list FILE > /dev/null` in a fresh process (start,
read, parse, write JSON), as a ratio to a bare `str.split` loop over the same file in the same run, so
the figure means the same on a slower machine. Target: at most 15x for 200,000 entries.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

from pytest_kpr.parse import parse_ct_list, parse_lb_list, parse_service_list_json
from pytest_kpr.testing import render


def ct_text(n: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    entries = []
    for i in range(n):
        v6 = i % 10 == 0
        ip = (lambda: f"fd00::{rnd.randrange(1, 65535):x}:{rnd.randrange(1, 65535):x}") if v6 else (lambda: f"10.244.{rnd.randrange(256)}.{rnd.randrange(256)}")
        entries.append({
            "proto": "TCP" if i % 3 else "UDP", "dir": ("OUT", "IN", "SVC")[i % 3],
            "src_ip": ip(), "src_port": rnd.randrange(65536), "dst_ip": ip(), "dst_port": rnd.randrange(65536),
            "expires": rnd.randrange(2**31), "packets": rnd.randrange(10**6), "bytes": rnd.randrange(10**9),
            "rx_flags_seen": 0x1B, "last_rx_report": rnd.randrange(2**31), "tx_flags_seen": 0x1B, "last_tx_report": rnd.randrange(2**31),
            "flags": 0x13, "flag_names": ("RxClosing", "TxClosing", "SeenNonSyn"), "rev_nat": rnd.randrange(65536),
            "source_security_id": rnd.randrange(2**24), "backend_id": rnd.randrange(2**16),
        })
    half = n // 2
    return render.ct_list([entries[:half], entries[half:]], (1, 18))


def lb_text(services: int, backends: int = 3, seed: int = 2) -> str:
    rnd = random.Random(seed)
    rows = []
    for sid in range(1, services + 1):
        key = render.addr(f"10.96.{sid // 256}.{sid % 256}", 80, "TCP")
        rows.append((f"{key} (0)", render.lb_master_value(sid, ["ClusterIP", "non-routable"])))
        for slot in range(1, backends + 1):
            be = render.addr(f"10.244.{rnd.randrange(256)}.{rnd.randrange(256)}", 8080, "TCP")
            rows.append((f"{key} ({slot})", f"{be} ({sid}) ({slot})"))
    return render.lb_list(rows)


def service_json_text(services: int, backends: int = 3, seed: int = 3) -> str:
    """``service list -o json`` (the v1.18 shape, indented as the agent prints it) of ClusterIP services."""
    rnd = random.Random(seed)
    entries = [{"id": sid, "ip": f"10.96.{sid // 256}.{sid % 256}", "port": 80, "protocol": "TCP", "type": "ClusterIP",
                "name": f"svc-{sid}", "namespace": "default",
                "backends": [{"ip": f"10.244.{rnd.randrange(256)}.{rnd.randrange(256)}", "port": 8080, "protocol": "TCP",
                              "node": "kind-worker"} for _ in range(backends)]}
               for sid in range(1, services + 1)]
    return render.service_list_json(entries)


def best(fn, text: str, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t0)
    return min(times)


def split_loop(path: str) -> float:
    """The floor: read the file and split every line, nothing else."""
    t0 = time.perf_counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line.split()
    return time.perf_counter() - t0


def command(path: str, fmt: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest_kpr", "parse", fmt, path], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'input':<42}{'lines':>10}{'MB':>8}{'best s':>9}{'µs/line':>9}")
    for n in (200_000, 400_000):
        text = ct_text(n)
        t = best(lambda s: parse_ct_list(s, strict=True, version=(1, 18)), text, args.repeat)
        print(f"{f'bpf ct list global, {n:,} entries':<42}{n:>10,}{len(text) / 1e6:>8.1f}{t:>9.2f}{t / n * 1e6:>9.2f}")
    for services in (10_000, 20_000):
        text = lb_text(services)
        lines = text.count("\n")
        t = best(parse_lb_list, text, args.repeat)
        print(f"{f'bpf lb list, {services:,} services x 3 backends':<42}{lines:>10,}{len(text) / 1e6:>8.1f}{t:>9.2f}{t / lines * 1e6:>9.2f}")
    for services in (20_000,):
        text = service_json_text(services)
        lines = text.count("\n")
        t = best(parse_service_list_json, text, args.repeat)
        print(f"{f'service list -o json, {services:,} services':<42}{lines:>10,}{len(text) / 1e6:>8.1f}{t:>9.2f}{t / lines * 1e6:>9.2f}")
    print()
    print(f"{'kpr parse bpf-ct-list FILE > /dev/null':<42}{'split s':>10}{'kpr s':>8}{'ratio':>9}")
    for n in (200_000, 400_000):
        fd, path = tempfile.mkstemp(suffix=".txt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(ct_text(n))
            base = min(split_loop(path) for _ in range(args.repeat))
            cli = min(command(path, "bpf-ct-list") for _ in range(args.repeat))
        finally:
            os.unlink(path)
        print(f"{f'{n:,} entries':<42}{base:>10.2f}{cli:>8.2f}{cli / base:>8.1f}x")


if __name__ == "__main__":
    main()
