"""``kpr probe syn|connect|http|hold``: the probes as a command, for probe pods and for people.

With ``--json`` each probe prints exactly one JSON object (``verdict``, ``elapsed_ms``, and for ICMP
``icmp_type``/``icmp_code``), so a suite can run it inside a pod and parse one line. Exit status 0
means a verdict was reached (whatever it is); 2 is bad input, reported in one line on stderr before
anything is sent: a port outside 1-65535, a timeout that is not a finite positive number, a host that
is not an address or name or does not resolve (``syn``: to IPv4), a URL that is not http(s).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from ..core import inputs
from ..parse.addr import hp


def register(sub: Any) -> None:
    from .args import argtype, group_help

    target = argtype(inputs.target, "HOST:PORT")
    sport = argtype(lambda t: inputs.port(t, "--sport"), "port")
    p = sub.add_parser("probe", help="Probe a service address: raw SYN, connect(), UDP, HTTP, or hold a connection",
                       description="Classify what a client sees at an address. Prints one line (JSON with --json). "
                                   "Exit status 0 when a verdict was reached, whichever it is; 2 for bad input.")
    p.set_defaults(func=group_help(p))
    kinds = p.add_subparsers(dest="probe", metavar="KIND")
    for name, helptext, v6 in (("syn", "Send one raw TCP SYN (IPv4; needs CAP_NET_RAW) and classify the answer", False),
                               ("connect", "connect() like an application: connected, refused, unreachable, timeout", True)):
        k = kinds.add_parser(name, help=helptext, description=helptext)
        k.add_argument("target", type=target, metavar="HOST:PORT",
                       help="IPv4 address or host name, and port" if not v6 else "address ([IPv6] in brackets) or host name, and port")
        k.add_argument("--timeout", type=argtype(lambda t: inputs.seconds(t, "--timeout"), "seconds"), default=2.0,
                       help="Seconds to wait for an answer, more than zero (default 2)")
        k.add_argument("--sport", type=sport, help="Source port, 1-65535 (default: the kernel's choice)")
        k.add_argument("--json", action="store_true", help="Print one JSON object instead of a sentence")
        if name == "connect":
            k.add_argument("--count", type=argtype(_count, "count"), default=1,
                           help="Connect this many times, one after the other, one line each (1-1000; default 1): which backend "
                                "each connection reached shows as socket_peer (the kernel socket's peer)")
            k.add_argument("--interval", type=argtype(lambda t: inputs.seconds(t, "--interval", allow_zero=True), "seconds"), default=0.0,
                           help="Seconds between the starts of consecutive connections with --count (default 0: one after the other)")
        k.set_defaults(func=_run)
    k = kinds.add_parser("udp", help="One datagram and its reply: answered (and from which address), timeout, refused, unreachable",
                         description="Send one datagram to an echo server and read the reply with recvfrom(): the verdict and "
                                     "reply_from, the address the reply came from (a resolver drops a reply from any other "
                                     "address than the one it sent to). Unconnected (sendto) by default; --connected "
                                     "connects first and records getpeername() as peer.")
    k.add_argument("target", type=target, metavar="HOST:PORT", help="address ([IPv6] in brackets) or host name, and port")
    k.add_argument("--connected", action="store_true", help="connect() the socket first, then send() (default: sendto())")
    k.add_argument("--timeout", type=argtype(lambda t: inputs.seconds(t, "--timeout"), "seconds"), default=2.0,
                   help="Seconds to wait for the reply, more than zero (default 2)")
    k.add_argument("--json", action="store_true", help="Print one JSON object instead of a sentence")
    k.set_defaults(func=_run)
    k = kinds.add_parser("http", help="HTTP GET: status code and time", description="HTTP GET: status code and time")
    k.add_argument("url", type=argtype(inputs.http_url, "URL"), help="http:// or https:// URL")
    k.add_argument("--timeout", type=argtype(lambda t: inputs.seconds(t, "--timeout"), "seconds"), default=5.0,
                   help="Seconds to wait for the response, more than zero (default 5)")
    k.add_argument("--json", action="store_true", help="Print one JSON object instead of a sentence")
    k.set_defaults(func=_run)
    k = kinds.add_parser("hold", help="Hold a TCP connection from a fixed source port; print getpeername() as one JSON line")
    k.add_argument("target", type=target, metavar="HOST:PORT", help="address ([IPv6] in brackets) or host name, and port")
    k.add_argument("--sport", type=sport, required=True, help="Source port, 1-65535 (the lab uses 40404)")
    k.add_argument("--timeout", type=argtype(lambda t: inputs.seconds(t, "--timeout"), "seconds"), default=5.0,
                   help="connect() timeout in seconds, more than zero (default 5)")
    k.add_argument("--seconds", type=argtype(lambda t: inputs.seconds(t, "--seconds", allow_zero=True), "seconds"), default=0,
                   help="Stop after this long (default 0: until SIGTERM/SIGINT)")
    k.add_argument("--json", action="store_true", help="Accepted for symmetry: hold always prints JSON")
    k.set_defaults(func=_run_hold)
    k = kinds.add_parser("echo-server", help="Echo every byte (TCP) or datagram (UDP) back: the far end of `kpr probe flow`",
                         description="Echo every byte (TCP, any number of connections) or datagram (UDP) back, until SIGTERM/SIGINT.")
    k.add_argument("--port", type=argtype(inputs.port, "port"), required=True, help="Port to listen on, 1-65535")
    k.add_argument("--bind", type=argtype(lambda t: inputs.host(t, "--bind"), "address"), default="0.0.0.0",
                   help="Address to listen on (default 0.0.0.0; :: for both families)")
    k.add_argument("--udp", action="store_true", help="UDP instead of TCP")
    k.set_defaults(func=_run_echo)
    k = kinds.add_parser("frag-needed-responder", help="Answer every UDP datagram on a port with an ICMP fragmentation-needed error",
                         description="Answer every UDP datagram on --port with an ICMP fragmentation-needed error (type 3 code 4, "
                                     "next-hop MTU --mtu) sent to its source, as a router with a smaller MTU would: the backend of the "
                                     "ICMP-error suite. One JSON line per answer; until SIGTERM/SIGINT. IPv4; needs CAP_NET_RAW.")
    k.add_argument("--port", type=argtype(inputs.port, "port"), required=True, help="UDP port to answer on, 1-65535")
    k.add_argument("--mtu", type=argtype(lambda t: inputs.number(t, "--mtu", minimum=68, maximum=65535), "bytes"), default=1200.0,
                   help="The next-hop MTU the error names, 68-65535 (default 1200)")
    k.set_defaults(func=_run_frag_needed)
    k = kinds.add_parser("flow", help="Send a message every N ms to an echo server and measure every gap, loss, reset and reconnect",
                         description="A flow that lives through a disruption: a 16-byte message every --interval-ms, each echoed. "
                                     "Prints one JSON summary (max_gap_ms, lost, resets, gaps: [{start, ms}], events) with --json, "
                                     "and a JSON line per gap over --report-gap-ms as it ends. SIGTERM/SIGINT end it early, summary included.")
    k.add_argument("target", type=target, metavar="HOST:PORT", help="address ([IPv6] in brackets) or host name, and port")
    k.add_argument("--udp", action="store_true", help="UDP instead of TCP")
    k.add_argument("--interval-ms", type=argtype(lambda t: inputs.number(t, "--interval-ms", minimum=1, maximum=MAX_MS), "milliseconds"), default=10.0,
                   help="Milliseconds between messages, at least 1 (default 10)")
    k.add_argument("--duration", type=argtype(lambda t: inputs.seconds(t, "--duration"), "seconds"), default=10.0,
                   help="Seconds to run, more than zero (default 10)")
    k.add_argument("--stall-ms", type=argtype(lambda t: inputs.number(t, "--stall-ms", minimum=1, maximum=MAX_MS), "milliseconds"), default=3000.0,
                   help="TCP: give a connection up after this long without an answer, and reconnect (default 3000)")
    k.add_argument("--report-gap-ms", type=argtype(lambda t: inputs.number(t, "--report-gap-ms", minimum=0, maximum=MAX_MS), "milliseconds"), default=100.0,
                   help="Print a JSON line for each gap at least this long (default 100)")
    k.add_argument("--json", action="store_true", help="Print the summary as one JSON object instead of a sentence")
    k.set_defaults(func=_run_flow)


#: the longest millisecond option: a day
MAX_MS = inputs.MAX_SECONDS * 1000


def _count(text: str) -> int:
    n = inputs.number(text, "--count", minimum=1)
    if n != int(n) or n > 1000:
        raise inputs.BadInput(f"--count must be a whole number from 1 to 1000, got {text!r}")
    return int(n)


def _print(r: Any, as_json: bool) -> None:
    print(json.dumps(r.to_json()) if as_json else r.explain(), flush=True)


def _run(args: argparse.Namespace) -> int:
    from ..traffic.probes import connect_probe, http_probe, syn_probe, udp_probe

    if args.probe == "syn":
        host, port = args.target
        r = syn_probe(inputs.resolve(inputs.ipv4_only(host, "the syn probe"), ipv4=True), port, timeout=args.timeout, sport=args.sport)
    elif args.probe == "connect":
        host, port = args.target
        addr = inputs.resolve(host)
        for _ in range(args.count - 1):
            began = time.monotonic()
            _print(connect_probe(addr, port, timeout=args.timeout, source_port=args.sport), args.json)
            time.sleep(max(0.0, args.interval - (time.monotonic() - began)))
        r = connect_probe(addr, port, timeout=args.timeout, source_port=args.sport)
    elif args.probe == "udp":
        host, port = args.target
        r = udp_probe(inputs.resolve(host), port, timeout=args.timeout, connected=args.connected)
    else:
        inputs.resolve(urlsplit(args.url).hostname or "")  # a name that does not resolve is bad input, not a verdict
        r = http_probe(args.url, timeout=args.timeout)
    _print(r, args.json)
    return 0


class _Stop(threading.Event):
    """Set by SIGTERM (the documented early end: exit 0) or SIGINT (Ctrl-C: exit 130, the summary marked interrupted)."""

    signal_name: str | None = None

    @property
    def exit_status(self) -> int:
        return 130 if self.signal_name == "SIGINT" else 0


def _stop_on_signals() -> _Stop:
    stop = _Stop()

    def on(signum: int, frame: Any) -> None:
        stop.signal_name = signal.Signals(signum).name
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on)
    return stop


def _run_echo(args: argparse.Namespace) -> int:
    from ..traffic.flow import echo_server

    stop = _stop_on_signals()
    try:
        echo_server(args.bind, args.port, udp=args.udp, stop=stop.wait,
                    ready=lambda: print(json.dumps({"kind": "echo-server", "listening": hp(args.bind, args.port),
                                                    "proto": "udp" if args.udp else "tcp"}), flush=True))
    except OSError as e:
        print(f"kpr probe echo-server: cannot listen on {hp(args.bind, args.port)}: {e.strerror or e}", file=sys.stderr)
        return 1
    return stop.exit_status


def _run_frag_needed(args: argparse.Namespace) -> int:
    from ..traffic.probes import frag_needed_responder

    stop = _stop_on_signals()
    try:
        print(json.dumps({"kind": "frag-needed-responder", "listening": hp("0.0.0.0", args.port), "proto": "udp"}), flush=True)
        frag_needed_responder(args.port, int(args.mtu), sys.stdout, stop.wait)
    except PermissionError:
        print("kpr probe frag-needed-responder: sending ICMP needs CAP_NET_RAW", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"kpr probe frag-needed-responder: cannot answer on UDP port {args.port}: {e.strerror or e}", file=sys.stderr)
        return 1
    return stop.exit_status


def _run_flow(args: argparse.Namespace) -> int:
    from ..traffic.flow import flow

    host, port = args.target
    stop = _stop_on_signals()  # SIGTERM/SIGINT end the flow early: the summary is still printed
    r = flow(inputs.resolve(host), port, udp=args.udp, interval_ms=args.interval_ms, duration_s=args.duration, stall_ms=args.stall_ms,
             report_gap_ms=args.report_gap_ms, out=sys.stdout if args.json else None, stop=stop.is_set)
    r.stopped_by = stop.signal_name
    _print(r, args.json)
    return stop.exit_status


def _run_hold(args: argparse.Namespace) -> int:
    from ..traffic.probes import hold

    stop = _stop_on_signals()
    deadline_timer = None
    if args.seconds > 0:
        deadline_timer = threading.Timer(args.seconds, stop.set)
        deadline_timer.daemon = True
        deadline_timer.start()
    host, port = args.target
    host = inputs.resolve(host)
    try:
        rc = hold(host, port, args.sport, sys.stdout, stop.wait, timeout=args.timeout)
        return stop.exit_status if rc == 0 else rc
    finally:
        if deadline_timer is not None:
            deadline_timer.cancel()
