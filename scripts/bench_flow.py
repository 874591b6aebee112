#!/usr/bin/env python3
"""How exactly `kpr probe flow` keeps its cadence: the meter's own overhead, for docs/guides/upgrade.md.

    sudo .venv/bin/python scripts/bench_flow.py [--seconds 10] [--interval-ms 10]

Runs an echo server and a flow over loopback inside a network namespace of its own (``unshare --net``,
so no packet leaves it), TCP then UDP, and prints how late each send was against its schedule and
the round-trip times. Needs root (for the namespace).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading


def inside(seconds: float, interval_ms: float) -> None:
    from pytest_kpr.traffic.flow import echo_server, flow

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    stop = threading.Event()
    for port, udp in ((7200, False), (7201, True)):
        ready = threading.Event()
        threading.Thread(target=echo_server, args=("127.0.0.1", port, udp, stop.wait, ready.set), daemon=True).start()
        ready.wait(5)
        r = flow("127.0.0.1", port, udp=udp, interval_ms=interval_ms, duration_s=seconds).to_json()
        late, rtt = r["send_late_ms"], r["rtt_ms"]
        print(f"{r['proto']}: {r['sent']} messages every {interval_ms:g} ms for {seconds:g} s: send late by median {late['median']:.3f} ms, "
              f"p99 {late['p99']:.3f} ms, max {late['max']:.3f} ms; round trip median {rtt['median']:.3f} ms; "
              f"lost {r['lost']}, longest gap {r['max_gap_ms']} ms")
    stop.set()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--interval-ms", type=float, default=10.0)
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.inside:
        inside(a.seconds, a.interval_ms)
        return
    if os.geteuid() != 0:
        sys.exit("bench_flow.py needs root: it runs the flows in a network namespace of its own")
    cmd = ["unshare", "--net", sys.executable, __file__, "--inside", "--seconds", json.dumps(a.seconds), "--interval-ms", json.dumps(a.interval_ms)]
    sys.exit(subprocess.run(cmd).returncode)


if __name__ == "__main__":
    main()
