"""Packet and socket probes: what a client sees when it talks to a service address.

- :func:`syn_probe`: one raw TCP SYN with scapy; the answer classified as ``accepted`` (SYN-ACK),
  ``reset``, ``icmp-unreachable`` (with type and code), ``timeout``, ``no-route`` (checked before
  anything is sent) or ``inconclusive``.
- :func:`connect_probe`: what an application sees at ``connect()`` (socket LB answers there):
  ``connected``, ``refused``, ``unreachable``, ``timeout``, with the errno.
- :func:`http_probe`: an HTTP GET, status code and time.
- :func:`hold`: a TCP connection from a fixed source port, reported as one JSON line
  (``getsockname`` and ``getpeername``), held until told to stop.

No pytest here: the same functions run in the test process, in network namespaces, and inside a probe
pod through ``kpr probe ... --json``. Verdicts are classified, never retried.

Routing is the kernel's: the source address and the no-route check come from a UDP socket connected
to the destination (nothing is sent), and packets leave through a raw IP socket, so scapy's own
routing table (loaded once at import, blind to network namespaces) is never consulted.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import select
import socket
import struct
import time
import urllib.error
import urllib.request
from typing import Any, Callable, TextIO
from urllib.parse import urlsplit

from ..model.probe import ICMP_CODES, ProbeResult, Verdict  # noqa: F401 (the probes' result types, re-exported)
from ..parse.addr import hp


def _ms(start: float) -> float:
    return (time.monotonic() - start) * 1000.0


def route_source(dst: str) -> tuple[str | None, int | None]:
    """The source address the kernel would use towards ``dst`` (None and the errno when there is no route).

    A UDP socket's ``connect()`` runs the route lookup and sends nothing.
    """
    family = socket.AF_INET6 if ":" in dst else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    try:
        s.connect((dst, 9))
        return s.getsockname()[0], None
    except OSError as e:
        return None, e.errno
    finally:
        s.close()


_scapy_ready = False


def _scapy() -> Any:
    """The scapy names the probes use, imported quietly, once: only the modules that define them. ``scapy.all`` loads
    every layer, more than twice the time (scripts/bench_probes.py --import-only), which each ``kpr probe`` process paid
    before its first packet, and a kernel cell under qemu's TCG tens of times over."""
    global _scapy_ready
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    logging.getLogger("scapy.loading").setLevel(logging.ERROR)
    from types import SimpleNamespace

    from scapy.config import conf
    from scapy.layers.inet import ICMP, IP, TCP, UDP, IPerror, UDPerror
    from scapy.layers.inet6 import ICMPv6DestUnreach, ICMPv6Unknown, IPv6
    from scapy.supersocket import L3RawSocket, L3RawSocket6

    if not _scapy_ready:
        conf.verb = 0
        _scapy_ready = True
    return SimpleNamespace(conf=conf, IP=IP, IPv6=IPv6, TCP=TCP, UDP=UDP, ICMP=ICMP, IPerror=IPerror, UDPerror=UDPerror,
                           ICMPv6DestUnreach=ICMPv6DestUnreach, ICMPv6Unknown=ICMPv6Unknown, L3RawSocket=L3RawSocket,
                           L3RawSocket6=L3RawSocket6)


def syn_probe(dst: str, dport: int, timeout: float = 2.0, sport: int | None = None) -> ProbeResult:
    """Send one TCP SYN and classify the answer: a SYN-ACK, a reset, an ICMP destination unreachable (IPv4 type 3,
    IPv6 type 1, with its code), or nothing. IPv4 or IPv6. Needs CAP_NET_RAW."""
    target = hp(dst, dport)
    v6 = ":" in dst
    start = time.monotonic()
    src, err = route_source(dst)
    if src is None:
        return ProbeResult("syn", target, Verdict.NO_ROUTE, _ms(start), errno=err, errno_name=errno.errorcode.get(err or 0),
                           detail="no route to the destination; nothing was sent")
    sc = _scapy()
    sport = sport or random.randint(40000, 60999)
    ip = sc.IPv6(src=src, dst=dst) if v6 else sc.IP(src=src, dst=dst)
    pkt = ip / sc.TCP(sport=sport, dport=dport, flags="S", seq=random.getrandbits(32))
    sent = _sr1("syn", target, pkt, timeout, start, v6)
    if isinstance(sent, ProbeResult):
        return sent
    ans, elapsed = sent
    source = hp(src, sport)
    if ans is None:
        return ProbeResult("syn", target, Verdict.TIMEOUT, elapsed, source=source, detail=f"no answer within {timeout:g}s")
    unreachable = sc.ICMPv6DestUnreach if v6 else sc.ICMP
    if ans.haslayer(unreachable) or (v6 and ans.haslayer(sc.ICMPv6Unknown)):
        icmp = ans[unreachable] if ans.haslayer(unreachable) else ans[sc.ICMPv6Unknown]
        frm = ans[sc.IPv6].src if v6 else ans[sc.IP].src
        if int(icmp.type) == (1 if v6 else 3):
            return ProbeResult("syn", target, Verdict.ICMP_UNREACHABLE, elapsed, icmp_type=int(icmp.type), icmp_code=int(icmp.code),
                               source=source, detail=f"from {frm}")
        return ProbeResult("syn", target, Verdict.INCONCLUSIVE, elapsed, icmp_type=int(icmp.type), icmp_code=int(icmp.code),
                           source=source, detail="unexpected ICMP message")
    if ans.haslayer(sc.TCP):
        flags = ans[sc.TCP].flags
        if flags.S and flags.A:
            return ProbeResult("syn", target, Verdict.ACCEPTED, elapsed, source=source)
        if flags.R:
            return ProbeResult("syn", target, Verdict.RESET, elapsed, source=source)
        return ProbeResult("syn", target, Verdict.INCONCLUSIVE, elapsed, source=source, detail=f"TCP flags {flags}")
    return ProbeResult("syn", target, Verdict.INCONCLUSIVE, elapsed, source=source, detail=f"unexpected answer {ans.summary()}")


_REFUSED = {errno.ECONNREFUSED}
_UNREACHABLE = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EACCES, errno.EPERM}


def socket_peer(local_ip: str, local_port: int) -> str | None:
    """The kernel socket's remote address for a local address and port, from the calling thread's network namespace
    (/proc/thread-self/net/tcp or tcp6: ``local_address rem_address`` as hex, each 32-bit word little-endian). With
    socket LB it is the backend, while getpeername() shows the service (the getpeername hook reverse-translates it)."""
    import ipaddress

    v6 = ":" in local_ip
    name = "tcp6" if v6 else "tcp"
    path = f"/proc/thread-self/net/{name}" if os.path.exists(f"/proc/thread-self/net/{name}") else f"/proc/net/{name}"

    def enc(ip: str) -> str:
        raw = ipaddress.ip_address(ip).packed
        return "".join(raw[i:i + 4][::-1].hex().upper() for i in range(0, len(raw), 4))

    def dec(text: str) -> str:
        raw = bytes.fromhex(text)
        return str(ipaddress.ip_address(b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))))

    want = f"{enc(local_ip)}:{local_port:04X}"
    try:
        with open(path) as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) > 2 and parts[1] == want:
                    ip_hex, port_hex = parts[2].split(":")
                    return hp(dec(ip_hex), int(port_hex, 16))
    except OSError:
        return None
    return None


def connect_probe(host: str, port: int, timeout: float = 2.0, source_port: int | None = None) -> ProbeResult:
    """``connect()`` as an application does it, bounded by ``timeout``."""
    target = hp(host, port)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    start = time.monotonic()
    try:
        if source_port:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("", source_port))
        s.setblocking(False)
        rc = s.connect_ex((host, port))
        if rc in (errno.EINPROGRESS, errno.EALREADY):
            _, writable, _ = select.select([], [s], [], timeout)
            if not writable:
                return ProbeResult("connect", target, Verdict.TIMEOUT, _ms(start), detail=f"no answer within {timeout:g}s")
            rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        elapsed = _ms(start)
        name = errno.errorcode.get(rc) if rc else None
        if rc == 0:
            local = s.getsockname()
            extra = {"peer": hp(*s.getpeername()[:2])}
            kernel_peer = socket_peer(local[0], local[1])
            if kernel_peer:
                extra["socket_peer"] = kernel_peer
            return ProbeResult("connect", target, Verdict.CONNECTED, elapsed, source=hp(*local[:2]), extra=extra)
        if rc in _REFUSED:
            return ProbeResult("connect", target, Verdict.REFUSED, elapsed, errno=rc, errno_name=name)
        if rc in _UNREACHABLE:
            verdict = Verdict.NO_ROUTE if rc == errno.ENETUNREACH else Verdict.UNREACHABLE
            return ProbeResult("connect", target, verdict, elapsed, errno=rc, errno_name=name)
        if rc == errno.ETIMEDOUT:
            return ProbeResult("connect", target, Verdict.TIMEOUT, elapsed, errno=rc, errno_name=name)
        return ProbeResult("connect", target, Verdict.INCONCLUSIVE, elapsed, errno=rc, errno_name=name)
    except OSError as e:
        verdict = Verdict.NO_ROUTE if e.errno == errno.ENETUNREACH else Verdict.UNREACHABLE if e.errno in _UNREACHABLE else Verdict.INCONCLUSIVE
        return ProbeResult("connect", target, verdict, _ms(start), errno=e.errno, errno_name=errno.errorcode.get(e.errno or 0), detail=str(e))
    finally:
        s.close()


def udp_probe(host: str, port: int, timeout: float = 2.0, connected: bool = False) -> ProbeResult:
    """One datagram to ``host:port`` and the answer, as a resolver does it: unconnected (``sendto()``, the reply read
    with ``recvfrom()``), or ``connected`` (``connect()``, ``send()``, ``recvfrom()``). ``reply_from`` is the address
    recvfrom() reports for the reply. With Cilium's socket LB the datagram goes to a backend, and the recvmsg hook must
    turn the backend's address back into the service's (bpf_sock.c ``cil_sock4_recvmsg``): a resolver that sent to
    the ClusterIP drops a reply from any other address. A connected socket's ``peer`` (getpeername()) is recorded too."""
    target = hp(host, port)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    mode = "connected" if connected else "unconnected"
    s = socket.socket(family, socket.SOCK_DGRAM)
    start = time.monotonic()
    extra: dict[str, Any] = {"mode": mode}
    payload = b"kpr-udp-probe"
    try:
        if connected:
            s.connect((host, port))
            extra["peer"] = hp(*s.getpeername()[:2])
            s.send(payload)
        else:
            s.sendto(payload, (host, port))
        local = s.getsockname()
        readable, _, _ = select.select([s], [], [], timeout)
        if not readable:
            return ProbeResult("udp", target, Verdict.TIMEOUT, _ms(start), source=hp(*local[:2]),
                               detail=f"no reply within {timeout:g}s", extra=extra)
        data, addr = s.recvfrom(65535)
        extra["reply_from"] = hp(*addr[:2])
        extra["echoed"] = data == payload
        return ProbeResult("udp", target, Verdict.ANSWERED, _ms(start), source=hp(*local[:2]), extra=extra)
    except OSError as e:
        name = errno.errorcode.get(e.errno or 0)
        if e.errno in _REFUSED:  # a connected socket reports the ICMP port unreachable on its next call
            return ProbeResult("udp", target, Verdict.REFUSED, _ms(start), errno=e.errno, errno_name=name, extra=extra)
        verdict = Verdict.NO_ROUTE if e.errno == errno.ENETUNREACH else Verdict.UNREACHABLE if e.errno in _UNREACHABLE else Verdict.INCONCLUSIVE
        return ProbeResult("udp", target, verdict, _ms(start), errno=e.errno, errno_name=name, detail=str(e), extra=extra)
    finally:
        s.close()


def http_probe(url: str, timeout: float = 5.0, source_port: int | None = None) -> ProbeResult:
    """An HTTP GET. A response of any status is ``http`` with ``http_code``; no response is classified like connect().
    With ``source_port`` the connection leaves from that port and is closed with a reset (SO_REUSEADDR, SO_LINGER 0), so
    the same flow can be sent again at once."""
    if source_port is not None:
        return _http_from_port(url, timeout, source_port)
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - the URL is the probe's target
            r.read(1 << 16)
            return ProbeResult("http", url, Verdict.HTTP, _ms(start), http_code=r.status)
    except urllib.error.HTTPError as e:
        return ProbeResult("http", url, Verdict.HTTP, _ms(start), http_code=e.code)
    except urllib.error.URLError as e:
        reason = e.reason
        err = reason.errno if isinstance(reason, OSError) else None
        if isinstance(reason, socket.timeout) or isinstance(reason, TimeoutError):
            return ProbeResult("http", url, Verdict.TIMEOUT, _ms(start), detail=str(reason))
        if err in _REFUSED:
            return ProbeResult("http", url, Verdict.REFUSED, _ms(start), errno=err, errno_name=errno.errorcode.get(err))
        if err in _UNREACHABLE:
            v = Verdict.NO_ROUTE if err == errno.ENETUNREACH else Verdict.UNREACHABLE
            return ProbeResult("http", url, v, _ms(start), errno=err, errno_name=errno.errorcode.get(err))
        return ProbeResult("http", url, Verdict.INCONCLUSIVE, _ms(start), detail=str(reason))
    except (TimeoutError, socket.timeout) as e:
        return ProbeResult("http", url, Verdict.TIMEOUT, _ms(start), detail=str(e))


def hold(host: str, port: int, source_port: int, out: TextIO, stop: Callable[[float], bool], timeout: float = 5.0) -> int:
    """Open a TCP connection from ``source_port`` and hold it.

    Writes one JSON line: ``{"event": "connected", "local": ..., "peer": ..., "app_peer": ...}``
    where ``peer``/``app_peer`` is what ``getpeername()`` returns (with socket LB: the service address,
    while the kernel socket points at the backend). Then waits until ``stop(timeout)`` is true (the
    caller blocks in it: a signal, stdin closing), sending nothing. Returns an exit status.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    s.settimeout(timeout)
    try:
        s.bind(("", source_port))
        s.connect((host, port))
    except OSError as e:
        out.write(json.dumps({"event": "error", "target": hp(host, port), "errno": e.errno,
                              "errno_name": errno.errorcode.get(e.errno or 0), "detail": str(e)}) + "\n")
        out.flush()
        s.close()
        return 1
    local = s.getsockname()
    peer = s.getpeername()
    out.write(json.dumps({"event": "connected", "target": hp(host, port), "local": hp(*local[:2]),
                          "app_peer": hp(*peer[:2]), "peer": hp(*peer[:2])}) + "\n")
    out.flush()
    try:
        while not stop(1.0):
            pass
    finally:
        s.close()
    return 0


def _http_from_port(url: str, timeout: float, source_port: int) -> ProbeResult:
    import http.client

    parts = urlsplit(url)
    start = time.monotonic()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # closed with a reset: no TIME_WAIT on this side, so the same flow (4-tuple) can be sent again at once
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.settimeout(timeout)
        sock.bind(("0.0.0.0", source_port))
        sock.connect((parts.hostname or "", parts.port or 80))
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: {parts.hostname}\r\n\r\n".encode())
        r = http.client.HTTPResponse(sock)
        r.begin()
        r.read(1 << 16)
        return ProbeResult("http", url, Verdict.HTTP, _ms(start), http_code=r.status)
    except (TimeoutError, socket.timeout) as e:
        return ProbeResult("http", url, Verdict.TIMEOUT, _ms(start), detail=str(e))
    except OSError as e:
        err = e.errno
        if err in _REFUSED:
            return ProbeResult("http", url, Verdict.REFUSED, _ms(start), errno=err, errno_name=errno.errorcode.get(err))
        if err in _UNREACHABLE:
            v = Verdict.NO_ROUTE if err == errno.ENETUNREACH else Verdict.UNREACHABLE
            return ProbeResult("http", url, v, _ms(start), errno=err, errno_name=errno.errorcode.get(err or 0))
        return ProbeResult("http", url, Verdict.INCONCLUSIVE, _ms(start), detail=str(e))
    except http.client.HTTPException as e:
        return ProbeResult("http", url, Verdict.INCONCLUSIVE, _ms(start), detail=f"not HTTP: {e!r}")
    finally:
        sock.close()


def _sr1(kind: str, target: str, pkt: Any, timeout: float, start: float, v6: bool = False) -> "tuple[Any, float] | ProbeResult":
    """``pkt`` out of a raw socket and the first answer to it (None: none within ``timeout``) with the milliseconds it took;
    a ``kind`` result saying so when this process may not open a raw socket (no CAP_NET_RAW)."""
    sc = _scapy()
    try:
        sock = sc.L3RawSocket6() if v6 else sc.L3RawSocket()
    except PermissionError as e:
        return ProbeResult(kind, target, Verdict.INCONCLUSIVE, _ms(start), errno=e.errno, errno_name="EPERM",
                           detail="raw sockets need CAP_NET_RAW")
    try:
        sent = time.monotonic()
        return sock.sr1(pkt, timeout=timeout, verbose=0), _ms(sent)
    finally:
        sock.close()


def udp_icmp_probe(dst: str, dport: int, timeout: float = 2.0, sport: int | None = None) -> ProbeResult:
    """One UDP datagram (DF set) from a raw socket, and the ICMP error that comes back about it: ``icmp-unreachable``
    with its type and code, and in ``extra`` the error's outer source and the header it carries (``inner_src``,
    ``inner_dst``: the datagram as the error's sender saw it, translated back by any NAT on the way); ``timeout``
    without one. IPv4 only. Needs CAP_NET_RAW."""
    target = hp(dst, dport)
    start = time.monotonic()
    src, err = route_source(dst)
    if src is None:
        return ProbeResult("udp-icmp", target, Verdict.NO_ROUTE, _ms(start), errno=err, errno_name=errno.errorcode.get(err or 0),
                           detail="no route to the destination; nothing was sent")
    sc = _scapy()
    sport = sport or random.randint(40000, 60999)
    pkt = sc.IP(src=src, dst=dst, flags="DF") / sc.UDP(sport=sport, dport=dport) / (b"kpr-icmp-probe" * 4)
    sent = _sr1("udp-icmp", target, pkt, timeout, start)
    if isinstance(sent, ProbeResult):
        return sent
    ans, elapsed = sent
    source = hp(src, sport)
    if ans is None or not ans.haslayer(sc.ICMP):
        return ProbeResult("udp-icmp", target, Verdict.TIMEOUT, elapsed, source=source, detail=f"no ICMP error within {timeout:g}s")
    icmp = ans[sc.ICMP]
    extra: dict[str, Any] = {"from": ans[sc.IP].src}
    if ans.haslayer(sc.IPerror) and ans.haslayer(sc.UDPerror):
        extra["inner_src"] = hp(ans[sc.IPerror].src, int(ans[sc.UDPerror].sport))
        extra["inner_dst"] = hp(ans[sc.IPerror].dst, int(ans[sc.UDPerror].dport))
    if int(icmp.type) == 3 and int(icmp.code) == 4:
        extra["mtu"] = int(getattr(icmp, "nexthopmtu", 0) or 0)
    return ProbeResult("udp-icmp", target, Verdict.ICMP_UNREACHABLE if int(icmp.type) == 3 else Verdict.INCONCLUSIVE, elapsed,
                       icmp_type=int(icmp.type), icmp_code=int(icmp.code), source=source, extra=extra)


def frag_needed(sender: tuple[str, int], own: tuple[str, int], mtu: int, payload_len: int) -> bytes:
    """The ICMP "fragmentation needed" error (type 3 code 4, RFC 1191's next-hop MTU) a router on the way would send to
    ``sender`` about its UDP datagram of ``payload_len`` bytes to ``own``: the ICMP header and, as RFC 792 asks, the
    datagram's IP header and its first 8 bytes (the UDP header), as ``own`` received it."""
    udp = struct.pack("!HHHH", sender[1], own[1], 8 + payload_len, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + payload_len, 0, 0x4000, 64, socket.IPPROTO_UDP, 0,
                     socket.inet_aton(sender[0]), socket.inet_aton(own[0]))
    body = struct.pack("!BBHHH", 3, 4, 0, 0, mtu) + ip + udp
    csum = _checksum(body)
    return body[:2] + struct.pack("!H", csum) + body[4:]


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def frag_needed_responder(port: int, mtu: int, out: TextIO, stop: Callable[[float], bool]) -> int:
    """A UDP port that answers every datagram with an ICMP "fragmentation needed" error about it, sent from a raw socket
    to the datagram's source, as a router with a smaller MTU would (the backend of the ICMP-error suite); one JSON line
    per answer. IPv4. Needs CAP_NET_RAW."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    try:
        while not stop(0.0):
            readable, _, _ = select.select([s], [], [], 0.2)
            if not readable:
                continue
            data, sender = s.recvfrom(65535)
            own = (route_source(sender[0])[0] or "0.0.0.0", port)
            raw.sendto(frag_needed((sender[0], sender[1]), own, mtu, len(data)), (sender[0], 0))
            out.write(json.dumps({"from": hp(*sender[:2]), "to": hp(*own), "icmp": "3/4", "mtu": mtu}) + "\n")
            out.flush()
    finally:
        s.close()
        raw.close()
    return 0
