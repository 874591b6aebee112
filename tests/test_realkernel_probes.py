"""Real-kernel tier: the probes' verdicts against real answers, in network namespaces as root.

client (10.250.A.1) <-> node (forwarding) <-> server (10.250.B.2), server rules per verdict:

  8080 listener | 9090 closed (kernel RST) | 9191 reject icmp port-unreachable | 9192 reject tcp reset
  9193 reject icmp host-unreachable | 9194 reject icmp admin-prohibited | 9292 drop

Every probe runs inside the client namespace, which has no default route: nothing leaves the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Iterator

import pytest
from netns import Topology, can_use_netns, three_namespaces, wait_listening
from realkernel import in_netns

from pytest_kpr.traffic.probes import ProbeResult, Verdict, connect_probe, http_probe, syn_probe

pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent]

SERVER_RULES = """
table inet kprt_probe {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp dport 9191 reject with icmp type port-unreachable
    tcp dport 9192 reject with tcp reset
    tcp dport 9193 reject with icmp type host-unreachable
    tcp dport 9194 reject with icmp type admin-prohibited
    tcp dport 9292 drop
  }
}
"""


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path_factory.mktemp("probes"))
    try:
        t.nft("server", SERVER_RULES)
        t.spawn("server", [sys.executable, "-m", "http.server", "8080", "--bind", f"{t.subnets['right']}.2"])
        wait_listening(t, "server", 8080)
        yield t
    finally:
        t.close()


def server(t: Topology) -> str:
    return f"{t.subnets['right']}.2"


def syn(t: Topology, port: int, timeout: float = 1.0, dst: str | None = None) -> ProbeResult:
    return in_netns(t.ns("client"), syn_probe, dst or server(t), port, timeout)


def conn(t: Topology, port: int, timeout: float = 1.0, dst: str | None = None) -> ProbeResult:
    return in_netns(t.ns("client"), connect_probe, dst or server(t), port, timeout)


@pytest.mark.parametrize(
    ("port", "verdict", "icmp"),
    [
        (8080, Verdict.ACCEPTED, None),
        (9090, Verdict.RESET, None),
        (9191, Verdict.ICMP_UNREACHABLE, (3, 3)),
        (9192, Verdict.RESET, None),
        (9193, Verdict.ICMP_UNREACHABLE, (3, 1)),
        (9194, Verdict.ICMP_UNREACHABLE, (3, 13)),
    ],
    ids=["listener", "closed-port", "icmp-port-unreachable", "tcp-reset", "icmp-host-unreachable", "icmp-admin-prohibited"],
)
def test_syn_probe_classifies_real_answers(topo: Topology, port: int, verdict: Verdict, icmp: tuple[int, int] | None) -> None:
    r = syn(topo, port)
    assert r.verdict is verdict, r.explain()
    assert (r.icmp_type, r.icmp_code) == (icmp if icmp else (None, None)), r.explain()


def test_syn_probe_reports_a_drop_as_timeout_after_waiting_the_timeout(topo: Topology) -> None:
    """Correctness, not speed: the verdict comes only after the whole timeout (how close to it is measured
    by scripts/bench_probes.py; figures in docs/reference/probes.md)."""
    r = syn(topo, 9292, timeout=0.6)
    assert r.verdict is Verdict.TIMEOUT, r.explain()
    assert r.elapsed_ms >= 600 - 5, r.explain()  # (timer granularity)


def test_no_route_is_reported_before_anything_is_sent(topo: Topology) -> None:
    def tx_packets() -> int:  # nsenter keeps the host's /sys, so ask `ip` in the namespace
        (link,) = json.loads(topo.exec("client", "ip", "-j", "-s", "link", "show", "dev", "c0").stdout)
        return int(link["stats64"]["tx"]["packets"])

    before = tx_packets()
    r = syn(topo, 80, dst="10.96.0.10")
    c = conn(topo, 80, dst="10.96.0.10")
    after = tx_packets()
    assert r.verdict is Verdict.NO_ROUTE and r.errno_name == "ENETUNREACH", r.explain()
    assert c.verdict is Verdict.NO_ROUTE, c.explain()
    assert before == after, "no packet left the client"


@pytest.mark.parametrize(
    ("port", "verdict", "errno_name"),
    [
        (8080, Verdict.CONNECTED, None),
        (9090, Verdict.REFUSED, "ECONNREFUSED"),
        (9191, Verdict.REFUSED, "ECONNREFUSED"),
        (9192, Verdict.REFUSED, "ECONNREFUSED"),
        (9193, Verdict.UNREACHABLE, "EHOSTUNREACH"),
        (9194, Verdict.UNREACHABLE, "EHOSTUNREACH"),
    ],
    ids=["listener", "closed-port", "icmp-port-unreachable", "tcp-reset", "icmp-host-unreachable", "icmp-admin-prohibited"],
)
def test_connect_probe_sees_what_an_application_sees(topo: Topology, port: int, verdict: Verdict, errno_name: str | None) -> None:
    r = conn(topo, port)
    assert r.verdict is verdict and r.errno_name == errno_name, r.explain()


def test_connect_probe_drop_is_a_timeout(topo: Topology) -> None:
    r = conn(topo, 9292, timeout=0.5)
    assert r.verdict is Verdict.TIMEOUT and r.elapsed_ms >= 500 - 5, r.explain()


def test_icmp_answers_are_not_rate_limited_into_timeouts(topo: Topology) -> None:
    """The responder's icmp_ratelimit (1000 ms, burst 6) would turn the 7th answer into a timeout."""
    verdicts = [syn(topo, 9193, timeout=0.5).verdict for _ in range(10)]
    assert verdicts == [Verdict.ICMP_UNREACHABLE] * 10


def test_http_probe(topo: Topology) -> None:
    ok = in_netns(topo.ns("client"), http_probe, f"http://{server(topo)}:8080/", 3.0)
    assert (ok.verdict, ok.http_code) == (Verdict.HTTP, 200), ok.explain()
    refused = in_netns(topo.ns("client"), http_probe, f"http://{server(topo)}:9090/", 3.0)
    assert refused.verdict is Verdict.REFUSED, refused.explain()


@pytest.mark.parametrize(("kind", "port", "expected"), [("syn", 9191, "icmp-unreachable"), ("connect", 9193, "unreachable"), ("syn", 8080, "accepted")])
def test_kpr_probe_command_inside_a_namespace_prints_one_json_line(topo: Topology, kind: str, port: int, expected: str) -> None:
    """As a user (or a probe pod) runs it: `kpr probe KIND HOST:PORT --json`."""
    cp = subprocess.run(
        ["nsenter", f"--net=/run/netns/{topo.ns('client')}", sys.executable, "-m", "pytest_kpr", "probe", kind, f"{server(topo)}:{port}", "--json", "--timeout", "1"],
        capture_output=True, text=True, timeout=60,
    )
    assert cp.returncode == 0, cp.stderr
    (line,) = cp.stdout.splitlines()
    result = json.loads(line)
    assert result["verdict"] == expected and result["elapsed_ms"] > 0
    if expected == "icmp-unreachable":
        assert (result["icmp_type"], result["icmp_code"]) == (3, 3)
    assert cp.stderr == "", "quiet: no scapy chatter"


def test_connect_reports_the_kernel_sockets_peer_read_in_its_own_namespace(topo: Topology) -> None:
    """socket_peer comes from the probe thread's namespace (/proc/thread-self/net/tcp): without any translation it is
    the server, the same as getpeername(); under socket LB it would be the backend while getpeername() shows the service."""
    r = conn(topo, 8080)
    assert r.verdict is Verdict.CONNECTED and r.extra["socket_peer"] == r.extra["peer"] == f"{server(topo)}:8080", r.extra


def test_the_connect_probes_json_carries_peer_and_socket_peer_at_the_top_as_the_suites_read_them(topo: Topology) -> None:
    """The affinity suite reads each connection's backend as ``socket_peer`` of `kpr probe connect --count N --json`'s
    lines, as the fake cluster prints them; the real command printed them inside an "extra" object (found 2026-12-01):
    every connection would have been read as reaching no backend."""
    cp = subprocess.run(["nsenter", f"--net=/run/netns/{topo.ns('client')}", sys.executable, "-m", "pytest_kpr", "probe", "connect",
                         f"{server(topo)}:8080", "--json", "--count", "2"], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    lines = [json.loads(line) for line in cp.stdout.splitlines()]
    assert len(lines) == 2 and all(x.get("socket_peer") == x.get("peer") == f"{server(topo)}:8080" and "extra" not in x for x in lines), lines
