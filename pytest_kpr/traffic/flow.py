"""A flow that lives through a disruption, measured: ``kpr probe flow`` and ``kpr probe echo-server``.

The client sends a 16-byte message (sequence number, send time) every ``interval`` ms over one TCP
connection or UDP socket; the server echoes every byte back. The client records, each with the
wall-clock time it happened (to tie it to an agent restart):

- every **gap** between answered messages longer than twice the interval (``gaps``: start, ms), and
  ``max_gap_ms``, the longest time without an answer (a flow still silent at the end counts to the end);
- messages **lost** (sent, never answered; UDP loses them, TCP only with its connection);
- **resets** (ECONNRESET), **closed** (the peer ended the connection), **stalls** (no answer for
  ``stall_ms`` although messages were sent: the connection is given up) and **reconnects**;
- the round-trip time, and how late each send was against its schedule (the meter's own overhead).

Cilium's own gate (cilium-cli's conn-disrupt test, ``cilium-cli/connectivity/tests/upgrade.go``) only
compares pod restart counts, and its client exits on an error or after 5 s without a reply: a stall
under 5 s, loss or a renumbered backend go unseen. This one measures.

One loop, no threads: ``select`` waits for an answer until the next send is due.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import select
import socket
import statistics
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

MSG = struct.Struct("!QQ")  # sequence number, client monotonic send time (ns)
RECONNECT_EVERY_S = 0.1


def _wall(mono: float, base: tuple[float, float]) -> float:
    """A monotonic instant as wall-clock epoch seconds (what agent restarts are compared with)."""
    return round(base[1] + (mono - base[0]), 3)


@dataclass
class FlowReport:
    proto: str
    target: str
    interval_ms: float
    duration_s: float
    started: float = 0.0
    ended: float = 0.0
    sent: int = 0
    answered: int = 0
    resets: int = 0
    closed: int = 0
    stalls: int = 0
    #: the socket was terminated from outside the application (ECONNABORTED: SOCK_DESTROY or bpf_sock_destroy, as
    #: Cilium does to the connected UDP sockets of a deleted backend); the flow reconnects
    aborted: int = 0
    reconnects: int = 0
    connect_failures: int = 0
    max_gap_ms: float = 0.0
    gaps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    #: the signal that ended the flow early: SIGTERM (the documented early end) or SIGINT (Ctrl-C: interrupted)
    stopped_by: str | None = None
    rtts_ms: list[float] = field(default_factory=list, repr=False)
    late_ms: list[float] = field(default_factory=list, repr=False)

    @property
    def lost(self) -> int:
        return self.sent - self.answered

    def to_json(self) -> dict[str, Any]:
        def stats(xs: list[float]) -> dict[str, float] | None:
            if not xs:
                return None
            s = sorted(xs)
            return {"median": round(statistics.median(s), 3), "p99": round(s[min(len(s) - 1, int(len(s) * 0.99))], 3), "max": round(s[-1], 3)}

        return {"kind": "flow", "proto": self.proto, "target": self.target, "interval_ms": self.interval_ms, "duration_s": self.duration_s,
                "started": self.started, "ended": self.ended, "sent": self.sent, "answered": self.answered, "lost": self.lost,
                "resets": self.resets, "closed": self.closed, "stalls": self.stalls, "aborted": self.aborted, "reconnects": self.reconnects,
                "connect_failures": self.connect_failures, "stopped_by": self.stopped_by, "interrupted": self.stopped_by == "SIGINT",
                "max_gap_ms": round(self.max_gap_ms, 1), "gaps": self.gaps,
                "events": self.events, "rtt_ms": stats(self.rtts_ms), "send_late_ms": stats(self.late_ms)}

    def explain(self) -> str:
        end = " (interrupted)" if self.stopped_by == "SIGINT" else ""
        if self.sent == 0 and self.connect_failures:
            error = next((e.get("error") for e in self.events if e["event"] == "connect_failed"), "")
            return f"{self.proto} flow to {self.target}: never connected ({self.connect_failures} attempts failed: {error}){end}"
        broken = [f"{n} {w}" for n, w in ((self.resets, "resets"), (self.closed, "closed"), (self.stalls, "stalls"),
                                         (self.aborted, "aborted"), (self.connect_failures, "connect failures")) if n]
        return (f"{self.proto} flow to {self.target}: {self.sent} sent, {self.lost} lost, longest gap {self.max_gap_ms:.0f} ms"
                f"{', ' + ', '.join(broken) if broken else ''}{f', {self.reconnects} reconnects' if self.reconnects else ''}{end}")


class _Meter:
    def __init__(self, host: str, port: int, udp: bool, interval_ms: float, duration_s: float, stall_ms: float,
                 report_gap_ms: float, out: TextIO | None, connect_timeout: float, stop: Callable[[], bool] | None = None):
        self.stop = stop or (lambda: False)
        self.addr = (host, port)
        self.udp = udp
        self.interval = interval_ms / 1000.0
        self.duration = duration_s
        self.stall = stall_ms / 1000.0
        self.report_gap = report_gap_ms / 1000.0
        self.gap_min = 2 * self.interval
        self.out = out
        self.connect_timeout = connect_timeout
        self.base = (time.monotonic(), time.time())
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.r = FlowReport("udp" if udp else "tcp", target, interval_ms, duration_s)
        self.sock: socket.socket | None = None
        self.buf = b""
        self.sent_at: dict[int, float] = {}  # seq -> monotonic send time, until answered
        self.last_answer: float | None = None  # the last answer, or the first send before any answer
        self.silent_since: float | None = None

    # -- events --------------------------------------------------------------------------------------

    def event(self, name: str, at: float, **extra: Any) -> None:
        self.r.events.append({"at": _wall(at, self.base), "event": name, **extra})

    def gap(self, start: float, end: float, open_: bool = False) -> None:
        ms = round((end - start) * 1000.0, 3)  # to the microsecond: thresholds compare as written
        self.r.max_gap_ms = max(self.r.max_gap_ms, ms)
        if ms < self.gap_min * 1000.0:
            return
        g = {"start": _wall(start, self.base), "ms": round(ms, 1), **({"open": True} if open_ else {})}
        self.r.gaps.append(g)
        if self.out is not None and ms >= self.report_gap * 1000.0:
            self.out.write(json.dumps({"kind": "gap", **g}) + "\n")
            self.out.flush()

    # -- the connection ------------------------------------------------------------------------------

    def connect(self, now: float) -> bool:
        try:
            s = socket.socket(socket.AF_INET6 if ":" in self.addr[0] else socket.AF_INET, socket.SOCK_DGRAM if self.udp else socket.SOCK_STREAM)
            if not self.udp:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.settimeout(self.connect_timeout)
            s.connect(self.addr)
            s.setblocking(False)
        except OSError as e:
            s.close()
            self.r.connect_failures += 1
            if not self.r.events or self.r.events[-1]["event"] != "connect_failed":
                self.event("connect_failed", now, error=errno.errorcode.get(e.errno or 0, str(e)))
            return False
        self.sock, self.buf = s, b""
        return True

    def drop(self, why: str, now: float) -> None:
        """The connection is gone (reset, closed or stalled): what it had in flight is lost."""
        assert self.sock is not None
        self.sock.close()
        self.sock = None
        self.sent_at.clear()
        setattr(self.r, why, getattr(self.r, why) + 1)
        self.event({"resets": "reset", "closed": "closed", "stalls": "stalled", "aborted": "aborted"}[why], now)

    # -- sending and receiving -----------------------------------------------------------------------

    def send(self, seq: int, due: float) -> None:
        now = time.monotonic()
        self.r.late_ms.append((now - due) * 1000.0)
        assert self.sock is not None
        try:
            self.sock.send(MSG.pack(seq, time.monotonic_ns()))
        except (BlockingIOError, InterruptedError):
            return  # a full send buffer: the message was not sent (TCP keeps the stream; the gap shows it)
        except ConnectionResetError:
            self.drop("resets", now)
            return
        except OSError as e:
            # terminated from outside (see FlowReport.aborted): the call says so, or -- a UDP socket the kernel aborted is
            # also disconnected, so send() may fail first with EDESTADDRREQ -- the error it left pending (SO_ERROR) does
            if e.errno == errno.ECONNABORTED or self._pending_error() == errno.ECONNABORTED:
                self.drop("aborted", now)
                return
            if self.udp and e.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH):
                self.r.sent += 1  # an ICMP error of an earlier datagram: this one was still handed to the kernel
                self.sent_at[seq] = now
                return
            self.drop("resets" if e.errno in (errno.ECONNRESET, errno.EPIPE) else "closed", now)
            return
        self.r.sent += 1
        self.sent_at[seq] = now
        if self.last_answer is None:
            self.last_answer = now

    def _pending_error(self) -> int:
        """The socket's pending error (SO_ERROR, read and cleared), 0 for none."""
        assert self.sock is not None
        try:
            return int(self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
        except OSError:
            return 0

    def receive(self) -> None:
        assert self.sock is not None
        now = time.monotonic()
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionResetError:
            self.drop("resets", now)
            return
        except OSError as e:
            if e.errno == errno.ECONNABORTED:  # terminated from outside (see FlowReport.aborted)
                self.drop("aborted", now)
                return
            if self.udp:  # ICMP errors surface on a connected UDP socket: the datagram is lost, the flow goes on
                return
            self.drop("resets" if e.errno == errno.ECONNRESET else "closed", now)
            return
        if not data and not self.udp:
            self.drop("closed", now)
            return
        self.buf += data
        while len(self.buf) >= MSG.size:
            seq, sent_ns = MSG.unpack_from(self.buf)
            self.buf = self.buf[MSG.size:]
            if self.sent_at.pop(seq, None) is None:
                continue  # a duplicate or an answer from a connection given up
            self.r.answered += 1
            self.r.rtts_ms.append((time.monotonic_ns() - sent_ns) / 1e6)
            if self.last_answer is not None:
                self.gap(self.last_answer, now)
            self.last_answer = now

    def run(self) -> FlowReport:
        start = time.monotonic()
        self.r.started = _wall(start, self.base)
        end = start + self.duration
        seq, due = 0, start
        next_connect = start
        if self.connect(start):
            self.event("connected", start)
        while True:
            now = time.monotonic()
            if now >= end or self.stop():
                end = min(end, now)
                break
            if self.sock is None and now >= next_connect:
                if self.connect(now):
                    self.r.reconnects += 1
                    self.event("reconnected", now)
                else:
                    next_connect = now + RECONNECT_EVERY_S
            if now >= due:
                if self.sock is not None:
                    self.send(seq, due)
                    seq += 1
                due += self.interval
                if due < now:  # fell behind (a long stall in the loop): keep the cadence, do not burst
                    due = now + self.interval
            if (self.sock is not None and not self.udp and self.sent_at and self.last_answer is not None
                    and now - self.last_answer >= self.stall and now - min(self.sent_at.values()) >= self.stall):
                self.drop("stalls", now)
                next_connect = now
            wait = max(0.0, min(due, end, next_connect if self.sock is None else end) - time.monotonic())
            if self.sock is None:
                time.sleep(wait)
                continue
            ready, _, _ = select.select([self.sock], [], [], wait)
            if ready:
                self.receive()
        # grace for answers in flight: a few round trips, at most 1 s
        grace_end = time.monotonic() + min(1.0, max(0.2, 4 * max(self.r.rtts_ms or [0.0]) / 1000.0))
        while self.sock is not None and self.sent_at and time.monotonic() < grace_end:
            ready, _, _ = select.select([self.sock], [], [], max(0.0, grace_end - time.monotonic()))
            if ready:
                self.receive()
        # silent at the end -- messages unanswered, or the connection gone and not back -- the gap is still open to the end
        if self.last_answer is not None and (self.sent_at or self.sock is None):
            self.gap(self.last_answer, end, open_=True)
        if self.sock is not None:
            self.sock.close()
        self.r.ended = _wall(time.monotonic(), self.base)
        return self.r


def flow(host: str, port: int, *, udp: bool = False, interval_ms: float = 10.0, duration_s: float = 10.0, stall_ms: float = 3000.0,
         report_gap_ms: float = 100.0, out: TextIO | None = None, connect_timeout: float = 2.0,
         stop: Callable[[], bool] | None = None) -> FlowReport:
    """Run one flow for ``duration_s``, or until ``stop()`` is true (SIGTERM in ``kpr probe flow``); gap lines (over
    ``report_gap_ms``) go to ``out`` as they end."""
    return _Meter(host, port, udp, interval_ms, duration_s, stall_ms, report_gap_ms, out, connect_timeout, stop).run()


def echo_server(host: str, port: int, udp: bool = False, stop: Callable[[float], bool] | None = None,
                ready: Callable[[], None] | None = None) -> None:
    """Echo every byte (TCP, any number of connections) or datagram (UDP) until ``stop(timeout)`` is true. On ``::`` it
    takes both families (an IPv4 peer appears as ``::ffff:a.b.c.d``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    srv = socket.socket(family, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6 and ipaddress.ip_address(host) == ipaddress.IPv6Address("::"):
        srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # "::" takes both families, whatever net.ipv6.bindv6only says
    srv.bind((host, port))
    stop = stop or (lambda timeout: False)
    if not udp:
        srv.listen(128)
    srv.settimeout(0.2)
    if ready is not None:
        ready()
    try:
        while not stop(0):
            try:
                if udp:
                    data, peer = srv.recvfrom(65536)
                    srv.sendto(data, peer)
                else:
                    conn, _ = srv.accept()
                    threading.Thread(target=_echo, args=(conn,), daemon=True).start()
            except (socket.timeout, InterruptedError):
                continue
            except OSError:
                continue  # a peer that went away mid-echo is the client's business
    finally:
        srv.close()


def _echo(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        try:
            while data := conn.recv(65536):
                conn.sendall(data)
        except OSError:
            pass
