"""``kpr probe syn|connect|http|hold``: the probes as a command, for probe pods and for people.

With ``--json`` each probe prints exactly one JSON object (``verdict``, ``elapsed_ms``, and for ICMP
``icmp_type``/``icmp_code``), so a suite can run it inside a pod and parse one line. Exit status 0
means a verdict was reached (whatever it is); 2 is a usage error.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from .probes import ProbeResult, connect_probe, hold, http_probe, syn_probe


def _target(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def register(sub: Any) -> None:
    p = sub.add_parser("probe", help="Probe a service address: raw SYN, connect(), HTTP, or hold a connection",
                       description="Classify what a client sees at an address. Prints one line (JSON with --json).")
    kinds = p.add_subparsers(dest="probe", metavar="KIND", required=True)
    for name, helptext in (("syn", "Send one raw TCP SYN (needs CAP_NET_RAW) and classify the answer"),
                           ("connect", "connect() like an application: connected, refused, unreachable, timeout")):
        k = kinds.add_parser(name, help=helptext)
        k.add_argument("target", type=_target, metavar="HOST:PORT")
        k.add_argument("--timeout", type=float, default=2.0, help="Seconds to wait for an answer (default 2)")
        k.add_argument("--sport", type=int, help="Source port")
        k.add_argument("--json", action="store_true", help="Print one JSON object")
        k.set_defaults(func=_run)
    k = kinds.add_parser("http", help="HTTP GET: status code and time")
    k.add_argument("url")
    k.add_argument("--timeout", type=float, default=5.0)
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=_run)
    k = kinds.add_parser("hold", help="Hold a TCP connection from a fixed source port; print getpeername() as one JSON line")
    k.add_argument("target", type=_target, metavar="HOST:PORT")
    k.add_argument("--sport", type=int, required=True, help="Source port (the lab uses 40404)")
    k.add_argument("--timeout", type=float, default=5.0, help="connect() timeout")
    k.add_argument("--seconds", type=float, default=0, help="Stop after this long (default: until SIGTERM/SIGINT)")
    k.add_argument("--json", action="store_true", help="Accepted for symmetry: hold always prints JSON")
    k.set_defaults(func=_run_hold)


def _print(r: ProbeResult, as_json: bool) -> None:
    print(json.dumps(r.to_json()) if as_json else r.explain(), flush=True)


def _run(args: argparse.Namespace) -> int:
    if args.probe == "syn":
        host, port = args.target
        r = syn_probe(host, port, timeout=args.timeout, sport=args.sport)
    elif args.probe == "connect":
        host, port = args.target
        r = connect_probe(host, port, timeout=args.timeout, source_port=args.sport)
    else:
        r = http_probe(args.url, timeout=args.timeout)
    _print(r, args.json)
    return 0


def _run_hold(args: argparse.Namespace) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    deadline_timer = None
    if args.seconds > 0:
        deadline_timer = threading.Timer(args.seconds, stop.set)
        deadline_timer.daemon = True
        deadline_timer.start()
    host, port = args.target
    try:
        return hold(host, port, args.sport, sys.stdout, stop.wait, timeout=args.timeout)
    finally:
        if deadline_timer is not None:
            deadline_timer.cancel()
