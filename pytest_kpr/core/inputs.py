"""Input checks shared by every entry point (``kpr`` subcommands, ``--kpr-*`` options, replay files).

Each check either returns the value in its canonical form or raises :class:`BadInput` with one line
that names what was wrong and what is accepted. Entry points turn it into their usage error (exit 2
for ``kpr``, a usage error before any cluster work for pytest), never a traceback.
"""

from __future__ import annotations

import ipaddress
import math
import re
import socket
from typing import Any
from urllib.parse import urlsplit


class BadInput(ValueError):
    """Input that cannot be used; the message is one line for the user."""


_HOSTNAME = re.compile(r"(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")


def port(value: Any, what: str = "port") -> int:
    """A TCP/UDP port: an integer 1..65535 (0 is "any port" to the kernel, never a target)."""
    text = str(value).strip()
    if isinstance(value, bool) or not re.fullmatch(r"\d{1,6}", text) or not 1 <= int(text) <= 65535:
        raise BadInput(f"{what} must be an integer from 1 to 65535, got {_show(value)}")
    return int(text)


#: the longest duration any option takes: a day (a larger one is a typo, and past ~1e9 s the clocks overflow)
MAX_SECONDS = 86400.0


def seconds(value: Any, what: str = "timeout", allow_zero: bool = False, maximum: float = MAX_SECONDS) -> float:
    """A finite, positive duration (or zero when ``allow_zero``), at most ``maximum``."""
    try:
        if isinstance(value, bool):
            raise ValueError
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"{what} must be a number of seconds, got {_show(value)}") from None
    if not math.isfinite(f) or f < 0 or (f == 0 and not allow_zero) or f > maximum:
        bound = "zero or more" if allow_zero else "more than zero"
        raise BadInput(f"{what} must be a finite number of seconds, {bound}, at most {maximum:g}, got {_show(value)}")
    return f


def number(value: Any, what: str, minimum: float | None = None, positive: bool = False, maximum: float | None = None) -> float:
    """A finite number (not a boolean), at least ``minimum`` or strictly positive, at most ``maximum``."""
    try:
        if isinstance(value, bool) or value is None:
            raise ValueError
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"{what} must be a number, got {_show(value)}") from None
    if not math.isfinite(f):
        raise BadInput(f"{what} must be finite, got {_show(value)}")
    if positive and f <= 0:
        raise BadInput(f"{what} must be more than zero, got {_show(value)}")
    if minimum is not None and f < minimum:
        raise BadInput(f"{what} must be at least {minimum:g}, got {_show(value)}")
    if maximum is not None and f > maximum:
        raise BadInput(f"{what} must be at most {maximum:g}, got {_show(value)}")
    return f


def host(text: str, what: str = "host") -> str:
    """An IPv4/IPv6 literal (brackets removed) or a syntactically valid DNS name; nothing is resolved."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1]
    try:
        a = ipaddress.ip_address(t)
    except ValueError:
        pass
    else:
        zone = getattr(a, "scope_id", None)
        if zone is not None and not _interface_here(zone):
            raise BadInput(f"{what} {_show(text)} names the zone {_show(zone)}, which is no interface here")
        return str(a)
    if not _HOSTNAME.fullmatch(t) or t.replace(".", "").isdigit():
        raise BadInput(f"{what} {_show(text)} is neither an IP address nor a host name")
    last = t.rstrip(".").rsplit(".", 1)[-1]
    if re.fullmatch(r"0x[0-9a-f]*|[0-9]+", last, re.IGNORECASE):
        # inet_aton (getaddrinfo) reads 0x7f.1 or 127.0x1 as an address; a host name never ends in a number
        raise BadInput(f"{what} {_show(text)} is an address in a form only inet_aton reads (hex, octal or short); "
                       "write it as a.b.c.d")
    return t


def _interface_here(zone: str) -> bool:
    """Whether an IPv6 zone (``%eth0`` or ``%2``) names an interface of this network namespace."""
    try:
        if zone.isdigit():
            socket.if_indextoname(int(zone))
        else:
            socket.if_nametoindex(zone)
        return True
    except (OSError, OverflowError, ValueError):
        return False


def target(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[IPv6]:PORT``."""
    h, sep, p = text.rpartition(":")
    if not sep or not h:
        raise BadInput(f"expected HOST:PORT, got {_show(text)}")
    if ":" in h and not (h.startswith("[") and h.endswith("]")):
        raise BadInput(f"an IPv6 target is written [ADDRESS]:PORT, got {_show(text)}")
    return host(h), port(p)


def ipv4_only(h: str, what: str) -> str:
    if ":" in h:
        raise BadInput(f"{what} is IPv4-only; {h} is IPv6 (use `kpr probe connect` for IPv6)")
    return h


def resolve(h: str, ipv4: bool = False) -> str:
    """An address literal as it is; a host name's first address (IPv4 first; only IPv4 when ``ipv4``)."""
    try:
        return str(ipaddress.ip_address(h))
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(h, None, socket.AF_INET if ipv4 else socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        family = "an IPv4 address" if ipv4 else "an address"
        raise BadInput(f"cannot resolve host {h!r} to {family}: {getattr(e, 'strerror', None) or e}") from None
    infos.sort(key=lambda i: i[0] != socket.AF_INET)
    return str(infos[0][4][0])


def http_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host and, if given, a port 1..65535."""
    try:
        parts = urlsplit(text.strip())
    except ValueError as e:
        raise BadInput(f"not a URL: {_show(text)} ({e})") from None
    if parts.scheme not in ("http", "https"):
        raise BadInput(f"expected an http:// or https:// URL, got {_show(text)}")
    if not parts.hostname:
        raise BadInput(f"the URL has no host: {_show(text)}")
    host(parts.hostname, "the URL's host")
    netloc_port = parts.netloc.rsplit("]", 1)[-1].rpartition(":")
    if netloc_port[1]:
        port(netloc_port[2], "the URL's port")
    return text.strip()


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)} | {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


def one_line(text: str) -> str:
    """A message made safe to print as one line: control characters (a newline in an argument, a file
    name, a YAML problem) written as escapes."""
    return text.translate(_CONTROL)


def _show(value: Any, limit: int = 60) -> str:
    """A value for an error line: a bounded repr (a YAML alias bomb expands to gigabytes; its repr is never built),
    shortened, never more than one line."""
    r = _REPR.repr(value).replace("\n", "\\n")
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _bounded_repr() -> Any:
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxtuple, r.maxset, r.maxstring, r.maxother = 3, 6, 6, 6, 6, 60, 60
    return r


_REPR = _bounded_repr()
show = _show


def path_component(name: str) -> str:
    """``name`` (a kubeconfig context, a cluster name) as one directory name under the artifacts directory: never a path
    (no '/', no leading '.', no control characters), never empty, at most 100 characters; two names that differ keep
    differing (a digest is added when anything was replaced or cut). EKS contexts are ARNs with '/' and ':'."""
    import hashlib
    import re

    safe = re.sub(r"[^A-Za-z0-9._@+=-]", "_", name).lstrip(".") or "_"
    if safe != name or len(safe) > 100:
        safe = f"{safe[:88]}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"
    return safe


def read_text(path: str, expected: str) -> tuple[str, str]:
    """(name for messages, text) of a file or ``-`` (standard input). Unreadable or non-UTF-8 input
    is :class:`BadInput`, one line, naming ``expected`` (what the file should have been)."""
    import sys

    name = "standard input" if path == "-" else path
    try:
        if path == "-":
            if sys.stdin is None or sys.stdin.closed:  # started with standard input closed (<&-)
                raise BadInput(f"standard input is closed ({expected} expected); pass a file or pipe the output in")
            buffer = getattr(sys.stdin, "buffer", None)
            raw: bytes | str = _bounded(buffer, name, expected) if buffer is not None else sys.stdin.read(MAX_INPUT_BYTES)
        else:
            with open(path, "rb") as f:
                raw = _bounded(f, name, expected)
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except OSError as e:
        raise BadInput(f"cannot read {name}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise BadInput(f"{name} is not UTF-8 text at byte {e.start} ({expected} expected)") from None
    nul = text.find("\x00")
    if nul >= 0:  # no tool output has one; a binary file or a device read by mistake does
        raise BadInput(f"{name} has a NUL byte on line {text.count(chr(10), 0, nul) + 1} ({expected} expected)")
    return name, text


#: more than any tool output this reads (a 200,000-entry conntrack table is about 40 MB)
MAX_INPUT_BYTES = 256 * 1024 * 1024


def _bounded(f: Any, name: str, expected: str) -> bytes:
    """Read in chunks (Ctrl-C stops it between two) and refuse more than MAX_INPUT_BYTES (an endless device)."""
    chunks, total = [], 0
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_INPUT_BYTES:
            raise BadInput(f"{name} is larger than {MAX_INPUT_BYTES >> 20} MiB: not the output of a tool this reads")
        if b"\x00" in chunk:  # fail early on a device or a binary file
            raise BadInput(f"{name} has a NUL byte: not text ({expected} expected)")
        chunks.append(chunk)
