#!/usr/bin/env python3
"""Probe timing on the real kernel (root): how fast a reset or ICMP answer is classified, and how close
a drop's `timeout` verdict comes to the configured timeout.

    sudo .venv/bin/python scripts/bench_probes.py [--rounds 50]
    .venv/bin/python scripts/bench_probes.py --import-only     # what a `kpr probe` process pays before its first packet

The first lines: the import a raw-packet probe needs (pytest_kpr.traffic.probes._scapy, only the modules that define the
layers it sends) beside ``import scapy.all``, each in fresh processes (median of 5).

Builds its own client/node/server network namespaces (kprt-*), removes them at the end.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from netns import three_namespaces, wait_listening  # noqa: E402
from realkernel import in_netns  # noqa: E402

from pytest_kpr.traffic.probes import connect_probe, syn_probe  # noqa: E402

RULES = """
table inet kprt_probe {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp dport 9191 reject with icmp type port-unreachable
    tcp dport 9193 reject with icmp type host-unreachable
    tcp dport 9292 drop
  }
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--import-only", action="store_true", help="only the import times (no root, no namespaces)")
    args = ap.parse_args()
    for what, code in (("probes' scapy import", "from pytest_kpr.traffic.probes import _scapy; _scapy()"), ("import scapy.all", "import scapy.all")):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - start)
        print(f"{what:<34}{'':<18}{statistics.median(times) * 1000:>10.0f} ms (a fresh process, median of 5)")
    if args.import_only:
        return
    t = three_namespaces(Path("/tmp"))
    try:
        t.nft("server", RULES)
        server = f"{t.subnets['right']}.2"
        t.spawn("server", [sys.executable, "-m", "http.server", "8080", "--bind", server])
        wait_listening(t, "server", 8080)
        client = t.ns("client")
        print(f"{'probe':<34}{'verdict':<18}{'median ms':>10}{'p95 ms':>9}{'n':>5}")
        for name, port in (("listener", 8080), ("closed port (RST)", 9090), ("icmp port-unreachable", 9191), ("icmp host-unreachable", 9193)):
            for kind, fn in (("syn", syn_probe), ("connect", connect_probe)):
                results = [in_netns(client, fn, server, port, 1.0) for _ in range(args.rounds)]
                verdicts = {r.verdict.value for r in results}
                ms = sorted(r.elapsed_ms for r in results)
                print(f"{kind + ' ' + name:<34}{'/'.join(sorted(verdicts)):<18}{statistics.median(ms):>10.2f}{ms[int(len(ms) * 0.95) - 1]:>9.2f}{len(ms):>5}")
        for timeout in (0.5, 1.0, 2.0):
            for kind, fn in (("syn", syn_probe), ("connect", connect_probe)):
                results = [in_netns(client, fn, server, 9292, timeout) for _ in range(3)]
                errs = [abs(r.elapsed_ms - timeout * 1000) / (timeout * 1000) * 100 for r in results]
                print(f"{kind + f' drop, timeout {timeout:g}s':<34}{'/'.join(sorted({r.verdict.value for r in results})):<18}"
                      f"{statistics.median(r.elapsed_ms for r in results):>10.1f}{'':>9}{len(results):>5}   max error {max(errs):.1f}%")
    finally:
        t.close()


if __name__ == "__main__":
    main()
