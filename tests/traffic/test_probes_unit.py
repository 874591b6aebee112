"""Probes on loopback: result shapes, the hold protocol, the probe pod manifest. As root every test runs in a fresh
network namespace of its own (only loopback), so not even a loopback probe runs in the host's namespace."""

from __future__ import annotations

import io
import json
import os
import socket
import threading
from typing import Iterator

import pytest
from netns import private_netns

from pytest_kpr.traffic.probes import ProbeResult, Verdict, connect_probe, hold, route_source
from pytest_kpr.observe.workloads import probe_pod


@pytest.fixture(autouse=True)
def own_namespace() -> Iterator[None]:
    before = os.readlink("/proc/thread-self/ns/net")
    with private_netns() as ns:
        if ns.entered:
            assert os.readlink("/proc/thread-self/ns/net") != before, "a namespace of its own"
        yield
    assert os.readlink("/proc/thread-self/ns/net") == before, "back in the namespace it started in"


def test_result_json_has_the_keys_suites_parse() -> None:
    r = ProbeResult("syn", "10.96.0.10:80", Verdict.ICMP_UNREACHABLE, 1.23456, icmp_type=3, icmp_code=1)
    assert r.to_json() == {"probe": "syn", "target": "10.96.0.10:80", "verdict": "icmp-unreachable", "elapsed_ms": 1.235, "icmp_type": 3, "icmp_code": 1}
    assert "host-unreachable" in r.explain()


def test_connect_probe_on_loopback() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        ok = connect_probe("127.0.0.1", port, 1.0)
        assert ok.verdict is Verdict.CONNECTED and ok.extra["peer"] == f"127.0.0.1:{port}"
    finally:
        srv.close()
    refused = connect_probe("127.0.0.1", port, 1.0)
    assert (refused.verdict, refused.errno_name) == (Verdict.REFUSED, "ECONNREFUSED")


def test_route_source_uses_the_kernels_choice_without_sending() -> None:
    assert route_source("127.0.0.1") == ("127.0.0.1", None)


def test_hold_reports_getpeername_as_one_json_line_and_holds_until_stopped() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    out = io.StringIO()
    stop = threading.Event()
    rc: list[int] = []
    t = threading.Thread(target=lambda: rc.append(hold("127.0.0.1", port, 0, out, stop.wait)))
    t.start()
    conn, peer = srv.accept()
    try:
        assert t.is_alive(), "the holder keeps the connection"
        stop.set()
        t.join(5)
        (line,) = out.getvalue().splitlines()
        event = json.loads(line)
        assert event["event"] == "connected" and event["app_peer"] == f"127.0.0.1:{port}"
        assert event["local"] == f"{peer[0]}:{peer[1]}"
        assert rc == [0]
    finally:
        conn.close()
        srv.close()


def test_hold_reports_a_failed_connect() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    out = io.StringIO()
    assert hold("127.0.0.1", port, 0, out, lambda t: True) == 1
    assert json.loads(out.getvalue())["errno_name"] == "ECONNREFUSED"


def test_probe_pod_gets_net_raw_only() -> None:
    pod = probe_pod("probe", "kpr-x", "pytest-kpr-probe:0.1.0", node="kpr-worker")
    (c,) = pod["spec"]["containers"]
    assert c["securityContext"] == {"privileged": False, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["NET_RAW"]}}
    assert c["imagePullPolicy"] == "IfNotPresent" and pod["spec"]["nodeName"] == "kpr-worker"


def test_http_from_a_fixed_source_port_repeats_the_same_flow() -> None:
    """``http_probe(source_port=)`` (the Maglev suite's flows): the server sees that port, and the same flow can be sent
    again at once (SO_REUSEADDR); a refused one is classified like connect()."""
    import http.server

    seen: list[tuple[str, int]] = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.client_address)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        from pytest_kpr.traffic.probes import http_probe

        url = f"http://127.0.0.1:{srv.server_address[1]}/?kpr=x"
        sport = 42911
        assert [http_probe(url, 2.0, source_port=sport).http_code for _ in range(3)] == [204, 204, 204]
        assert [p for _, p in seen] == [sport, sport, sport]
    finally:
        srv.shutdown()
        srv.server_close()
    from pytest_kpr.traffic.probes import http_probe

    assert http_probe(url, 1.0, source_port=sport).verdict is Verdict.REFUSED
