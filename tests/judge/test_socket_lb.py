"""The socket LB judgement (pytest_kpr.judge.socket_lb), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.socket_lb import SocketLBObservation, backend_peer_problems, conntrack_out_problems, program_problems, socket_lb_problems

from .tables import B1, B2, CLIENT, GOOD, PER_PACKET, PROG, SVC


@pytest.mark.parametrize(
    ("obs", "coverage", "words"),
    [
        (GOOD, "Full", []),
        (GOOD.__class__(SVC, CLIENT, B1, B1, GOOD.backends, 0), "Full",
         ["getpeername() returned 10.244.1.10:8080, not the service address", "getpeername() equals the socket peer"]),
        (PER_PACKET, "Full", ["the socket's peer is the service address", "getpeername() equals the socket peer", "1 service translation entries exist"]),
        (GOOD.__class__(SVC, CLIENT, SVC, "10.244.9.9:8080", GOOD.backends, 0), "Full", ["is none of the backends"]),
        (GOOD.__class__(SVC, CLIENT, SVC, B1, GOOD.backends, 2), "Full", ["2 service translation entries exist for 10.244.1.5:40404"]),
        (PER_PACKET, "Hostns-only", []),
        (GOOD, "Hostns-only", ["yet the pod's socket peer is 10.244.1.10:8080, not the service", "yet no per-packet service translation exists"]),
        (PER_PACKET.__class__(SVC, CLIENT, SVC, SVC, GOOD.backends, 0), "Hostns-only", ["no per-packet service translation exists"]),
    ],
)
def test_socket_lb_judgement(obs: SocketLBObservation, coverage: str, words: list[str]) -> None:
    problems = socket_lb_problems(obs, coverage)
    assert len(problems) == len(words), problems
    for w, p in zip(words, problems, strict=True):
        assert w in p


@pytest.mark.parametrize(
    ("backend", "socket_peer", "coverage", "words"),
    [
        (B1, B1, "Full", []),
        (B2, B1, "Full", ["the conntrack OUT entry goes to 10.244.2.10:8080, the socket to 10.244.1.10:8080"]),
        (B2, SVC, "Hostns-only", []),  # per-packet: the socket points at the service, the OUT entry at a backend
        ("10.244.9.9:8080", SVC, "Hostns-only", ["is not a backend"]),
        ("10.244.9.9:8080", "10.244.9.9:8080", "Full", ["is not a backend"]),
    ],
)
def test_conntrack_out_judgement(backend: str, socket_peer: str, coverage: str, words: list[str]) -> None:
    problems = conntrack_out_problems(backend, socket_peer, frozenset({B1, B2}), coverage)
    assert [w for w in words if not any(w in p for p in problems)] == [] and len(problems) == len(words), problems


@pytest.mark.parametrize(("peers", "ok"), [([CLIENT], True), (["172.18.0.3:61234"], False), ([], False), (["10.244.1.5:40405"], False)])
def test_backend_peer_judgement(peers: list[str], ok: bool) -> None:
    problems = backend_peer_problems(CLIENT, peers, "web-1")
    assert (problems == []) is ok
    if not ok:
        assert "a node IP would mean SNAT" in problems[0] and str(sorted(peers)) in problems[0]


@pytest.mark.parametrize(
    ("change", "mode", "words"),
    [
        ({}, "tcx", []),
        ({"attach": "clsact/ingress", "tc_filter_lines": 2}, "tc", []),
        ({"program": "cil_to_container"}, "tcx", ["runs 'cil_to_container', not cil_from_container"]),
        ({"attach": "clsact/ingress"}, "tcx", ["attach mode tcx expects tcx/ingress"]),
        ({"tc_filter_lines": 1}, "tcx", ["tc shows 1 filter lines with tcx attachment (expected none)"]),
        ({"attach": "clsact/ingress", "tc_filter_lines": 0}, "tc", ["tc shows 0 filter lines with tc attachment (expected at least one)"]),
        ({"policy_map": None}, "tcx", ["no per-endpoint policy map for endpoint 101"]),
        # a netkit device carries cil_from_container as the peer's xmit program (rules.datapath.SRC_NETKIT_ATTACH), tcx or not
        ({"attach": "netkit/peer"}, "tcx/netkit", []),
        ({"attach": "netkit/peer"}, "tc/netkit-l2", []),
        ({"attach": "tcx/ingress"}, "tcx/netkit", ["datapath mode netkit expects netkit/peer on lxc1, found tcx/ingress"]),
        ({"attach": None, "program": None}, "tcx/netkit", ["runs None, not cil_from_container", "expects netkit/peer on lxc1, found None"]),
        ({"attach": "netkit/peer", "tc_filter_lines": 1}, "tcx/netkit", ["tc shows 1 filter lines with netkit attachment (expected none)"]),
        ({"attach": "netkit/peer"}, "tcx", ["attach mode tcx expects tcx/ingress on lxc1, found netkit/peer"]),
    ],
)
def test_program_judgement(change: dict, mode: str, words: list[str]) -> None:
    attach_mode, _, datapath_mode = mode.partition("/")
    problems = program_problems({**PROG, **change}, attach_mode, datapath_mode)
    assert len(problems) == len(words) and all(w in p for w, p in zip(words, problems, strict=True)), problems


@pytest.mark.parametrize(("mode", "kernels", "problems"), [
    ("tcx", {"a": "6.6.0", "b": "6.12.1"}, []),
    ("tcx", {"a": "6.5.13", "b": "6.12.1"}, ["the agent reports tcx, but node a runs kernel 6.5.13, which has no tcx (clusters/kernels.yaml: tcx from 6.6)"]),
    ("tcx", {"b": "6.1.0", "a": "5.15.0"}, ["the agent reports tcx, but node a runs kernel 5.15.0, which has no tcx (clusters/kernels.yaml: tcx from 6.6)",
                                            "the agent reports tcx, but node b runs kernel 6.1.0, which has no tcx (clusters/kernels.yaml: tcx from 6.6)"]),
    ("tc", {"a": "6.1.0"}, []),  # legacy tc is possible everywhere
    ("tc", {"a": "6.12.0"}, []),  # and chosen on a tcx kernel too (bpf.enableTCX=false)
    ("tcx", {"a": "not-a-version"}, []),  # an unreadable kernel is not judged
])
def test_the_attach_mode_against_every_nodes_kernel(mode: str, kernels: dict[str, str], problems: list[str]) -> None:
    from pytest_kpr.judge.socket_lb import attach_mode_kernel_problems

    assert attach_mode_kernel_problems(mode, kernels, "6.6") == problems
