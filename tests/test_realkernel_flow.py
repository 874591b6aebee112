"""Real-kernel tier: the flow meter (`kpr probe flow` / `echo-server`) measures what the kernel really does.

client (10.250.A.1) <-> node (forwarding, the disruptions) <-> server (10.250.B.2: echo servers)

A disruption is one nftables set element with a timeout on the node: the kernel stops matching it after
exactly that long, so the window does not depend on when a second command runs. Every flow runs inside
the client namespace, which has no default route: nothing leaves the machine.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

import pytest
from netns import Topology, can_use_netns, three_namespaces, wait_listening
from realkernel import in_netns

from pytest_kpr.traffic.flow import FlowReport, flow

# timing: the gaps are wall-clock measurements; make test runs this module alone after the parallel run, since a CPU
# starved by other workers shows up as a gap of its own (a run with 4 workers on 2 cores saw a second 100 ms gap)
pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent, pytest.mark.timing]

TCP, UDP, VIP_PORT = 7100, 7101, 7100
#: How late a loaded 2-core runner (scripts/stress_selftests.sh: a CPU burner on each core and another `make test`
#: beside, about 3.5 CPU-bound tasks per CPU) can make one event of a flow: a waking thread waits at most a scheduler
#: slice per task ahead of it (EEVDF base slice 0.75 ms x (1 + log2 of 2 CPUs) = 1.5 ms: about 5 ms), plus the GIL's
#: switch interval (5 ms: the flow's sender and receiver share one interpreter). A gap has two ends: 2 x LATE_MS.
#: The bounds below hold at least that on top of the 10 ms send interval; two stress rounds (4 runs) passed them.
LATE_MS = 10
INTERVAL_MS = 10
#: what the bounds hold on top of what they derive, as before (timer steps, the nft command's own moment)
SPARE_MS = 20


def slack_ms(summary: dict[str, Any], rtt: str = "max") -> float:
    """How far one gap's measured length can stray from the window that caused it, from the flow's own figures. Each
    end of a gap is an answer: the one after the window was sent up to an interval plus the sender's lateness after it
    closed, and comes back a round trip later (the round trip holds the echo server's and the receiving loop's delays);
    the one before it may still cross the node as the window opens. So: INTERVAL_MS, twice the send lateness (the
    larger of LATE_MS and the most this flow measured, ``send_late_ms.max``), the longest round trip and SPARE_MS.
    Derived per flow because a kernel cell under qemu's TCG beside another job is late by more than a loaded host is:
    a 200 ms window measured 255.4 ms there, its flow late by more than LATE_MS. ``rtt``: "median" for a TCP flow
    whose retransmitted segments carry the window in their round trip."""
    late = max(float(LATE_MS), float((summary.get("send_late_ms") or {}).get("max", 0.0)))
    return INTERVAL_MS + 2 * late + float((summary.get("rtt_ms") or {}).get(rtt, 0.0)) + SPARE_MS
#: the node's disruptions: drop / reset while an element is in a set (added with a timeout)
NODE_RULES = """
table inet kprt_flow {
  set drop_udp { type inet_service; flags timeout; }
  set drop_tcp { type inet_service; flags timeout; }
  set reset_tcp { type inet_service; flags timeout; }
  chain forward {
    type filter hook forward priority 0; policy accept;
    ct state invalid drop
    udp dport @drop_udp drop
    tcp dport @drop_tcp drop
    tcp dport @reset_tcp reject with tcp reset
  }
}
table ip kprt_nat {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    ip daddr 10.251.0.10 tcp dport 7100 dnat to SERVER:7100
  }
}
"""
VIP = "10.251.0.10"
T = TypeVar("T")


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path_factory.mktemp("flow"))
    try:
        server = f"{t.subnets['right']}.2"
        t.nft("node", NODE_RULES.replace("SERVER", server))
        # a mid-stream packet without a conntrack entry is INVALID (not picked up loosely): a lost entry shows
        t.exec("node", "sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_loose=0")
        t.exec("client", "ip", "route", "add", f"{VIP}/32", "via", f"{t.subnets['left']}.2")
        for port, udp in ((TCP, False), (UDP, True)):
            t.spawn("server", [sys.executable, "-m", "pytest_kpr.cli", "probe", "echo-server", "--port", str(port), "--bind", server]
                    + (["--udp"] if udp else []))
        # both servers: a UDP flow that started before its echo server was bound lost its first 80 ms of messages (8
        # more than the 300 ms drop's 30: seen in make test with 2 workers, where the UDP drop test ran first)
        wait_listening(t, "server", TCP)
        wait_listening(t, "server", UDP, udp=True)
        yield t
    finally:
        t.close()


def server(t: Topology) -> str:
    return f"{t.subnets['right']}.2"


#: how long a window a flow can judge: one whose slack_ms is at most a third of it (a 300 ms window: send lateness up
#: to about 35 ms); a flow later than that is measured again, ATTEMPTS times at most
FIT = 1 / 3
ATTEMPTS = 3


def fit_flow(measure: Callable[[], T], summary: Callable[[T], dict[str, Any]], window_ms: float, rtt: str = "max") -> tuple[T, float]:
    """A measurement fit to judge a ``window_ms`` disruption, and its slack. A stall of the guest where the window opens
    or closes moves that end by the stall, and the flow cannot tell the window from the stall: the next fresh-clone
    .ci/run of 69cb3a5 had a 6.1 cell stall 176.8 ms while the `nft` adding a 300 ms drop ran (456 ms). Such a flow's
    own figures say so (its slack exceeds FIT of the window); it is measured again, and the last one is judged
    whatever its slack (the assertions print it)."""
    for _ in range(ATTEMPTS):
        got = measure()
        slack = slack_ms(summary(got), rtt)
        if slack <= window_ms * FIT:
            break
    return got, slack


@dataclass(frozen=True)
class Window:
    """When a disruption began, on the wall clock the flow's gaps are stamped with: after ``issued`` (its command was
    about to run) and by ``applied`` (the command had returned)."""

    issued: float
    applied: float


def run_flow(t: Topology, host: str, port: int, disrupt: Any = None, at: float = 0.3, after: float = 1.5, *,
             udp: bool = False, duration_s: float | None = None, **kw: Any) -> FlowReport:
    """A flow in the client namespace (see disrupted_flow)."""
    return disrupted_flow(t, host, port, disrupt, at, after, udp=udp, duration_s=duration_s, **kw)[0]


def disrupted_flow(t: Topology, host: str, port: int, disrupt: Any = None, at: float = 0.3, after: float = 1.5, *,
                   udp: bool = False, duration_s: float | None = None, **kw: Any) -> tuple[FlowReport, Window | None]:
    """A flow in the client namespace, and when its disruption began. With ``disrupt``: ``disrupt(t)`` runs on the node ``at`` seconds after the flow
    has connected, and the flow goes on ``after`` seconds once that command has returned (60 s at most), or runs a
    fixed ``duration_s`` if one is given. Both ends are anchored on events, not on the flow's start: under qemu's TCG
    on a loaded runner, the flow's start-up and one `nft` each took over a second, and a window timed from the flow's
    start fell after a 2 s flow had ended. ``after``: 1.5 s covers the slowest recovery the bounds below allow
    (900 ms) with room for the grace of the answers in flight."""
    if disrupt is None:
        return in_netns(t.ns("client"), flow, host, port, udp=udp, duration_s=duration_s or 10.0, **kw), None
    box: dict[str, Any] = {}

    def disruption() -> None:
        try:
            started(t, "udp" if udp else "tcp", port, host=host)
            time.sleep(at)
            box["issued"] = time.time()
            disrupt(t)
            box["applied"] = time.time()
        except BaseException as e:  # re-raised by the test
            box["error"] = e
        box["done"] = time.monotonic()

    thread = threading.Thread(target=disruption, name="disruption")
    thread.start()
    try:
        if duration_s is None:
            kw["stop"] = lambda: "done" in box and time.monotonic() >= box["done"] + after
        r = in_netns(t.ns("client"), flow, host, port, udp=udp, duration_s=duration_s or 60.0, **kw)
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]
    return r, Window(box["issued"], box["applied"])


def window_gaps(gaps: list[dict[str, Any]], w: Window, window_ms: float, slack: float) -> list[dict[str, Any]]:
    """The gaps a ``window_ms`` disruption begun in ``w`` made: those that overlap it (to its end plus ``slack``) and
    last at least half of it. A gap elsewhere is not the disruption's: under qemu's TCG beside another job, a TCP flow
    showed a second gap of 100 ms or more (the CI run of d9c3342), which a test counting every such gap took for the
    drop's."""
    start, end = w.issued - 0.002, w.applied + (window_ms + slack) / 1000.0  # gap starts are stamped to the millisecond
    return [g for g in gaps if g["ms"] >= window_ms / 2 and g["start"] < end and g["start"] + g["ms"] / 1000.0 > start]


def the_gap(r: FlowReport, w: Window | None, window_ms: float, slack: float) -> dict[str, Any]:
    """The one gap of the disruption (window_gaps), or an assertion naming the window and every gap."""
    assert w is not None
    made = window_gaps(r.gaps, w, window_ms, slack)
    assert len(made) == 1, f"one gap over the {window_ms:.0f} ms window begun at {w.issued:.3f}..{w.applied:.3f}: {made}; {r.to_json()}"
    return made[0]


def blocked(set_name: str, port: int, ms: int) -> Any:
    return lambda t: t.exec("node", "nft", "add", "element", "inet", "kprt_flow", set_name, f"{{ {port} timeout {ms}ms }}")


def big_gaps(r: FlowReport, ms: float = 100) -> list[dict[str, Any]]:
    return [g for g in r.gaps if g["ms"] >= ms]


def test_a_clean_flow_has_no_gap_loss_or_reset(topo: Topology) -> None:
    for port, udp in ((TCP, False), (UDP, True)):
        r = run_flow(topo, server(topo), port, udp=udp, duration_s=1.0)
        # the floor shows the flow ran its second, not its pace (the gap bound below judges that): a loaded 2-core runner
        # falls behind the 10 ms pace (86 of 100 sent, seen in a fresh-clone CI run beside another test run), so half
        # the messages, not 90 %
        assert r.sent >= 50 and r.lost == 0 and r.resets == r.closed == r.stalls == 0, r.to_json()
        # 100 ms (INTERVAL_MS + 2 x LATE_MS, and 70 ms for a longer stall), or more when this flow measured itself later:
        # one interval between answers, each end as late as slack_ms allows
        assert r.max_gap_ms < max(100.0, INTERVAL_MS + slack_ms(r.to_json())), r.to_json()


def test_a_300_ms_udp_drop_is_one_gap_of_300_ms_with_the_lost_messages_counted(topo: Topology) -> None:
    (r, w), slack = fit_flow(lambda: disrupted_flow(topo, server(topo), UDP, blocked("drop_udp", UDP, 300), udp=True),
                             lambda got: got[0].to_json(), 300)  # slack idle: 10 + 2 x 10 + about 1 + 20 = 51 ms
    gap = the_gap(r, w, 300, slack)
    assert 300 - slack <= gap["ms"] <= 300 + slack, (slack, r.to_json())
    # 30 messages of 10 ms fall into 300 ms, and the window's ends move by the same slack: +- 5 when idle
    assert abs(r.lost - 30) <= slack / INTERVAL_MS, f"about 30 messages of 10 ms fall into 300 ms (+- {slack:.0f} ms): {r.to_json()}"
    assert r.resets == r.stalls == 0


def test_a_300_ms_tcp_drop_is_one_gap_until_the_retransmission_that_gets_through(topo: Topology) -> None:
    """One gap, nothing lost, nothing reset. How long: the RTO alone (200 ms minimum, doubling) would retransmit
    at about 200 ms (into the drop) and 600 ms; but this flow keeps sending, so the first segment after the
    window reaches the server, its SACKs trigger a fast retransmission of the dropped ones, and the gap
    measured here is about 310 ms. The bound allows either recovery."""
    (r, w), slack = fit_flow(lambda: disrupted_flow(topo, server(topo), TCP, blocked("drop_tcp", TCP, 300)),
                             lambda got: got[0].to_json(), 300, rtt="median")
    # below 300: the set element expires by jiffies (HZ 250: 4 ms steps), and the last answer before the window can
    # arrive a round trip after it opened (a fresh-clone run measured 299.8 ms); above, the RTO's 600 ms and the slack
    gap = the_gap(r, w, 300, 600 + slack)
    assert 300 - slack <= gap["ms"] <= 900 + slack, (slack, r.to_json())
    assert r.lost == 0 and r.resets == r.closed == r.stalls == r.reconnects == 0, r.to_json()


def test_a_tcp_reset_is_counted_and_so_is_the_reconnect(topo: Topology) -> None:
    r = run_flow(topo, server(topo), TCP, blocked("reset_tcp", TCP, 300))
    assert r.resets == 1 and r.reconnects == 1, r.to_json()
    assert [e["event"] for e in r.events if e["event"] != "connect_failed"] == ["connected", "reset", "reconnected"], r.events
    assert big_gaps(r, 250), ("the flow was down while the resets lasted", r.to_json())


def test_a_conntrack_flush_on_a_nated_path_is_seen(topo: Topology) -> None:
    """The flow goes to a VIP the node DNATs. Flushing the node's conntrack table drops the entry: the next
    segments have none (and are not picked up mid-stream), so they are invalid and dropped. The flow stalls,
    is given up after --stall-ms and reconnects through a fresh entry."""
    flush = lambda t: t.exec("node", "conntrack", "-F")  # noqa: E731
    r = run_flow(topo, VIP, VIP_PORT, flush, stall_ms=400)
    assert r.stalls == 1 and r.reconnects == 1, r.to_json()
    assert r.max_gap_ms >= 400 and r.resets == 0


def started(t: Topology, proto: str, port: int, timeout: float = 30.0, host: str | None = None) -> None:
    """Until the client namespace has a connected socket to ``host`` (the server) and ``port``: the flow's process is
    past its start-up (seconds under qemu's TCG), so a disruption timed from here falls inside the flow."""
    dst = host or server(t)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if t.exec("client", "ss", "-Hn", "-u" if proto == "udp" else "-t", "state", "established", "dst", f"{dst}:{port}").stdout.strip():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {proto} flow to {dst}:{port} started within {timeout:.0f} s")


def cli_flow_with_a_drop(t: Topology, window_ms: int) -> tuple[str, Window]:
    """`kpr probe flow --udp --json` in the client namespace with a ``window_ms`` drop: its output, and when the drop
    began. A 60 s flow ended by SIGTERM 1 s after the drop was added, not a short fixed duration: under qemu's TCG on a
    loaded runner the `nft` that adds the drop took over 1.2 s, and the window fell after a 1.5 s flow had ended."""
    import signal
    import subprocess

    p = subprocess.Popen(["nsenter", f"--net=/run/netns/{t.ns('client')}", sys.executable, "-m", "pytest_kpr.cli", "probe", "flow",
                          f"{server(t)}:{UDP}", "--udp", "--interval-ms", "10", "--duration", "60", "--json"], stdout=subprocess.PIPE, text=True)
    try:
        started(t, "udp", UDP)
        time.sleep(0.3)
        issued = time.time()
        blocked("drop_udp", UDP, window_ms)(t)
        w = Window(issued, time.time())
        time.sleep(1.0)  # the window, and the flow answered again after it
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return out, w


def test_kpr_probe_flow_prints_a_gap_line_and_one_summary(topo: Topology) -> None:
    (out, w), slack = fit_flow(lambda: cli_flow_with_a_drop(topo, 200), lambda got: json.loads(got[0].splitlines()[-1]), 200)
    lines = [json.loads(x) for x in out.splitlines()]
    # a line per gap of 100 ms or more as it ends (the drop's; under qemu's TCG beside another job a stall may add one),
    # then the summary, whose gaps they are
    assert len(lines) >= 2 and {x["kind"] for x in lines[:-1]} == {"gap"} and lines[-1]["kind"] == "flow", out
    *gap_lines, summary = lines
    assert [{k: v for k, v in g.items() if k != "kind"} for g in gap_lines] == [g for g in summary["gaps"] if g["ms"] >= 100], out
    made = window_gaps(gap_lines, w, 200, slack)  # slack: 200 +- 51 ms when idle
    assert len(made) == 1, f"one gap line over the 200 ms window begun at {w.issued:.3f}..{w.applied:.3f}: {out}"
    (gap,) = made
    assert 200 - slack <= gap["ms"] <= 200 + slack and summary["max_gap_ms"] >= gap["ms"] and summary["lost"] > 0, (slack, out)
    assert {"max_gap_ms", "lost", "resets", "gaps", "events", "sent", "reconnects"} <= set(summary)


def flow_ended_by(t: Topology, sig: int, after_s: float) -> tuple[int, dict[str, Any]]:
    """`kpr probe flow` (TCP, 60 s, --json) in the client namespace, sent ``sig`` ``after_s`` seconds after it connected:
    its exit status and its summary line."""
    import subprocess

    p = subprocess.Popen(["nsenter", f"--net=/run/netns/{t.ns('client')}", sys.executable, "-m", "pytest_kpr.cli", "probe", "flow",
                          f"{server(t)}:{TCP}", "--duration", "60", "--json"], stdout=subprocess.PIPE, text=True)
    try:
        started(t, "tcp", TCP)
        time.sleep(after_s)
        p.send_signal(sig)
        out, _ = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, json.loads(out.splitlines()[-1])


def test_sigterm_ends_a_flow_early_with_its_summary(topo: Topology) -> None:
    """How the upgrade run ends its flow pods (`kill -TERM 1`): the flow stops and still prints the summary."""
    import signal

    rc, summary = flow_ended_by(topo, signal.SIGTERM, 0.8)
    # 0.8 s at one message per INTERVAL_MS is 80; each send at most LATE_MS late halves it at worst: >= 40
    assert rc == 0 and summary["kind"] == "flow" and 40 <= summary["sent"] <= 300 and summary["lost"] == 0, summary
    assert summary["duration_s"] == 60 and summary["ended"] - summary["started"] < 10


def test_a_second_echo_server_on_a_taken_port_is_one_line_and_exit_1(topo: Topology) -> None:
    cp = topo.exec("server", sys.executable, "-m", "pytest_kpr.cli", "probe", "echo-server", "--port", str(TCP), "--bind", server(topo),
                   check=False, timeout=20)
    assert cp.returncode == 1 and cp.stdout == "" and len(cp.stderr.strip().splitlines()) == 1
    assert f"cannot listen on {server(topo)}:{TCP}: Address already in use" in cp.stderr


GONE = 7102


def test_a_peer_that_dies_and_stays_gone_is_silent_to_the_end_of_the_flow(topo: Topology) -> None:
    """The echo server is killed and never comes back: the flow reconnects in vain, and its longest gap is the silence
    from the last answer to the end of the flow -- an open gap that ends exactly where the flow ended (both read from
    one monotonic clock, so the check does not depend on how fast the machine is)."""
    srv = topo.spawn("server", [sys.executable, "-m", "pytest_kpr.cli", "probe", "echo-server", "--port", str(GONE), "--bind", server(topo)])
    wait_listening(topo, "server", GONE)
    r = run_flow(topo, server(topo), GONE, lambda t: (srv.kill(), srv.wait()), duration_s=3.0)
    last = r.gaps[-1]
    assert last.get("open") is True and abs(r.max_gap_ms - last["ms"]) < 0.1, r.to_json()
    assert abs(last["start"] + last["ms"] / 1000 - (r.started + r.duration_s)) < 0.01, "the open gap runs to the flow's end"
    assert r.connect_failures > 0 and r.closed + r.resets >= 1, r.to_json()  # the kernel may report the end more than once


def test_a_flow_that_never_connects_says_so_in_its_line(topo: Topology) -> None:
    cp = topo.exec("client", sys.executable, "-m", "pytest_kpr.cli", "probe", "flow", f"{server(topo)}:7199", "--duration", "0.5",
                   timeout=60)
    assert cp.returncode == 0 and "never connected (" in cp.stdout and "attempts failed: ECONNREFUSED)" in cp.stdout, cp.stdout


def test_ctrl_c_ends_a_flow_with_130_and_an_interrupted_summary(topo: Topology) -> None:
    import signal

    rc, summary = flow_ended_by(topo, signal.SIGINT, 0.3)
    assert rc == 130 and summary["interrupted"] is True and summary["stopped_by"] == "SIGINT", summary
