"""Every judgement in pytest_kpr.checks, branch by branch, on hand-made observations: no root, no pytester,
no cluster. (The no-backend judgement's table is in test_datapath_rules.py, next to its rules.)"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.backend_slots import Convergence, SlotView, active_slots, convergence_problems
from pytest_kpr.judge.iptables import kube_proxy_rule_problems, rule_line_problems, rule_view_problems
from pytest_kpr.judge.nodeport import nodeport_frontend_problems, nodeport_listener_problems
from pytest_kpr.judge.socket_lb import (
    SocketLBObservation,
    backend_peer_problems,
    conntrack_out_problems,
    program_problems,
    socket_lb_problems,
)
from pytest_kpr.parse import L3n4, parse_iptables_save, parse_lb_maps_dump, parse_nft_ruleset, parse_service_list_json, parse_ss
from pytest_kpr.testing import render

# -- socket LB ---------------------------------------------------------------------------------------

SVC, B1, B2, CLIENT = "10.96.0.11:80", "10.244.1.10:8080", "10.244.2.10:8080", "10.244.1.5:40404"
GOOD = SocketLBObservation(SVC, CLIENT, app_peer=SVC, socket_peer=B1, backends=frozenset({B1, B2}), service_translations=0)
PER_PACKET = SocketLBObservation(SVC, CLIENT, app_peer=SVC, socket_peer=SVC, backends=frozenset({B1, B2}), service_translations=1)


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


PROG = {"program": "cil_from_container", "attach": "tcx/ingress", "tc_filter_lines": 0, "policy_map": "cilium_policy_v2_00101",
        "interface": "lxc1", "endpoint_id": 101}


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
    ],
)
def test_program_judgement(change: dict, mode: str, words: list[str]) -> None:
    problems = program_problems({**PROG, **change}, mode)
    assert len(problems) == len(words) and all(w in p for w, p in zip(words, problems, strict=True)), problems


# -- backend slots -----------------------------------------------------------------------------------

ES = frozenset({B1, B2})


@pytest.mark.parametrize(
    ("conv", "words"),
    [
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2)), SlotView("n2", 7, (B2, B1)))), []),
        (Convergence(2, 1, ES, (SlotView("n1", 7, (B1, B2)),)), ["1/2 pods Ready"]),
        (Convergence(2, 2, frozenset({B1}), (SlotView("n1", 7, (B1,)),)), ["the EndpointSlice has 1 ready addresses, not 2"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1,)),)), ["n1: slots lack ['10.244.2.10:8080']"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2, "10.244.3.3:8080")),)), ["n1: slots still hold ['10.244.3.3:8080']"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2, B2)),)), ["n1: ['10.244.2.10:8080'] fill more than one slot"]),
        (Convergence(2, 2, ES, (SlotView("n1", None, (B1, B2)),)), ["n1: no slot-0 entry"]),
        (Convergence(2, 2, ES, ()), ["no agent's slots were read"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2)), SlotView("n2", 7, (B1,)))), ["n2: slots lack"]),
    ],
)
def test_convergence_judgement(conv: Convergence, words: list[str]) -> None:
    problems = convergence_problems(conv)
    assert len(problems) == len(words) and all(w in p for w, p in zip(words, problems, strict=True)), problems
    assert conv.converged is (not words)



def _dump(count: int, qcount: int, slots: list[str], fe: str = "10.96.0.20:80/TCP") -> str:
    """A ``lb/maps-dump`` of one frontend (format: tests/data/cilium/statedb-lb/v1.18-lb-maps-dump-from-clusterip-txtar.txt)."""
    lines = [f"BE: ID={i} ADDR={b}/TCP STATE=active" for i, b in enumerate(slots, 1)]
    lines.append(f"SVC: ID=7 ADDR={fe} SLOT=0 LBALG=undef AFFTimeout=0 COUNT={count} QCOUNT={qcount} FLAGS=ClusterIP+non-routable")
    lines += [f"SVC: ID=7 ADDR={fe} SLOT={i} BEID={i} COUNT=0 QCOUNT=0 FLAGS=ClusterIP+non-routable" for i in range(1, len(slots) + 1)]
    lines.append("SVC: ID=9 ADDR=10.96.0.99:80/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=0 QCOUNT=0 FLAGS=ClusterIP+non-routable")
    return "\n".join(lines) + "\n"


T3 = "10.244.3.3:8080"


@pytest.mark.parametrize(
    ("dump", "selectable", "kept", "words"),
    [
        # a scale-down while the removed pod still terminates: its slot stays after the count (SRC_TERMINATING_SLOTS)
        (_dump(2, 1, [B1, B2, T3]), (B1, B2), (T3,), []),
        # the same slots with the terminating backend counted in: new connections could pick it
        (_dump(3, 0, [B1, B2, T3]), (B1, B2, T3), (), ["n1: slots still hold ['10.244.3.3:8080']"]),
        # only terminating backends left: they are the count (KEP-1669)
        (_dump(2, 0, [B1, B2]), (B1, B2), (), []),
        (_dump(1, 0, [B1]), (B1,), (), ["n1: slots lack ['10.244.2.10:8080']"]),
    ],
)
def test_slots_are_the_masters_count_not_every_slot(dump: str, selectable: tuple[str, ...], kept: tuple[str, ...], words: list[str]) -> None:
    """``bpf lb list`` prints every slot; the slots a new connection picks are the master entry's COUNT (lb/maps-dump),
    so a terminating backend kept for its connections is neither an extra backend nor a missing one."""
    view = active_slots("n1", parse_lb_maps_dump(dump), L3n4("10.96.0.20", 80, "TCP"))
    assert (view.service_id, view.backends, view.kept) == (7, selectable, kept)
    problems = convergence_problems(Convergence(2, 2, ES, (view,)))
    assert len(problems) == len(words) and all(w in p for w, p in zip(words, problems, strict=True)), problems


def test_a_frontend_absent_from_the_dump_has_no_master() -> None:
    view = active_slots("n1", parse_lb_maps_dump(_dump(2, 0, [B1, B2])), L3n4("10.96.0.21", 80, "TCP"))
    assert view.service_id is None and view.backends == ()
    assert active_slots("n1", parse_lb_maps_dump(_dump(1, 0, [B1])), L3n4("10.96.0.20", 80, "UDP")).service_id is None

# -- iptables ----------------------------------------------------------------------------------------

KIND_NAT = """*nat
:PREROUTING ACCEPT [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:CILIUM_PRE_nat - [0:0]
-A PREROUTING -m comment --comment "cilium-feeder: CILIUM_PRE_nat" -j CILIUM_PRE_nat
COMMIT
*filter
:INPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
COMMIT
"""
KUBE_PROXY = KIND_NAT.replace(":CILIUM_PRE_nat - [0:0]\n", ":CILIUM_PRE_nat - [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-ABC - [0:0]\n:KUBE-SEP-XYZ - [0:0]\n"
                              "-A KUBE-SERVICES -d 10.96.0.11/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-ABC\n"
                              "-A KUBE-SEP-XYZ -p tcp -m tcp -j DNAT --to-destination 10.244.1.10:8080\n")
SEP_ONLY = KIND_NAT.replace(":CILIUM_PRE_nat - [0:0]\n", ":CILIUM_PRE_nat - [0:0]\n:KUBE-SEP-XYZ - [0:0]\n")
NODEPORTS = KIND_NAT.replace(":CILIUM_PRE_nat - [0:0]\n", ":CILIUM_PRE_nat - [0:0]\n:KUBE-NODEPORTS - [0:0]\n"
                             "-A KUBE-NODEPORTS -p tcp -m tcp --dport 30780 -j KUBE-EXT-ABC\n")
EMPTY_NFT = "table ip filter {\n\tchain INPUT {\n\t\ttype filter hook input priority filter; policy accept;\n\t}\n}\n"


def views(nat: str = KIND_NAT, legacy: str | None = "", nft: str | None = EMPTY_NFT, v6: str | None = "") -> dict:
    """One node's rule views; ``v6``: both ip6tables views' dump (None: not read)."""
    six = parse_iptables_save(v6) if v6 is not None else None
    return {"n1": {"iptables-nft": parse_iptables_save(nat), "iptables-legacy": parse_iptables_save(legacy) if legacy is not None else None,
                   "ip6tables-nft": six, "ip6tables-legacy": six, "nft": parse_nft_ruleset(nft) if nft is not None else None}}


def test_kubelet_chains_are_not_kube_proxy_rules() -> None:
    assert kube_proxy_rule_problems(views()) == []


@pytest.mark.parametrize(("dump", "marks"), [(KUBE_PROXY, ["'KUBE-SERVICES': 2", "'KUBE-SVC': 2", "'KUBE-SEP': 2"]), (SEP_ONLY, ["{'KUBE-SEP': 1}"]),
                                             (NODEPORTS, ["'KUBE-NODEPORTS': 2", "'KUBE-EXT': 1"])])
def test_kube_proxy_chains_are_found(dump: str, marks: list[str]) -> None:
    (p,) = kube_proxy_rule_problems(views(dump))
    assert p.startswith("n1 (iptables-nft): kube-proxy chains {") and all(m in p for m in marks), p


def test_kube_proxy_in_legacy_and_in_nftables_mode_is_found(tmp_path: object) -> None:
    from pathlib import Path

    nft = (Path(__file__).parent / "data" / "local" / "nft-kube-proxy-nftables-mode.txt").read_text()
    problems = kube_proxy_rule_problems(views(legacy=KUBE_PROXY, nft=nft))
    assert len(problems) == 2 and problems[0].startswith("n1 (iptables-legacy)")
    assert problems[1] == "n1 (nft): kube-proxy's nftables table ['ip kube-proxy'] with 7 chains"


def test_rule_views_must_all_be_read_and_show_something() -> None:
    assert rule_view_problems(views()) == []
    assert rule_view_problems(views(legacy=None)) == ["n1: the iptables-legacy view could not be read (tool missing or failed); its rules were not checked"]
    assert rule_view_problems(views(nat="", legacy="", nft="")) == ["n1: no view shows any table: the emptiness checks would be blind"]
    assert len(rule_view_problems(views(legacy=None, nft=None))) == 1


@pytest.mark.parametrize(("token", "n"), [("10.96.0.11", 1), ("10.96.0.1", 0), ("30780", 0), ("8080", 1)])
def test_rule_lines_match_whole_tokens(token: str, n: int) -> None:
    problems = rule_line_problems(views(KUBE_PROXY), token, "x")
    assert len(problems) == (1 if n else 0)
    if n:
        assert problems[0].startswith(f"n1 (iptables-nft): {n} lines name x {token}")


def test_rule_lines_are_read_in_every_view_including_nft() -> None:
    nft = EMPTY_NFT.replace("policy accept;\n", "policy accept;\n\t\tip daddr 10.96.0.11 tcp dport 80 counter packets 0 bytes 0 accept\n")
    assert [p.split(":")[0] for p in rule_line_problems(views(nft=nft), "10.96.0.11", "x")] == ["n1 (nft)"]


# -- NodePort ------------------------------------------------------------------------------------------

def test_nodeport_listener_judgement() -> None:
    socks = parse_ss("LISTEN 0      4096   0.0.0.0:10250 0.0.0.0:*\nLISTEN 0      4096   0.0.0.0:30780 0.0.0.0:*\n")
    assert nodeport_listener_problems(socks[:1], 30780) == []
    (p,) = nodeport_listener_problems(socks, 30780)
    assert p.startswith("1 sockets listen on :30780 on the node (['0.0.0.0:30780'])")


def _services(*entries: tuple[str, int, str]) -> list:
    return parse_service_list_json(render.service_list_json([
        {"id": i, "ip": ip, "port": port, "protocol": "TCP", "type": typ, "name": "web-np", "namespace": "d", "backends": []}
        for i, (ip, port, typ) in enumerate(entries, 1)]))


@pytest.mark.parametrize(
    ("entries", "family", "ok"),
    [
        ((("0.0.0.0", 30780, "NodePort"),), "IPv4", True),
        ((("0.0.0.0", 30781, "NodePort"),), "IPv4", False),  # another port
        ((("172.18.0.3", 30780, "NodePort"),), "IPv4", False),  # not the wildcard
        ((("0.0.0.0", 30780, "HostPort"),), "IPv4", False),  # not a NodePort
        ((), "IPv4", False),
        # IPv6: the Service's IPv6 family gets its own wildcard frontend, [::]:<port> (SRC_NODEPORT_WILDCARD)
        ((("0.0.0.0", 30780, "NodePort"), ("::", 30780, "NodePort")), "IPv6", True),
        ((("0.0.0.0", 30780, "NodePort"),), "IPv6", False),  # the IPv4 wildcard only: IPv6 is not served
        ((("::", 30780, "NodePort"),), "IPv4", False),  # and the other way round
        ((("fc00:f853:ccd:e793::3", 30780, "NodePort"),), "IPv6", False),  # a node address, not the wildcard
        ((("::", 30781, "NodePort"),), "IPv6", False),  # another port
    ],
)
def test_nodeport_frontend_judgement(entries: tuple, family: str, ok: bool) -> None:
    problems = nodeport_frontend_problems(_services(*entries), 30780, family)
    assert (problems == []) is ok
    if not ok:
        assert problems[0].startswith(f"the agent lists no {'[::]' if family == 'IPv6' else '0.0.0.0'}:30780 NodePort frontend")


# -- whole messages: what a user reads -----------------------------------------------------------------

def test_judgement_messages_in_full() -> None:
    assert program_problems({**PROG, "program": "x", "attach": "clsact/ingress", "tc_filter_lines": 3, "policy_map": ""}, "tcx") == [
        "lxc1 runs 'x', not cil_from_container",
        "attach mode tcx expects tcx/ingress on lxc1, found clsact/ingress",
        "tc shows 3 filter lines with tcx attachment (expected none)",
        "no per-endpoint policy map for endpoint 101 in the agent's map list",
    ]
    assert program_problems({**PROG, "attach": "tcx/ingress", "tc_filter_lines": None}, "unknown-mode") == [
        "attach mode unknown-mode expects clsact/ingress on lxc1, found tcx/ingress",
        "tc shows None filter lines with unknown-mode attachment (expected at least one)",
    ]
    assert nodeport_frontend_problems(_services(("0.0.0.0", 30781, "NodePort"), ("172.18.0.3", 30781, "NodePort"), ("10.96.0.9", 80, "ClusterIP")), 30780) == [
        "the agent lists no 0.0.0.0:30780 NodePort frontend (NodePort frontends: ['0.0.0.0:30781/TCP', '172.18.0.3:30781/TCP'])"]
    assert rule_line_problems(views(KUBE_PROXY), "10.96.0.11", "web's ClusterIP") == [
        "n1 (iptables-nft): 1 lines name web's ClusterIP 10.96.0.11, e.g. ['-A KUBE-SERVICES -d 10.96.0.11/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-ABC']"]
    assert kube_proxy_rule_problems(views(SEP_ONLY)) == ["n1 (iptables-nft): kube-proxy chains {'KUBE-SEP': 1}"]
    assert conntrack_out_problems(B2, B1, frozenset({B1}), "Full") == [
        "the conntrack OUT entry goes to 10.244.2.10:8080, the socket to 10.244.1.10:8080",
        "the conntrack OUT entry 10.244.2.10:8080 is not a backend ['10.244.1.10:8080']"]
    assert socket_lb_problems(GOOD.__class__(SVC, CLIENT, SVC, "10.244.9.9:8080", GOOD.backends, 0)) == [
        "the socket's peer 10.244.9.9:8080 is none of the backends ['10.244.1.10:8080', '10.244.2.10:8080']"]
    assert socket_lb_problems(PER_PACKET.__class__(SVC, CLIENT, SVC, B1, GOOD.backends, 0), "Hostns-only") == [
        "socket LB is hostns-only, yet the pod's socket peer is 10.244.1.10:8080, not the service 10.96.0.11:80",
        "socket LB is hostns-only, yet no per-packet service translation exists for 10.244.1.5:40404"]
    assert convergence_problems(Convergence(3, 3, frozenset({B1, B2}), (SlotView("n1", None, (B1, B1)),))) == [
        "the EndpointSlice has 2 ready addresses, not 3", "n1: no slot-0 entry for the service",
        "n1: slots lack ['10.244.2.10:8080']", "n1: ['10.244.1.10:8080'] fill more than one slot"]


def test_more_whole_messages_and_defaults() -> None:
    assert socket_lb_problems(PER_PACKET), "the default coverage is Full"
    assert program_problems({**PROG, "attach": "clsact/ingress", "tc_filter_lines": 1}, "tc") == [], "one legacy tc filter line is enough"
    assert rule_view_problems(views(legacy=None, nft=None)) == [
        "n1: the iptables-legacy, nft view could not be read (tool missing or failed); its rules were not checked"]
    three = KUBE_PROXY.replace("-A KUBE-SEP-XYZ", "-A KUBE-SVC-ABC -d 10.96.0.11/32 -j KUBE-SEP-XYZ\n-A KUBE-SVC-ABC -d 10.96.0.11/32 -j KUBE-SEP-XYZ\n-A KUBE-SEP-XYZ")
    (p,) = rule_line_problems(views(three), "10.96.0.11", "x")
    assert p.startswith("n1 (iptables-nft): 3 lines name x 10.96.0.11, e.g. ['-A KUBE-SERVICES") and p.count("-A KUBE-") == 2, "two samples"
    both = {"n1": {"iptables-legacy": None, "iptables-nft": parse_iptables_save(SEP_ONLY), "nft": parse_nft_ruleset(EMPTY_NFT)}}
    assert kube_proxy_rule_problems(both) == ["n1 (iptables-nft): kube-proxy chains {'KUBE-SEP': 1}"], "an unread view does not stop the others"
    conv = Convergence(2, 1, frozenset({B1}), (SlotView("n1", 7, (B1, B2)), SlotView("n2", None, ())))
    assert conv.describe() == ("1/2 pods Ready, EndpointSlice ready ['10.244.1.10:8080']; n1: 2 slots ['10.244.1.10:8080', '10.244.2.10:8080']; "
                               "n2: 0 slots []")
    assert convergence_problems(Convergence(0, 0, frozenset(), ())) == ["no agent's slots were read"]


def test_a_view_that_was_never_read_counts_as_unreadable() -> None:
    """A view missing from the dumps altogether (not just None) is as blind as one whose tool failed."""
    dropped = {"n1": {"iptables-nft": views()["n1"]["iptables-nft"], "nft": views()["n1"]["nft"]}}
    assert rule_view_problems(dropped) == [
        "n1: the iptables-legacy, ip6tables-nft, ip6tables-legacy view could not be read (tool missing or failed); its rules were not checked"]


def test_kube_proxy_chains_in_ip6tables_alone_are_found() -> None:
    """An IPv6 Service's kube-proxy rules live in ip6tables: an IPv4-only reading would miss them."""
    problems = kube_proxy_rule_problems(views(v6=KUBE_PROXY))
    assert [p.split(":")[0] for p in problems] == ["n1 (ip6tables-legacy)", "n1 (ip6tables-nft)"], problems
    assert rule_view_problems(views(v6=None)) == [
        "n1: the ip6tables-nft, ip6tables-legacy view could not be read (tool missing or failed); its rules were not checked"]


@pytest.mark.parametrize(("es", "agents", "lag", "slowest"), [
    ({"a": 0.5, "b": 0.75}, {"n1": {"a": 0.5, "b": 0.75}, "n2": {"a": 1.0, "b": 1.25}}, {"n1": 0.0, "n2": 0.5}, ("n2", 0.5)),
    ({"a": 0.5}, {"n1": {"a": 0.5}, "n2": {}}, {"n1": 0.0, "n2": None}, ("n2", None)),  # never caught up: slowest
    ({"a": 1.0}, {"n1": {"a": 0.75}}, {"n1": -0.25}, ("n1", -0.25)),  # an agent can be ahead of the API's view
    ({}, {"n1": {}}, {"n1": None}, ("n1", None)),
    ({"a": 0.5}, {}, {}, None),
])
def test_convergence_timing(es: dict[str, float], agents: dict[str, dict[str, float]], lag: dict[str, float | None], slowest: Any) -> None:
    from pytest_kpr.judge.backend_slots import ConvergenceTiming

    t = ConvergenceTiming(es, agents, 0.25)
    assert t.lag() == lag
    assert t.slowest() == slowest
    assert t.to_json()["slowest"] == (None if slowest is None else {"node": slowest[0], "lag_seconds": slowest[1]})


IP_VS = """IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port Forward Weight ActiveConn InActConn
TCP  0A600001:01BB rr
  -> AC120002:192B      Masq    1      0          0
UDP  0A60000A:0035 rr
FWM  00000102 rr
"""


def test_ip_vs_lists_each_virtual_service_and_refuses_unknown_lines() -> None:
    from pytest_kpr.parse import ParseError
    from pytest_kpr.parse.node import parse_ip_vs

    assert parse_ip_vs(IP_VS) == ["TCP 0A600001:01BB", "UDP 0A60000A:0035", "FWM 00000102"]
    assert parse_ip_vs(IP_VS.split("TCP")[0]) == [], "the header alone: IPVS loaded, no service"
    with pytest.raises(ParseError):
        parse_ip_vs(IP_VS + "something else\n")


@pytest.mark.parametrize(("daemonsets", "ipvs", "problems"), [
    ([], {"a": [], "b": []}, []),
    ([{"namespace": "kube-system", "name": "kube-proxy", "desired": 3, "ready": 3}], {"a": []},
     ["DaemonSet kube-system/kube-proxy runs kube-proxy (3/3 pods ready) while KubeProxyReplacement is on: remove it the way Cilium documents"]),
    ([], {"a": ["TCP 0A600001:01BB"], "b": []}, ["a: 1 IPVS virtual services (TCP 0A600001:01BB)"]),
    ([], {"a": None}, ["a: /proc/net/ip_vs could not be read, so IPVS is not checked there"]),
    ([], {"a": [f"TCP {i}" for i in range(5)]}, ["a: 5 IPVS virtual services (TCP 0, TCP 1, TCP 2, ...)"]),
])
def test_a_second_authority_for_services_is_named(daemonsets: list[dict[str, Any]], ipvs: dict[str, list[str] | None], problems: list[str]) -> None:
    from pytest_kpr.judge.kube_proxy import ipvs_problems, kube_proxy_daemonset_problems

    got = kube_proxy_daemonset_problems(daemonsets) + ipvs_problems(ipvs)
    assert [g.split(" (kubectl")[0] for g in got] == problems


B4 = ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080", "10.0.0.4:8080"]


@pytest.mark.parametrize(("sticky", "plain", "problems"), [
    ([B4[0]] * 20, B4 * 5, {"sticky": [], "spread": []}),
    ([B4[0]] * 19 + [B4[1]], B4 * 5, {"sticky": ["20 connections from one client reached 2 backends"], "spread": []}),
    ([B4[0]] * 20, [B4[2]] * 20, {"sticky": [], "spread": ["all 20 connections without affinity reached 10.0.0.3:8080 of 4 backends (chance: 3.6e-12)"]}),
    ([B4[0]] * 19 + [None], B4 * 5, {"sticky": ["1 of 20 connections did not connect or show a backend"], "spread": []}),
    ([B4[0]] * 20, ["10.9.9.9:80"] + B4 * 4, {"sticky": [], "spread": ["connections reached ['10.9.9.9:80'], which are not the Service's backends"]}),
])
def test_affinity_verdicts(sticky: list[str | None], plain: list[str | None], problems: dict[str, list[str]]) -> None:
    from pytest_kpr.judge.affinity import affinity_problems

    got = affinity_problems(sticky, plain, B4)
    assert {k: [g[:len(w)] for g, w in zip(v, problems[k], strict=False)] for k, v in got.items()} == problems
    assert {k: len(v) for k, v in got.items()} == {k: len(v) for k, v in problems.items()}


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


def test_kube_proxy_and_ipvs_messages_in_full() -> None:
    from pytest_kpr.judge.kube_proxy import KUBE_PROXY_REMOVAL, ipvs_problems, kube_proxy_daemonset_problems

    assert kube_proxy_daemonset_problems([{"namespace": "kube-system", "name": "kube-proxy"}]) == [
        f"DaemonSet kube-system/kube-proxy runs kube-proxy (0/0 pods ready) while KubeProxyReplacement is on: remove it the way Cilium "
        f"documents ({KUBE_PROXY_REMOVAL})"]
    assert ipvs_problems({"a": ["T 1", "T 2", "T 3"]}) == ["a: 3 IPVS virtual services (T 1, T 2, T 3)"]
    assert ipvs_problems({"a": ["T 1", "T 2", "T 3", "T 4"]}) == ["a: 4 IPVS virtual services (T 1, T 2, T 3, ...)"]


@pytest.mark.parametrize(("plain", "backends", "spread_problem"), [
    (["x:1", "x:1"], ["x:1", "x:2"], True),  # two connections, two backends, one reached: judged
    (["x:1"], ["x:1", "x:2"], False),  # one connection proves nothing
    (["x:1", "x:1"], ["x:1"], False),  # one backend: nothing to spread over
    (["x:1", "x:1", "x:1"], ["x:1", "x:2", "x:3"], True),
])
def test_the_spread_verdict_needs_two_connections_and_two_backends(plain: list[str], backends: list[str], spread_problem: bool) -> None:
    from pytest_kpr.judge.affinity import affinity_problems

    assert bool(affinity_problems(["x:1"], plain, backends)["spread"]) is spread_problem


# -- eTP=Local, the client's address, hostPort, affinity timeout ------------------------------------------------------

from pytest_kpr.judge.affinity import affinity_timeout_problems  # noqa: E402
from pytest_kpr.judge.etp import client_address_problems, etp_reach_problems, health_check_problems  # noqa: E402
from pytest_kpr.judge.hostport import hostport_admission_problems, hostport_frontend_problems  # noqa: E402


@pytest.mark.parametrize(("local", "cluster", "fragments"), [
    ({"b": "accepted", "c": "icmp-unreachable"}, {"b": "accepted", "c": "accepted"}, []),
    ({"b": "accepted", "c": "timeout"}, {"b": "accepted", "c": "accepted"}, []),  # drop, or enable-no-service-endpoints-routable off
    ({"b": "accepted", "c": "accepted"}, {"b": "accepted", "c": "accepted"}, ["c, which has no local backend, served it"]),
    ({"b": "timeout", "c": "icmp-unreachable"}, {"b": "accepted", "c": "accepted"}, ["the node with the backend (b) did not serve it from outside: timeout"]),
    ({"b": "accepted", "c": "reset"}, {"b": "accepted", "c": "timeout"}, ["externalTrafficPolicy=Cluster on the same backend was not served by c (timeout)"]),
    ({}, {}, ["the node with the backend (b) did not serve it from outside: None"]),
])
def test_etp_reach_judgement(local: dict, cluster: dict, fragments: list[str]) -> None:
    problems = etp_reach_problems(local, cluster, "b")
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


ETP_SVC = ("ns", "etp-local")
OK_BODY = {"service": {"namespace": "ns", "name": "etp-local"}, "localEndpoints": 1}
NONE_BODY = {"service": {"namespace": "ns", "name": "etp-local"}, "localEndpoints": 0}


@pytest.mark.parametrize(("answers", "fragments"), [
    ({"a": (503, NONE_BODY), "b": (200, OK_BODY)}, []),
    ({"a": (200, OK_BODY), "b": (200, OK_BODY)}, ["a answered HTTP 200 with localEndpoints 1, expected 503 with 0"]),
    ({"a": (503, NONE_BODY), "b": (503, NONE_BODY)}, ["b answered HTTP 503 with localEndpoints 0, expected 200 with 1"]),
    ({"a": (0, None), "b": (200, OK_BODY)}, ["a answered HTTP nothing with localEndpoints None"]),
    ({"a": (503, NONE_BODY), "b": (200, {**OK_BODY, "service": {"namespace": "ns", "name": "other"}})}, ["b answered for {'namespace': 'ns', 'name': 'other'}"]),
    ({"a": (503, "not json"), "b": (200, OK_BODY)}, ["a answered HTTP 503 with localEndpoints None"]),
])
def test_health_check_judgement(answers: dict, fragments: list[str]) -> None:
    problems = health_check_problems(answers, {"a": 0, "b": 1}, ETP_SVC)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("seen", "expect", "internal", "fragment"), [
    ("1.1.1.1", "client", "10.0.0.1", None),
    ("2.2.2.2", "node", "10.0.0.1", None),
    ("10.0.0.1", "cilium-internal-ip", "10.0.0.1", None),
    ("2.2.2.2", "client", "10.0.0.1", "saw 2.2.2.2 (the receiving node's InternalIP), expected 1.1.1.1 (the client: why)"),
    ("1.1.1.1", "node", "10.0.0.1", "saw 1.1.1.1 (the client's address), expected 2.2.2.2 (the receiving node's InternalIP: why)"),
    # tunnel routing: the SNAT address is the cilium_host one; the InternalIP there is the swapped-address fault
    ("2.2.2.2", "cilium-internal-ip", "10.0.0.1", "saw 2.2.2.2 (the receiving node's InternalIP), expected 10.0.0.1 (the receiving node's "
                                                  "CiliumInternalIP: why)"),
    ("10.0.0.1", "node", "10.0.0.1", "saw 10.0.0.1 (the receiving node's CiliumInternalIP), expected 2.2.2.2"),
    ("3.3.3.3", "client", "10.0.0.1", "(neither the client's nor the node's address)"),
    ("10.0.0.1", "cilium-internal-ip", "", "the receiving node's CiliumInternalIP is unknown (CiliumNode not readable)"),
    (None, "client", "10.0.0.1", "no backend logged the request"),
])
def test_client_address_judgement(seen: str | None, expect: str, internal: str, fragment: str | None) -> None:
    problems = client_address_problems(seen, "1.1.1.1", "2.2.2.2", expect, "why", internal)
    assert (fragment is None and not problems) or (fragment is not None and len(problems) == 1 and fragment in problems[0]), problems


def test_hostport_frontend_and_admission_judgements() -> None:
    from types import SimpleNamespace as NS

    from pytest_kpr.parse import L3n4

    hp = NS(type="HostPort", frontend=L3n4("0.0.0.0", 18780, "TCP"))
    np_ = NS(type="NodePort", frontend=L3n4("0.0.0.0", 18780, "TCP"))
    hp6 = NS(type="HostPort", frontend=L3n4("::", 18780, "TCP"))
    assert hostport_frontend_problems([hp], 18780) == []
    assert hostport_frontend_problems([np_], 18780) == ["the agent lists no IPv4 HostPort frontend on port 18780 (only ['NodePort 0.0.0.0:18780/TCP'])"]
    assert hostport_frontend_problems([hp], 18781) == ["the agent lists no IPv4 HostPort frontend on port 18781"]
    # one per family the pod has an address of (SRC_HOSTPORT_FAMILIES): the IPv4 one does not stand for IPv6
    assert hostport_frontend_problems([hp, hp6], 18780, "IPv6") == []
    assert hostport_frontend_problems([hp], 18780, "IPv6") == ["the agent lists no IPv6 HostPort frontend on port 18780 (only ['HostPort 0.0.0.0:18780/TCP'])"]
    assert hostport_frontend_problems([hp6], 18780, "IPv4") == ["the agent lists no IPv4 HostPort frontend on port 18780 (only ['HostPort [::]:18780/TCP'])"]
    assert hostport_admission_problems({"phase": "Pending", "node": None}, "w") == []
    assert hostport_admission_problems({"phase": "Running", "node": "other"}, "w") == []
    assert hostport_admission_problems({"phase": "Failed", "node": "w"}, "w") == []
    assert "admitted on w (Running)" in hostport_admission_problems({"phase": "Running", "node": "w"}, "w")[0]


@pytest.mark.parametrize(("peers", "fragment"), [
    (["a", "b", "a", "c"], None),
    (["a", "a", "a", "a"], "all 4 connections, 2.5 s apart (past the 1 s timeout), reached a: the affinity never expired (chance if it does: 1.6e-02)"),
    (["a", None, "a", "a"], "1 of 4 connections did not connect"),
    (["a"], None),  # one connection proves nothing
])
def test_affinity_timeout_judgement(peers: list, fragment: str | None) -> None:
    problems = affinity_timeout_problems(peers, ["a", "b", "c", "d"], 2.5, 1)
    assert (fragment is None and not problems) or (fragment is not None and fragment in problems[0]), problems
    assert affinity_timeout_problems(["a", "a"], ["a"], 2.5, 1) == [], "one backend: no spread to expect"


# -- Maglev -----------------------------------------------------------------------------------------------------------

from pytest_kpr.judge.maglev import ( # noqa: E402
    maglev_flow_problems,
    maglev_remap_problems,
    maglev_scope_problems,
    maglev_seed_problems,
    maglev_table,
    maglev_table_problems,
)
from pytest_kpr.parse.statedb import parse_lb_maps_dump  # noqa: E402

DUMP = parse_lb_maps_dump("""BE: ID=7 ADDR=10.244.1.10:8080/TCP STATE=active
BE: ID=9 ADDR=10.244.2.10:8080/TCP STATE=active
MAGLEV: ID=4 INNER=[9(8191), 7(8190)]
REV: ID=4 ADDR=172.18.0.3:30000
SVC: ID=3 ADDR=10.96.0.5:80/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=2 QCOUNT=0 FLAGS=ClusterIP+non-routable
SVC: ID=4 ADDR=172.18.0.3:30000/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=2 QCOUNT=0 FLAGS=NodePort
SVC: ID=4 ADDR=172.18.0.3:30000/TCP SLOT=1 BEID=7 COUNT=0 QCOUNT=0 FLAGS=NodePort
""")


def test_a_maglev_table_is_read_by_frontend_with_backend_addresses() -> None:
    assert maglev_table(DUMP, "172.18.0.3:30000/TCP") == {"10.244.2.10:8080": 8191, "10.244.1.10:8080": 8190}
    assert maglev_table(DUMP, "10.96.0.5:80/TCP") is None and maglev_table(DUMP, "1.2.3.4:1/TCP") is None


@pytest.mark.parametrize(("seeds", "fragment"), [
    ({"a": "s", "b": "s"}, None),
    ({"a": None, "b": "D"}, None),  # unset is the built-in default
    ({"a": None, "b": None}, None),
    ({"a": "s", "b": "t", "c": "s"}, "the agents use 2 different hash seeds: 's' on a, c; 't' on b"),
    ({"a": None, "b": "s"}, "'D' on a; 's' on b"),
])
def test_maglev_seed_judgement(seeds: dict, fragment: str | None) -> None:
    problems = maglev_seed_problems(seeds, "D")
    assert (fragment is None and not problems) or (fragment is not None and fragment in problems[0]), problems


@pytest.mark.parametrize(("tables", "fragment"), [
    ({"a": {"x": 3, "y": 2}, "b": {"x": 2, "y": 3}}, None),
    ({"a": None}, "a has no Maglev table for its NodePort frontend"),
    ({"a": {"x": 5}}, "a's table holds ['x'], not the backends ['x', 'y']"),
    ({"a": {"x": 4, "y": 1}}, "a's table is unbalanced: {'x': 4, 'y': 1}"),
])
def test_maglev_table_judgement(tables: dict, fragment: str | None) -> None:
    problems = maglev_table_problems(tables, ["x", "y"])
    assert (fragment is None and not problems) or (fragment is not None and problems == [fragment]), problems


def test_maglev_scope_and_flow_judgements() -> None:
    assert maglev_scope_problems({"a": False, "b": False}) == []
    assert maglev_scope_problems({"a": False, "b": True})[0].startswith("the ClusterIP frontend has a Maglev table on b:")
    same = {"n1": {1: "p", 2: "q"}, "n2": {1: "p", 2: "q"}}
    assert maglev_flow_problems(same) == [] and maglev_flow_problems({"n1": {1: "p"}}) == []
    differ = maglev_flow_problems({"n1": {1: "p", 2: "q"}, "n2": {1: "p", 2: "p"}})
    assert differ == ["1 of 2 flows did not reach one backend through n1 and n2: flow from :2 reached q through n1, p through n2"]
    unserved = maglev_flow_problems({"n1": {1: "p"}, "n2": {1: None}})
    assert "flow from :1 was not served through n2" in unserved[0]


@pytest.mark.parametrize(("after", "fragments"), [
    ({1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "b"}, []),  # only the removed backend's flow (7) moved
    ({1: "a", 2: "b", 3: "c", 4: "b", 5: "b", 6: "c", 7: "b"}, []),  # one survivor moved: within max(1, 10%)
    ({1: "b", 2: "c", 3: "a", 4: "a", 5: "b", 6: "c", 7: "b"}, ["3 of 6 flows on the surviving backends moved (50%; allowed 1)"]),
    ({1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "d"}, ["1 flows still reached the removed backend d"]),
    ({1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}, ["1 flows got no answer after the removal"]),
])
def test_maglev_remap_judgement(after: dict, fragments: list[str]) -> None:
    before = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "d"}
    problems = maglev_remap_problems(before, after, "d", 4)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


def test_the_fakes_maglev_tables_have_the_properties_the_suite_checks() -> None:
    """One seed and backend set make one table (whatever order the backends come in), balanced; a different seed another;
    removing one of four backends moves few of the other flows, and flows do not depend on the destination."""
    from pytest_kpr.testing import maglev

    bes = tuple(f"10.244.{i}.10:8080" for i in range(4))
    assert maglev.table("s", bes) == maglev.table("s", tuple(reversed(bes))) != maglev.table("t", bes)
    counts = maglev.slot_counts("s", bes)
    assert max(counts.values()) - min(counts.values()) <= 1 and sum(counts.values()) == maglev.TABLE_SIZE
    flows = [maglev.pick("s", bes, "172.18.0.1", p, 30000) for p in range(42000, 42400)]
    after = [maglev.pick("s", bes[:3], "172.18.0.1", p, 30000) for p in range(42000, 42400)]
    moved = sum(1 for a, b in zip(flows, after, strict=True) if a != bes[3] and a != b)
    assert moved <= 0.02 * sum(1 for a in flows if a != bes[3])


# -- map pressure -----------------------------------------------------------------------------------------------------

from pytest_kpr.judge.maps import map_visibility_problems, service_map_problems, which_map_filled, wildcard_problems  # noqa: E402
from pytest_kpr.rules.datapath import MAP_FULL_ERROR, MAP_FULL_ERRORS, REV_NAT_FULL_ERROR, wildcard_entry  # noqa: E402
from pytest_kpr.parse.health import HealthStatus  # noqa: E402


def test_service_map_judgement_names_how_full_the_map_is_and_which_map_filled() -> None:
    assert service_map_problems([], 20, 20, 65536) == []
    assert service_map_problems(["a", "b", "c", "d"], 528, 512, 512) == [
        "service map full (512 of 512 service entries): 4 of the run's 528 Services are in Kubernetes but not in the BPF maps (a, b, c, ...); "
        "raise bpf.lbMapMax (bpf-lb-map-max) or remove Services"]
    assert service_map_problems(["a"], 301, 290, 300, "reverse-NAT map")[0].startswith("reverse-NAT map full (290 of 300 service entries)")
    assert which_map_filled([None, "upsert reverse nat: Unable to update reverse NAT {Key:5}"], MAP_FULL_ERRORS) == "reverse-NAT map"
    assert which_map_filled([f"upsert service master: x: {MAP_FULL_ERROR}: y"], MAP_FULL_ERRORS) == "service map"
    assert which_map_filled([None, "other"], MAP_FULL_ERRORS) == "service map"


def _h(module: str, level: str, error: str = f"incremental: x: {MAP_FULL_ERROR}") -> HealthStatus:
    return HealthStatus(module, "job-reconcile", level, "Reconciliation failed", error, "", "", 1)


RECONCILER = "agent.controlplane.loadbalancer-reconciler"


@pytest.mark.parametrize(("shown", "health", "fragments"), [
    ({"a": ("Error", f"x: {MAP_FULL_ERROR}: y")}, [_h(RECONCILER, "Degraded")], []),
    ({"a": ("Error", f"upsert reverse nat: {REV_NAT_FULL_ERROR} {{Key:5}}")}, [_h(RECONCILER, "Degraded", f"incremental: {REV_NAT_FULL_ERROR}")], []),
    # Degraded once during the fill, OK after a clean round: visible (datapath.SRC_MAP_HEALTH)
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h(RECONCILER, "Degraded"), _h(RECONCILER, "OK", "")], []),
    ({"a": ("Done", None)}, [_h(RECONCILER, "Degraded")],
     ["1 of 1 Services missing from the map show no error for it (e.g. a: status Done, error None; expected Error with 'Unable to update "
      "element for LB bpf map' (service map full) or 'Unable to update reverse NAT' (reverse-NAT map full))"]),
    ({"a": ("Error", "some other error")}, [_h(RECONCILER, "Degraded")], ["show no error for it"]),
    ({"a": (None, None)}, [_h(RECONCILER, "Degraded")], ["status None"]),
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h(RECONCILER, "OK", ""), _h(RECONCILER, "OK", "")],
     ["the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (2 readings: OK)"]),
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h(RECONCILER, "Degraded", "incremental: something else")], ["was never Degraded with a full map's error"]),
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h("agent.controlplane.loadbalancer-reflectors", "Degraded")],
     ["the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (0 readings: no row)"]),
])
def test_map_visibility_judgement(shown: dict, health: list, fragments: list[str]) -> None:
    problems = map_visibility_problems(shown, health, MAP_FULL_ERRORS)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems



@pytest.mark.parametrize(
    ("cilium", "fe_type", "lb_class", "ipam", "enabled", "local", "want"),
    [
        ("1.19.1", "ClusterIP", None, None, None, False, True),  # the agent's defaults: lbipam, on
        ("1.20.5", "LoadBalancer", None, "lbipam", "true", False, True),
        ("1.18.14", "ClusterIP", None, None, None, False, False),  # before #40684
        ("1.20.5", "NodePort", None, None, None, False, False),
        ("1.20.5", "ExternalIPs", None, None, None, False, False),
        ("1.20.5", "ClusterIP", None, "nodeipam", None, False, False),  # class-less, but LB-IPAM is not the default class
        ("1.20.5", "ClusterIP", None, "none", None, False, False),
        ("1.20.5", "ClusterIP", None, None, "false", False, False),  # bpf-lb-enable-wildcard-entries off
        ("1.20.5", "LoadBalancer", "io.cilium/bgp-control-plane", "none", None, False, True),
        ("1.20.5", "LoadBalancer", "io.cilium/l2-announcer", None, None, False, True),
        ("1.20.5", "LoadBalancer", "io.cilium/node", None, None, False, False),
        ("1.20.5", "LoadBalancer", "other", None, None, False, False),
        ("1.20.5", "LoadBalancer", None, None, None, True, False),  # a local node address
        ((1, 19), "ClusterIP", None, " lbipam\n", "True\n", False, True),  # as read from the config map
    ],
)
def test_wildcard_entry_rule(cilium: Any, fe_type: str, lb_class: str | None, ipam: str | None, enabled: str | None, local: bool, want: bool) -> None:
    assert wildcard_entry(cilium, fe_type, lb_class, ipam, enabled, local) is want


@pytest.mark.parametrize(
    ("expected", "served", "wildcards", "fragments"),
    [
        (True, {"a": "10.96.0.1", "b": "10.96.0.2"}, {"10.96.0.1", "10.96.0.2", "10.96.0.9"}, []),
        (True, {"a": "10.96.0.1", "b": "10.96.0.2"}, {"10.96.0.1"}, ["1 of 2 Services in the map have no wildcard entry", "b (10.96.0.2)"]),
        (False, {"a": "fd00::1"}, set(), []),
        (False, {"a": "fd00::1", "b": "fd00::2"}, {"fd00::1", "fd00::2"}, ["2 of 2 Services in the map have a wildcard entry", "a (fd00::1)"]),
        (True, {}, set(), []),
    ],
)
def test_wildcard_judgement(expected: bool, served: dict, wildcards: set, fragments: list[str]) -> None:
    problems = wildcard_problems(expected, served, wildcards, "the rule's inputs")
    assert len(problems) == (1 if fragments else 0) and all(f in problems[0] for f in fragments), problems

# -- issue 15's judgements: the exact words and the edges (mutation survivors) ------------------------------------------

def test_issue_15_judgements_in_full() -> None:
    from types import SimpleNamespace as NS

    from pytest_kpr.parse import L3n4

    # health check: a node missing from the local-endpoint map has none; the Service named as namespace/name
    assert health_check_problems({"c": (503, {"service": {"namespace": "ns", "name": "s"}, "localEndpoints": 0})}, {}, ("ns", "s")) == []
    assert health_check_problems({"b": (200, {"service": {"namespace": "x", "name": "y"}, "localEndpoints": 1})}, {"b": 1}, ("ns", "s")) == [
        "b answered for {'namespace': 'x', 'name': 'y'}, not ns/s"]
    assert client_address_problems(None, "1.1.1.1", "2.2.2.2", "client", "w") == ["no backend logged the request, so what it saw is unknown"]
    # hostPort: a finished pod ran there too; a frontend of another type on the port is no HostPort frontend
    assert hostport_admission_problems({"phase": "Succeeded", "node": "w"}, "w") == [
        "a second pod asking for the same hostPort was admitted on w (Succeeded): two pods hold one port"]
    assert hostport_frontend_problems([NS(type="HostPort", frontend=L3n4("1.2.3.4", 9, "TCP"))], 9) == []
    # affinity timeout: two backends and two connections are enough to judge
    assert affinity_timeout_problems(["a", "a"], ["a", "b"], 2.5, 1) == [
        "all 2 connections, 2.5 s apart (past the 1 s timeout), reached a: the affinity never expired (chance if it does: 5.0e-01)"]
    # Maglev
    dump = parse_lb_maps_dump("MAGLEV: ID=4 INNER=[99(3)]\nSVC: ID=4 ADDR=1.1.1.1:1/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=0 QCOUNT=0 FLAGS=NodePort\n")
    assert maglev_table(dump, "1.1.1.1:1/TCP") == {"backend ID 99": 3}
    assert maglev_table_problems({"a": {"x": 3, "y": 1}}, ["x", "y"]) == ["a's table is unbalanced: {'x': 3, 'y': 1}"]
    assert maglev_scope_problems({"a": True, "b": True, "c": False}) == [
        "the ClusterIP frontend has a Maglev table on a, b: in-cluster traffic would be Maglev'd (only with bpf-lb-external-clusterip)"]
    five = maglev_flow_problems({"n1": {p: "x" for p in range(5)}, "n2": {p: "y" for p in range(5)}, "n3": {p: "x" for p in range(5)}})
    assert five == ["5 of 5 flows did not reach one backend through n1 and n2, n3: flow from :0 reached x through n1, y through n2, x through n3; "
                    "flow from :1 reached x through n1, y through n2, x through n3; flow from :2 reached x through n1, y through n2, x through n3; "
                    "flow from :3 reached x through n1, y through n2, x through n3; ..."]
    four = maglev_flow_problems({"n1": {p: "x" for p in range(4)}, "n2": {p: None for p in range(4)}, "n3": {p: None for p in range(4)}})
    assert four[0].endswith("flow from :3 was not served through n2, n3")
    before = {p: ("d" if p < 10 else "abc"[p % 3]) for p in range(40)}  # 30 flows on the survivors: 3 may move
    movable = [p for p in range(10, 40) if before[p] != "a"]

    def moving(k: int) -> dict[int, str]:  # the removed backend's flows go to "a", and k of the others too
        return {p: ("a" if before[p] == "d" or p in movable[:k] else before[p]) for p in range(40)}

    assert maglev_remap_problems(before, moving(3), "d", 4) == []
    four_moved = moving(4)
    assert maglev_remap_problems(before, four_moved, "d", 4) == [
        "4 of 30 flows on the surviving backends moved (13%; allowed 3): Maglev moves about 1% beyond the removed backend's share, "
        "a random pick 67%"]
    # service map: three names in full, a fourth as "..."
    assert service_map_problems(["a", "b", "c"], 3, 9, 9)[0].startswith("service map full (9 of 9 service entries): 3 of the run's 3 Services are in "
                                                                       "Kubernetes but not in the BPF maps (a, b, c); ")
    health = [_h("agent.controlplane.loadbalancer-reconciler", "OK", ""), _h("agent.x.loadbalancer-reconciler", "Stopped")]
    assert map_visibility_problems({"a": ("Error", None)}, health, MAP_FULL_ERRORS) == [
        "1 of 1 Services missing from the map show no error for it (e.g. a: status Error, error None; expected Error with 'Unable to update "
        "element for LB bpf map' (service map full) or 'Unable to update reverse NAT' (reverse-NAT map full))",
        "the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (2 readings: OK, Stopped)"]


@pytest.mark.parametrize(("ds", "runs"), [
    ({"metadata": {"labels": {"k8s-app": "kube-proxy"}}}, True),  # kubeadm, kind
    ({"spec": {"template": {"spec": {"containers": [{"image": "registry.k8s.io/kube-proxy:v1.34.0"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "registry.k8s.io/kube-proxy@sha256:abc"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "example.com/k8s/kube-proxy"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "x/hyperkube:v1", "command": ["/usr/local/bin/kube-proxy", "--v=2"]}]}}}}, True),
    ({"spec": {"template": {"spec": {"initContainers": [{"image": "registry.k8s.io/kube-proxy:v1"}]}}}}, True),
    ({"metadata": {"labels": {"k8s-app": "cilium"}}, "spec": {"template": {"spec": {"containers": [{"image": "quay.io/cilium/cilium:v1.20.2",
                                                                                                   "command": ["cilium-agent"]}]}}}}, False),
    ({"spec": {"template": {"spec": {"containers": [{"image": "example.com/kube-proxy-exporter:1"}]}}}}, False),
    # a registry with a port, a tag and a digest together: the repository is what is left of the last ':' before the '@'
    ({"spec": {"template": {"spec": {"containers": [{"image": "my.registry:5000/kube-proxy:v1.34.0"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "my.registry:5000/k8s/kube-proxy:v1@sha256:ab@cd"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "my.registry:5000/not-kube-proxy:v1"}]}}}}, False),
    ({}, False),
])
def test_a_kube_proxy_daemonset_is_known_by_label_image_or_command(ds: dict, runs: bool) -> None:
    from pytest_kpr.judge.kube_proxy import runs_kube_proxy

    assert runs_kube_proxy(ds) is runs


@pytest.mark.parametrize(("problems", "allow", "reason"), [
    ([], True, None),  # nothing found: nothing to accept
    (["DaemonSet a/b runs kube-proxy"], False, None),  # found, not accepted: the check fails
    (["DaemonSet a/b runs kube-proxy", "x"], True, "kube-proxy beside the replacement, accepted on purpose (--kpr-allow-kube-proxy): "
                                                   "DaemonSet a/b runs kube-proxy; x"),
])
def test_kube_proxy_is_accepted_only_on_purpose(problems: list[str], allow: bool, reason: str | None) -> None:
    from pytest_kpr.judge.kube_proxy import KUBE_PROXY_POLICY, kube_proxy_accepted

    assert kube_proxy_accepted(problems, allow) == reason
    assert "pytest-kpr's policy, not Cilium's" in KUBE_PROXY_POLICY and "--kpr-allow-kube-proxy" in KUBE_PROXY_POLICY


# -- what the judges report beside their problems (evidence and summaries) --------------------------------------------

@pytest.mark.parametrize(("ds", "want"), [
    ({"metadata": {"namespace": "kube-system", "name": "kube-proxy"}, "status": {"desiredNumberScheduled": 3, "numberReady": 2}},
     {"namespace": "kube-system", "name": "kube-proxy", "desired": 3, "ready": 2}),
    ({}, {"namespace": None, "name": None, "desired": 0, "ready": 0}),
    ({"metadata": None, "status": None}, {"namespace": None, "name": None, "desired": 0, "ready": 0}),
])
def test_a_daemonset_is_summarised_by_where_it_is_and_its_pods(ds: dict, want: dict) -> None:
    from pytest_kpr.judge.kube_proxy import daemonset_summary

    assert daemonset_summary(ds) == want


@pytest.mark.parametrize(("profile", "facts", "want"), [
    ("default", {"socket_lb_coverage": "Hostns-only"}, []),
    ("hostns-only", {"socket_lb_coverage": "Hostns-only"}, []),
    ("hostns-only", {"socket_lb_coverage": "Full"},
     ["the profile 'hostns-only' promises socket_lb_coverage 'Hostns-only', but the agents report 'Full'"]),
    ("dsr", {"nodeport_mode": "SNAT", "routing_mode": "Native"},
     ["the profile 'dsr' promises nodeport_mode 'DSR', but the agents report 'SNAT'"]),
    ("dsr", {"nodeport_mode": "Hybrid", "routing_mode": "Tunnel"},
     ["the profile 'dsr' promises nodeport_mode 'DSR', but the agents report 'Hybrid'",
      "the profile 'dsr' promises routing_mode 'Native', but the agents report 'Tunnel'"]),
    ("small-maps", {"lb_map_max": 65536}, ["the profile 'small-maps' promises lb_map_max 512, but the agents report 65536"]),
    ("no-such-profile", {}, []),
])
def test_a_profile_is_judged_by_what_the_agents_report(profile: str, facts: dict, want: list[str]) -> None:
    from types import SimpleNamespace

    from pytest_kpr.judge.profiles import profile_problems

    assert profile_problems(profile, SimpleNamespace(**facts)) == want  # type: ignore[arg-type]


def test_convergence_timing_in_its_evidence_form() -> None:
    from pytest_kpr.judge.backend_slots import ConvergenceTiming

    t = ConvergenceTiming({"a": 0.5, "b": 1.0}, {"w1": {"a": 0.75, "b": 1.12345}, "w2": {"a": 0.6}, "w3": {"a": 0.5, "b": 1.25}}, 0.25)
    assert t.lag() == {"w1": 0.123, "w2": None, "w3": 0.25}
    assert t.slowest() == ("w2", None), "an agent that never caught up is the slowest"
    assert t.to_json() == {"resolution_seconds": 0.25, "endpointslice": {"a": 0.5, "b": 1.0},
                           "agents": {"w1": {"a": 0.75, "b": 1.12345}, "w2": {"a": 0.6}, "w3": {"a": 0.5, "b": 1.25}},
                           "lag_seconds": {"w1": 0.123, "w2": None, "w3": 0.25}, "slowest": {"node": "w2", "lag_seconds": None}}
    done = ConvergenceTiming({"a": 0.5}, {"w1": {"a": 0.7}, "w2": {"a": 0.9}}, 0.25)
    assert done.slowest() == ("w2", 0.4) and done.to_json()["slowest"] == {"node": "w2", "lag_seconds": 0.4}
    assert ConvergenceTiming({}, {}, 0.25).to_json()["slowest"] is None


@pytest.mark.parametrize(("problems", "then", "want"), [
    ([], "", None),
    (["a"], "", "socket LB: a"),
    (["a", "b"], " (see x)", "socket LB: a; b (see x)"),
])
def test_holds_names_the_property_and_every_problem(problems: list[str], then: str, want: str | None) -> None:
    from pytest_kpr.judge import holds

    if want is None:
        holds(problems, "socket LB", then=then)
        return
    with pytest.raises(AssertionError) as e:
        holds(problems, "socket LB", then=then)
    assert str(e.value) == want
