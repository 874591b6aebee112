"""Real-kernel tier: a NodePort served with nobody listening, and a real BPF socket load balancer,
observed with the plugin's own Node handle, parsers and property checks.

These are the kernel-level facts the NodePort and socket-LB suites assert on Cilium, reproduced with
nftables and a cgroup/connect4 + cgroup/getpeername4 program, so the suites' logic is checked against
a real kernel (including that it fails when the datapath does per-packet NAT instead).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Iterator

import pytest
from netns import Topology, can_use_netns, three_namespaces, wait_listening
from realkernel import NetnsRunner, SocketLB, compile_sock_lb, in_netns, need_clang, spawn_in

from pytest_kpr.judge.socket_lb import SocketLBObservation, socket_lb_problems
from pytest_kpr.observe.node import Node
from pytest_kpr.traffic.probes import Verdict, connect_probe, http_probe

pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent]

REPO = Path(__file__).resolve().parent.parent
SERVICE = ("10.96.0.10", 80)
CT_WATCH = """
table inet kprt_ctwatch {
  chain out {
    type filter hook output priority 0; policy accept;
    ct state new counter
  }
}
"""


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path_factory.mktemp("datapath"))
    try:
        t.spawn("server", [sys.executable, "-m", "http.server", "8080", "--bind", f"{t.subnets['right']}.2"])
        wait_listening(t, "server", 8080)
        t.nft("client", CT_WATCH)  # conntrack only records flows once some rule needs ct
        yield t
    finally:
        t.close()


def backend(t: Topology) -> tuple[str, int]:
    return f"{t.subnets['right']}.2", 8080


def test_nodeport_answers_with_nobody_listening_and_no_iptables_rule(topo: Topology) -> None:
    be_ip, be_port = backend(topo)
    node_ip = f"{topo.subnets['left']}.2"
    topo.nft("node", f"""
table ip kprt_nodeport {{
  chain prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    fib daddr type local tcp dport 30780 counter dnat to {be_ip}:{be_port}
  }}
}}
""")
    node = Node(NetnsRunner(topo), "node")
    r = in_netns(topo.ns("client"), http_probe, f"http://{node_ip}:30780/", 3.0)
    assert (r.verdict, r.http_code) == (Verdict.HTTP, 200), r.explain()
    assert node.listening(30780) == [], "nothing listens on the NodePort"
    assert Node(NetnsRunner(topo), "server").listening(8080), "positive control: the same check sees a real listener"
    dumps = node.rule_dumps()
    assert dumps["iptables-nft"].count_token("30780") == 0 and dumps["iptables-legacy"].count_token("30780") == 0
    assert dumps["nft"].count_token("30780") == 1, "positive control: the nft view does show the translation rule"
    (entry,) = [e for e in node.conntrack() if e.orig_dst == f"{node_ip}:30780"]
    assert entry.translated and entry.reply_src == f"{be_ip}:{be_port}", entry


def test_nodeport_iptables_view_sees_an_iptables_rule(topo: Topology) -> None:
    """Control for the check above: a kube-proxy style iptables NodePort rule is counted."""
    be_ip, be_port = backend(topo)
    topo.exec("node", "iptables-nft", "-t", "nat", "-A", "PREROUTING", "-p", "tcp", "--dport", "30781", "-m", "addrtype",
              "--dst-type", "LOCAL", "-j", "DNAT", "--to-destination", f"{be_ip}:{be_port}")
    topo.exec("node", "iptables-legacy", "-t", "nat", "-A", "PREROUTING", "-p", "tcp", "--dport", "30782", "-m", "addrtype",
              "--dst-type", "LOCAL", "-j", "DNAT", "--to-destination", f"{be_ip}:{be_port}")
    dumps = Node(NetnsRunner(topo), "node").rule_dumps()
    assert dumps["iptables-nft"].count_token("30781") == 1 and dumps["iptables-legacy"].count_token("30781") == 0
    assert dumps["iptables-legacy"].count_token("30782") == 1 and dumps["nft"].count_token("30782") == 0, "legacy rules are invisible to nft"


@pytest.fixture
def socket_lb(topo: Topology, tmp_path: Path) -> Iterator[SocketLB]:
    need_clang()
    lb = SocketLB(compile_sock_lb(tmp_path, SERVICE, backend(topo)))
    try:
        yield lb
    finally:
        lb.close()


def observe_holder(topo: Topology, lb: SocketLB | None, sport: int) -> tuple[SocketLBObservation, Node, Node]:
    holder = spawn_in(lb, topo.ns("client"), [sys.executable, "-m", "pytest_kpr", "probe", "hold", f"{SERVICE[0]}:{SERVICE[1]}", "--sport", str(sport), "--seconds", "30"])
    topo.procs.append(holder)  # type: ignore[arg-type]  # stopped by PID at teardown even if this test fails
    line = holder.stdout.readline() if holder.stdout else ""
    event = json.loads(line)
    assert event["event"] == "connected", event
    client, server = Node(NetnsRunner(topo), "client"), Node(NetnsRunner(topo), "server")
    (sock,) = client.connections(sport)
    service = f"{SERVICE[0]}:{SERVICE[1]}"
    translations = [e for e in client.conntrack() if e.orig_src.endswith(f":{sport}") and e.orig_dst == service]
    obs = SocketLBObservation(
        service=service, client=event["local"], app_peer=event["app_peer"], socket_peer=sock.peer,
        backends=frozenset({"%s:%d" % backend(topo)}), service_translations=len(translations),
    )
    return obs, client, server


def test_socket_lb_getpeername_shows_the_service_while_the_socket_points_at_the_backend(topo: Topology, socket_lb: SocketLB) -> None:
    obs, client, server = observe_holder(topo, socket_lb, 40404)
    assert obs.app_peer == "10.96.0.10:80"
    assert obs.socket_peer == "%s:%d" % backend(topo)
    assert socket_lb_problems(obs) == []
    to_backend = [e for e in client.conntrack() if e.orig_src == obs.client]
    assert to_backend and not any(e.translated for e in to_backend), "conntrack holds the backend flow, without NAT"
    peers = {s.peer for s in server.connections(8080)}
    assert obs.client in peers, f"the backend sees the client's own address {obs.client}: {peers}"


def test_socket_lb_check_fails_on_per_packet_nat(topo: Topology) -> None:
    """The same judgement against kube-proxy-style DNAT in the client's OUTPUT hook: it must fail."""
    be_ip, be_port = backend(topo)
    topo.exec("client", "ip", "route", "add", "10.96.0.0/12", "via", f"{topo.subnets['left']}.2")
    topo.nft("client", f"""
table ip kprt_kubeproxy {{
  chain output {{
    type nat hook output priority -100; policy accept;
    ip daddr {SERVICE[0]} tcp dport {SERVICE[1]} counter dnat to {be_ip}:{be_port}
  }}
}}
""")
    try:
        obs, _, _ = observe_holder(topo, None, 40405)
        problems = socket_lb_problems(obs)
        assert obs.app_peer == obs.socket_peer == "10.96.0.10:80"
        assert any("not rewritten at connect()" in p for p in problems), problems
        assert any("service translation entries" in p for p in problems), problems
        assert socket_lb_problems(obs, coverage="Hostns-only") == [], "per-packet NAT is what hostns-only coverage means for pods"
    finally:
        topo.exec("client", "nft", "delete", "table", "ip", "kprt_kubeproxy")
        topo.exec("client", "ip", "route", "del", "10.96.0.0/12")


def test_a_client_outside_the_cgroup_is_not_load_balanced(topo: Topology, socket_lb: SocketLB) -> None:
    r = in_netns(topo.ns("client"), connect_probe, *SERVICE, 1.0)
    assert r.verdict is Verdict.NO_ROUTE, r.explain()


# -- the socket plane's errno for a backendless service, per kernel ----------------------------------------------------

GHOST = ("10.96.0.99", 80)  # a service without backends: the program rejects connect() to it


def _ghost_connect(topo: Topology, lb: SocketLB) -> tuple[str, str | None, float]:
    """(verdict, errno, seconds) of `kpr probe connect` to the backendless service from the client namespace, in the cgroup."""
    p = spawn_in(lb, topo.ns("client"), [sys.executable, "-m", "pytest_kpr", "probe", "connect", f"{GHOST[0]}:{GHOST[1]}", "--json",
                                         "--timeout", "2"])
    out, err = p.communicate(timeout=30)
    event = json.loads(out.strip().splitlines()[-1])
    return event["verdict"], event.get("errno_name"), event["elapsed_ms"] / 1000.0


def _load(topo: Topology, tmp_path: Path, set_retval: bool) -> SocketLB:
    need_clang()
    return SocketLB(compile_sock_lb(tmp_path, SERVICE, backend(topo), no_backend=GHOST, set_retval=set_retval))


def _judge_ghost(verdict: str, errno: str | None, seconds: float, kernel: tuple[int, ...] | None) -> list[str]:
    from pytest_kpr.judge.no_backend import NoBackendAttempt, no_backend_problems
    from pytest_kpr.rules.datapath import Plane, no_backend

    a = NoBackendAttempt(f"connect() to {GHOST[0]}:{GHOST[1]}", "connect", verdict, seconds, errno)
    return no_backend_problems(a, no_backend(Plane.SOCKET, "reject", kernel=kernel), "reject")


def test_the_socket_planes_no_backend_errno_is_ehostunreach_from_6_1_and_eperm_below(topo: Topology, tmp_path: Path) -> None:
    """clusters/kernels.yaml says from which kernel a connect4 program may call bpf_set_retval (6.1). This kernel agrees:
    the program that sets EHOSTUNREACH loads exactly when the table says it may, and connect() then fails the way the
    suite's rule for this kernel expects; below 6.1 the program without the helper gives EPERM, as the rule says."""
    from pytest_kpr.core.versions import kernel_tuple
    from pytest_kpr.rules.kernels import KernelTable

    release = os.uname().release
    expected = KernelTable.load(REPO / "clusters" / "kernels.yaml").expects("sock_addr_set_retval", release)
    try:
        lb = _load(topo, tmp_path, set_retval=True)
    except OSError as e:
        assert expected is False, f"kernel {release} refused a connect4 program calling bpf_set_retval ({e}), but kernels.yaml says it has it"
        lb = _load(topo, tmp_path, set_retval=False)
        want = "EPERM"
    else:
        assert expected is True, f"kernel {release} accepted a connect4 program calling bpf_set_retval, but kernels.yaml says it is 6.1+ only"
        want = "EHOSTUNREACH"
    try:
        verdict, errno, seconds = _ghost_connect(topo, lb)
    finally:
        lb.close()
    assert (verdict, errno) == ("unreachable", want), (verdict, errno, seconds)
    assert _judge_ghost(verdict, errno, seconds, kernel_tuple(release)) == [], "the suite's rule for this kernel accepts it"


def test_eperm_is_flagged_as_the_known_regression_from_6_1_and_expected_below(topo: Topology, tmp_path: Path) -> None:
    """The other side, with the project's own program: built without bpf_set_retval (as Cilium 1.19.2-1.19.3 shipped,
    cilium/cilium#45184), connect() fails with EPERM on any kernel. From 6.1 the suite's judgement must flag it, naming
    the issue; below 6.1 EPERM is the right answer and the judgement accepts it."""
    from pytest_kpr.core.versions import kernel_tuple

    kernel = kernel_tuple(os.uname().release)
    lb = _load(topo, tmp_path, set_retval=False)
    try:
        verdict, errno, seconds = _ghost_connect(topo, lb)
    finally:
        lb.close()
    assert (verdict, errno) == ("unreachable", "EPERM")
    problems = _judge_ghost(verdict, errno, seconds, kernel)
    if kernel is not None and kernel < (6, 1):
        assert problems == [], f"below 6.1 EPERM is expected: {problems}"
    else:
        assert len(problems) == 1 and "connect() failed with EPERM, expected EHOSTUNREACH" in problems[0] and "cilium/cilium#45184" in problems[0]
