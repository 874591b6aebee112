"""Which address families the suites' own servers accept: the lab's workloads, not Cilium, and the fake follows them.

A Service's IPv6 frontend is only as good as its backends' sockets: a backend process that listens on ``0.0.0.0`` refuses
every IPv6 connection that Cilium hands it. So the lab starts its servers on ``::`` whenever the run tests IPv6, and the
fake refuses a connection of a family the backend's command does not listen on. Library code: no pytest, no I/O.

Sources (the lines that decide; checked on this kernel by tests/test_realkernel_ipv6.py, which starts both servers in a
namespace):

- :data:`SRC_HTTP_SERVER_FAMILY`: ``python3 -m http.server PORT`` listens on the first address ``getaddrinfo`` gives for
  a passive socket with no host; glibc gives ``0.0.0.0`` before ``::``, so the server is IPv4 only. ``--bind ::``
  binds a dual-stack socket, and an IPv4 client then appears (and is logged) as ``::ffff:a.b.c.d``.
- ``kpr probe echo-server --bind ::`` (pytest_kpr.traffic.flow.echo_server) clears IPV6_V6ONLY itself: both families.
"""

from __future__ import annotations

import ipaddress
from typing import Sequence

SRC_HTTP_SERVER_FAMILY = ("CPython Lib/http/server.py (3.11 as Debian bookworm installs it) _get_best_family: `family, type, proto, "
                          "canonname, sockaddr = next(iter(infos))` of getaddrinfo(bind, port, AI_PASSIVE), glibc listing 0.0.0.0 "
                          "first; DualStackServer.server_bind: `self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)`")

BOTH = frozenset({"IPv4", "IPv6"})


def _bound_families(bind: str | None, default: frozenset[str]) -> frozenset[str]:
    if bind is None:
        return default
    if bind in ("::", "[::]"):
        return BOTH
    try:
        return frozenset({"IPv6" if ipaddress.ip_address(bind.strip("[]")).version == 6 else "IPv4"})
    except ValueError:
        return default  # a host name: resolved by the pod, not modelled


def _option(command: Sequence[str], *names: str) -> str | None:
    for i, arg in enumerate(command):
        for name in names:
            if arg == name and i + 1 < len(command):
                return command[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def server_families(command: Sequence[str]) -> frozenset[str]:
    """The families a backend's server accepts connections of, from its container command: Python's http.server and
    ``kpr probe echo-server`` as above; any other command is taken to accept both (not a server the suites start)."""
    cmd = list(command)
    if cmd[:3] == ["python3", "-m", "http.server"]:
        return _bound_families(_option(cmd, "--bind", "-b"), frozenset({"IPv4"}))  # SRC_HTTP_SERVER_FAMILY
    if cmd[:3] == ["kpr", "probe", "echo-server"]:
        return _bound_families(_option(cmd, "--bind"), frozenset({"IPv4"}))  # its --bind default is 0.0.0.0
    return BOTH


def listen_address(families: Sequence[str]) -> str | None:
    """The address the lab's servers bind: ``::`` (both families) when the run tests IPv6, else the server's default."""
    return "::" if "IPv6" in families else None


def seen_by(command: Sequence[str], client: str) -> str:
    """The client address a server started with ``command`` sees (and http.server logs): an IPv4 client of a dual-stack
    socket is IPv4-mapped (``::ffff:10.0.0.1``)."""
    if server_families(command) == BOTH and "." in client and ":" not in client:
        return f"::ffff:{client}"
    return client


def logged_client(address: str) -> str:
    """The client address a dual-stack server logged, as the client's own family writes it (``::ffff:10.0.0.1`` ->
    ``10.0.0.1``)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return str(mapped) if mapped is not None else address
