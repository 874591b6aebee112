"""The no-backend judgement (pytest_kpr.judge.no_backend) on hand-made attempts against the rules' answers: no root, no
pytester, no cluster. (The rules themselves, no_backend() and plane_for(), are tabled in tests/rules/test_datapath_rules.py.)"""

from __future__ import annotations

import pytest

from pytest_kpr.judge.no_backend import FAST_S, GhostObservation, NoBackendAttempt, known_regression, no_backend_problems
from pytest_kpr.rules.datapath import Plane, no_backend


SOCKET = no_backend(Plane.SOCKET, "drop")
SOCKET_OLD = no_backend(Plane.SOCKET, "drop", kernel=(5, 15))
ROUTABLE_OFF = no_backend(Plane.PER_PACKET, "reject", routable=False)
REJECT = no_backend(Plane.PER_PACKET, "reject")
DROP = no_backend(Plane.PER_PACKET, "drop")


@pytest.mark.parametrize(
    ("attempt", "rule", "words"),
    [
        (NoBackendAttempt("p", "curl", "7", 0.001), SOCKET, None),
        (NoBackendAttempt("p", "curl", "28", 5.0), SOCKET, "curl exited 28 after 5.00s (it timed out: the traffic was dropped); expected exit 7 at once"),
        (NoBackendAttempt("p", "curl", "7", 1.5), SOCKET, "failed as expected (7) but took 1.50s"),
        (NoBackendAttempt("p", "curl", "28", 5.0), DROP, None),
        (NoBackendAttempt("p", "curl", "7", 0.0), DROP, "expected exit 28 at its limit"),
        (NoBackendAttempt("p", "connect", "unreachable", 0.0, "EHOSTUNREACH"), SOCKET, None),
        (NoBackendAttempt("p", "connect", "unreachable", 0.0, "EPERM"), SOCKET,
         "connect() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression of cilium/cilium#45184 (reported for "
         "Cilium 1.19.2 up to 1.20.0"),
        (NoBackendAttempt("p", "connect", "unreachable", 0.0, "EACCES"), SOCKET, "failed with EACCES, expected EHOSTUNREACH: "),
        (NoBackendAttempt("p", "connect", "unreachable", 0.0, "EPERM"), SOCKET_OLD, None),
        (NoBackendAttempt("p", "connect", "unreachable", 0.0, "EHOSTUNREACH"), SOCKET_OLD, "failed with EHOSTUNREACH, expected EPERM: "),
        (NoBackendAttempt("p", "raw", "reset", 0.001), ROUTABLE_OFF, None),
        (NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, (3, 3)), ROUTABLE_OFF, "a raw SYN got icmp-unreachable ICMP 3/3"),
        (NoBackendAttempt("p", "connect", "refused", 0.001, "ECONNREFUSED"), ROUTABLE_OFF, None),
        (NoBackendAttempt("p", "connect", "timeout", 3.0), SOCKET, "connect() gave timeout after 3.00s; expected unreachable at once"),
        (NoBackendAttempt("p", "connect", "refused", 0.0, "ECONNREFUSED"), REJECT, None),
        (NoBackendAttempt("p", "connect", "unreachable", 0.0, "EHOSTUNREACH"), REJECT, "expected refused at once"),
        (NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, (3, 3)), REJECT, None),
        (NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, (3, 1)), REJECT, "the reject answer is ICMP 3/1, expected ICMP 3/3"),
        (NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, (3, 13)), REJECT, "the reject answer is ICMP 3/13, expected ICMP 3/3"),
        (NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, None), REJECT, "no ICMP type/code"),
        (NoBackendAttempt("p", "raw", "timeout", 3.0), REJECT, "a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 3/3"),
        (NoBackendAttempt("p", "raw", "icmp-unreachable", 2.0, None, (3, 3)), REJECT, "took 2.00s"),
        (NoBackendAttempt("p", "raw", "timeout", 3.0), DROP, None),
        (NoBackendAttempt("p", "raw", "reset", 0.0), DROP, "a raw SYN got reset"),
        (NoBackendAttempt("p", "raw", "timeout", 3.0), SOCKET, "a raw packet cannot reach the socket plane"),
    ],
)
def test_no_backend_judgement(attempt: NoBackendAttempt, rule: object, words: str | None) -> None:
    problems = no_backend_problems(attempt, rule, "reject")  # type: ignore[arg-type]
    if words is None:
        assert problems == []
    else:
        assert len(problems) == 1 and words in problems[0], problems
        assert problems[0].startswith("no backend (p; ")


def test_fast_bound_is_strict() -> None:
    assert no_backend_problems(NoBackendAttempt("p", "curl", "7", FAST_S), SOCKET, "drop")
    assert not no_backend_problems(NoBackendAttempt("p", "curl", "7", FAST_S - 0.01), SOCKET, "drop")


def test_unknown_tool_is_an_error() -> None:
    with pytest.raises(ValueError):
        no_backend_problems(NoBackendAttempt("p", "ping", "ok", 0.0), SOCKET, "drop")


def test_no_backend_messages_in_full() -> None:
    cite = "[cilium/cilium bpf/bpf_sock.c __sock4_xlate_fwd / cil_sock4_connect (1.16+ layout, read via the code index): " \
           "ENABLE_SOCKET_LB_HOST_ONLY && !in_hostns -> -ENXIO (no translation)]"
    assert no_backend_problems(NoBackendAttempt("pod curl to ClusterIP 10.96.0.12:80", "curl", "28", 5.0), SOCKET, "drop") == [
        "no backend (pod curl to ClusterIP 10.96.0.12:80; socket plane, ServiceNoBackendResponse=drop): curl exited 28 after 5.00s "
        "(it timed out: the traffic was dropped); expected exit 7 at once (under 1s): the socket hook fails connect() at once whatever "
        f"ServiceNoBackendResponse says, with EHOSTUNREACH on a kernel that lets it set the errno (6.1+) {cite}"]
    assert no_backend_problems(NoBackendAttempt("p", "curl", "6", 0.1), SOCKET, "drop")[0].startswith(
        "no backend (p; socket plane, ServiceNoBackendResponse=drop): curl exited 6 after 0.10s; expected exit 7")
    assert no_backend_problems(NoBackendAttempt("p", "curl", "7", 0.0), DROP, "drop")[0].startswith(
        "no backend (p; per-packet plane, ServiceNoBackendResponse=drop): curl exited 7 after 0.00s (it could not connect); "
        "expected exit 28 at its limit: the per-packet plane drops the packet; the client waits for its limit [cilium/cilium bpf/bpf_lxc.c")
    assert no_backend_problems(NoBackendAttempt("p", "connect", "timeout", 3.0), SOCKET, "reject")[0].startswith(
        "no backend (p; socket plane, ServiceNoBackendResponse=reject): connect() gave timeout after 3.00s; expected unreachable at once")
    assert no_backend_problems(NoBackendAttempt("p", "connect", "unreachable", 0.0, "EACCES"), SOCKET, "reject") == [
        f"no backend (p; socket plane, ServiceNoBackendResponse=reject): connect() failed with EACCES, expected EHOSTUNREACH: "
        f"{SOCKET.why} {cite}"]
    assert no_backend_problems(NoBackendAttempt("p", "connect", "unreachable", 0.0, "EPERM"), SOCKET, "reject") == [
        f"no backend (p; socket plane, ServiceNoBackendResponse=reject): connect() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ "
        "kernel is the regression of cilium/cilium#45184 (reported for Cilium 1.19.2 up to 1.20.0: bpf_set_retval compiled out; fixed on main "
        "by #45185, no v1.19 backport found)): "
        f"{SOCKET.why} {cite}"]
    assert no_backend_problems(NoBackendAttempt("p", "raw", "timeout", 3.0), REJECT, "reject")[0].startswith(
        "no backend (p; per-packet plane, ServiceNoBackendResponse=reject): a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 3/3: "
        "the per-packet plane answers ICMP port unreachable; the client's TCP stack turns it into ECONNREFUSED [cilium/cilium bpf/lib/lb.h")
    assert no_backend_problems(NoBackendAttempt("p", "raw", "reset", 0.0, None, (3, 3)), DROP, "drop")[0].startswith(
        "no backend (p; per-packet plane, ServiceNoBackendResponse=drop): a raw SYN got reset ICMP 3/3 after 0.00s; expected timeout:")
    assert no_backend_problems(NoBackendAttempt("p", "raw", "timeout", 1.0), SOCKET, "drop") == [
        "no backend (p; socket plane, ServiceNoBackendResponse=drop): a raw packet cannot reach the socket plane; this attempt was misclassified"]
    assert no_backend_problems(NoBackendAttempt("p", "connect", "refused", 1.5, "ECONNREFUSED"), REJECT, "reject") == [
        "no backend (p; per-packet plane, ServiceNoBackendResponse=reject): connect failed as expected (refused) but took 1.50s; "
        "the per-packet plane answers at once (bound 1s)"]
    assert no_backend_problems(NoBackendAttempt("p", "connect", "timeout", 3.0), DROP, "drop") == []


EPERM_PROBLEM = ("no backend (p; socket plane, ServiceNoBackendResponse=reject): connect() failed with EPERM, expected EHOSTUNREACH (EPERM on "
                 "a 6.1+ kernel is the regression of cilium/cilium#45184 (...)): ...")


@pytest.mark.parametrize(("problems", "version", "known"), [
    ([EPERM_PROBLEM], "1.19.8", True),
    ([EPERM_PROBLEM], "1.19.2", True),
    ([EPERM_PROBLEM], "1.19.1", False),  # before the window #45184 reports
    ([EPERM_PROBLEM], "1.20.0", False),
    ([EPERM_PROBLEM], "", False),
    ([EPERM_PROBLEM, "no backend (p): connect() gave timeout after 3.00s; expected unreachable at once"], "1.19.8", False),  # more than EPERM
    (["... connect() failed with EACCES, expected EHOSTUNREACH: ..."], "1.19.8", False),
    ([], "1.19.8", False),
])
def test_eperm_in_the_reported_window_is_a_known_regression(problems: list[str], version: str, known: bool) -> None:
    why = known_regression(problems, version)
    assert (why is not None) is known
    assert why is None or why.startswith(f"known Cilium regression cilium/cilium#45184 in {version} (>=1.19.2, <1.20.0)")


def test_the_judgements_defaults_in_full() -> None:
    with pytest.raises(ValueError) as v:
        no_backend_problems(NoBackendAttempt("p", "ping", "ok", 0.0), SOCKET, "drop")
    assert str(v.value) == "unknown tool 'ping'"
    assert no_backend_problems(NoBackendAttempt("p", "connect", "refused", 0.1, "ECONNREFUSED"), SOCKET, "drop")[0].startswith(
        "no backend (p; socket plane, ServiceNoBackendResponse=drop): connect() gave refused (ECONNREFUSED) after 0.10s; expected unreachable at once")
    assert no_backend_problems(NoBackendAttempt("p", "raw", "icmp-unreachable", 0.0, None, None), REJECT, "reject")[0].startswith(
        "no backend (p; per-packet plane, ServiceNoBackendResponse=reject): the reject answer is no ICMP type/code, expected ICMP 3/3 (destination")


def _ghost(listed: int | None = 0, runner: NoBackendAttempt | None = None, **kw: object) -> GhostObservation:


    a = NoBackendAttempt("p", "connect", "unreachable", 0.001, "EHOSTUNREACH")
    args: dict = dict(family="IPv4", cluster_ip="10.96.0.12", node_port=30999, listed_backends=listed, response="reject",
                      response_source="config", routable=True, kernel=(6, 8), coverage="Full", cilium_version="1.20.2",
                      curl=NoBackendAttempt("c", "curl", "7", 0.001), curl_exit=7, connect=a, pod_raw=a, nodeport_raw=a,
                      runner_raw=runner, runner_skip=None if runner else "the runner lacks CAP_NET_RAW",
                      planes=(("pod_curl", "socket", "SRC_X"), ("pod_connect", "socket", "SRC_X")))
    args.update(kw)
    return GhostObservation(**args)


@pytest.mark.parametrize(("listed", "want"), [(0, []), (None, ["the agent lists None backends for ghost 10.96.0.12:80"]),
                                              (2, ["the agent lists 2 backends for ghost 10.96.0.12:80"])])
def test_ghost_is_listed_without_backends(listed: int | None, want: list[str]) -> None:
    from pytest_kpr.judge.no_backend import listed_backends_problems

    assert listed_backends_problems(_ghost(listed)) == want


def test_an_attempt_is_judged_by_the_rule_of_the_plane_that_answers_it() -> None:
    from pytest_kpr.judge.no_backend import attempt_problems

    g = _ghost()
    assert attempt_problems(g, g.connect, "pod", "connect", "ClusterIP") == []  # the socket plane: EHOSTUNREACH at once
    (p,) = attempt_problems(g, NoBackendAttempt("p", "connect", "refused", 0.001, "ECONNREFUSED"), "pod", "connect", "ClusterIP")
    assert p.startswith("no backend (p; socket plane, ServiceNoBackendResponse=reject): connect() gave refused (ECONNREFUSED)")
    (q,) = attempt_problems(_ghost(routable=False), NoBackendAttempt("p", "raw", "timeout", 3.0), "outside", "raw", "NodePort")
    assert "ServiceNoBackendResponse=reject, enable-no-service-endpoints-routable=false" in q


def test_the_observation_is_ghost_json() -> None:
    data = _ghost().to_json()
    assert data["attempts"]["runner_raw_syn"] == {"skipped": "the runner lacks CAP_NET_RAW"}
    assert data["attempts"]["pod_connect"] == {"path": "p", "tool": "connect", "plane": "socket", "verdict": "unreachable", "seconds": 0.001,
                                               "errno": "EHOSTUNREACH", "icmp": None, "rule": "SRC_X"}
    assert (data["client_kernel"], data["backends"], data["curl_exit"], data["seconds"]) == ("6.8", 0, 7, 0.001)
    assert list(data) == ["family", "cluster_ip", "node_port", "backends", "no_backend_response", "no_backend_response_source",
                          "no_service_endpoints_routable", "client_kernel", "socket_lb_coverage", "curl_exit", "seconds", "attempts"]


@pytest.mark.parametrize(("verdict", "ms", "errno", "response", "kernel", "want"), [
    ("unreachable", 0.2, "EHOSTUNREACH", "reject", "6.8.0-49-generic", None),
    ("unreachable", 0.2, "EHOSTUNREACH", "drop", "6.8.0", None),  # the socket plane fails at once whatever the response
    ("unreachable", 0.2, "EPERM", "reject", "5.15.0", None),  # below 6.1 the hook cannot set the errno: EPERM
    ("unreachable", 0.2, "EHOSTUNREACH", "reject", "5.15.0", "p: connect() failed with EHOSTUNREACH, expected EPERM: "),
    ("unreachable", 0.2, "EPERM", "reject", "6.1.0", "p: connect() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel"),
    ("timeout", 2000.0, None, "reject", "6.8.0", "p: connect() gave timeout after 2.00s; expected unreachable at once"),
    ("unreachable", 1500.0, "EHOSTUNREACH", "reject", "6.8.0", "p: connect failed as expected (unreachable) but took 1.50s"),
    ("unreachable", 0.2, "EHOSTUNREACH", "reject", None, None),  # an unknown kernel: the newer rule
])
def test_the_socket_planes_no_backend_judgement(verdict: str, ms: float, errno: str | None, response: str, kernel: str | None,
                                                want: str | None) -> None:
    from pytest_kpr.judge.no_backend import socket_no_backend_problems

    problems = socket_no_backend_problems("p", "connect", verdict, ms, errno, response, kernel)
    if want is None:
        assert problems == []
    else:
        (p,) = problems
        assert p.startswith(f"no backend (p; socket plane, ServiceNoBackendResponse={response}): ") and want.split(": ", 1)[1] in p, p


def test_the_ghost_observation_is_ghost_json_in_full() -> None:
    runner = NoBackendAttempt("r", "raw", "icmp-unreachable", 0.00123456, None, (3, 3))
    data = _ghost(runner=runner, planes=(("pod_curl", "socket", "S1"), ("pod_connect", "socket", "S1"), ("pod_raw_syn", "none", "S2"),
                                         ("nodeport_raw_syn", "per-packet", "S3"), ("runner_raw_syn", "per-packet", "S3"))).to_json()
    a = {"path": "p", "tool": "connect", "verdict": "unreachable", "seconds": 0.001, "errno": "EHOSTUNREACH", "icmp": None}
    assert data == {
        "family": "IPv4", "cluster_ip": "10.96.0.12", "node_port": 30999, "backends": 0, "no_backend_response": "reject",
        "no_backend_response_source": "config", "no_service_endpoints_routable": True, "client_kernel": "6.8", "socket_lb_coverage": "Full",
        "curl_exit": 7, "seconds": 0.001,
        "attempts": {"pod_curl": {"path": "c", "tool": "curl", "plane": "socket", "verdict": "7", "seconds": 0.001, "errno": None, "icmp": None,
                                  "rule": "S1"},
                     "pod_connect": {**a, "plane": "socket", "rule": "S1"}, "pod_raw_syn": {**a, "plane": "none", "rule": "S2"},
                     "nodeport_raw_syn": {**a, "plane": "per-packet", "rule": "S3"},
                     "runner_raw_syn": {"path": "r", "tool": "raw", "plane": "per-packet", "verdict": "icmp-unreachable", "seconds": 0.0012,
                                        "errno": None, "icmp": [3, 3], "rule": "S3"}}}
    assert _ghost(kernel=None, family="IPv6").to_json()["client_kernel"] is None and _ghost(family="IPv6").ip_family == 6


@pytest.mark.parametrize(("client", "access", "frontend", "attempt", "kw", "want"), [
    # per packet, reject: a raw SYN to a NodePort gets ICMP 3/3 from the node that owns the address
    ("outside", "raw", "NodePort", NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, (3, 3)), {}, None),
    ("outside", "raw", "NodePort", NoBackendAttempt("p", "raw", "timeout", 3.0), {}, "a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 3/3"),
    # drop: the same SYN times out
    ("outside", "raw", "NodePort", NoBackendAttempt("p", "raw", "timeout", 3.0), {"response": "drop"}, None),
    # IPv6: ICMPv6 1/4
    ("outside", "raw", "NodePort", NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, (1, 4)), {"family": "IPv6"}, None),
    ("outside", "raw", "NodePort", NoBackendAttempt("p", "raw", "icmp-unreachable", 0.001, None, (3, 3)), {"family": "IPv6"},
     "the reject answer is ICMP 3/3, expected ICMP 1/4"),
    # not routable: the owning node's stack resets a NodePort's SYN
    ("outside", "raw", "NodePort", NoBackendAttempt("p", "raw", "reset", 0.001), {"routable": False}, None),
    # hostns-only: a pod's connect() is per packet (reject: refused)
    ("pod", "connect", "ClusterIP", NoBackendAttempt("p", "connect", "refused", 0.001, "ECONNREFUSED"), {"coverage": "Hostns-only"}, None),
    ("pod", "connect", "ClusterIP", NoBackendAttempt("p", "connect", "refused", 0.001, "ECONNREFUSED"), {},
     "connect() gave refused (ECONNREFUSED) after 0.00s; expected unreachable at once"),
])
def test_each_attempt_meets_the_rule_of_its_plane(client: str, access: str, frontend: str, attempt: NoBackendAttempt, kw: dict,
                                                  want: str | None) -> None:
    from pytest_kpr.judge.no_backend import attempt_problems

    problems = attempt_problems(_ghost(**kw), attempt, client, access, frontend)
    if want is None:
        assert problems == []
    else:
        (p,) = problems
        assert want in p, p
