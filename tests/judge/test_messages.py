"""Whole messages, as a user reads them, across the judges (the per-judge tables are beside this file)."""

from __future__ import annotations

from pytest_kpr.judge.affinity import timeout_problems
from pytest_kpr.judge.backend_slots import Convergence, SlotView, convergence_problems
from pytest_kpr.judge.etp import client_address_problems, health_check_problems
from pytest_kpr.judge.hostport import hostport_admission_problems, hostport_frontend_problems
from pytest_kpr.judge.iptables import kube_proxy_rule_problems, rule_line_problems, rule_view_problems
from pytest_kpr.judge.maglev import maglev_flow_problems, maglev_remap_problems, maglev_scope_problems, maglev_table, maglev_table_problems
from pytest_kpr.judge.maps import map_visibility_problems, service_map_problems
from pytest_kpr.judge.nodeport import nodeport_frontend_problems
from pytest_kpr.judge.socket_lb import conntrack_out_problems, program_problems, socket_lb_problems
from pytest_kpr.judge.affinity import AffinityObservation
from pytest_kpr.parse import L3n4, parse_iptables_save, parse_nft_ruleset
from pytest_kpr.parse.statedb import parse_lb_maps_dump
from pytest_kpr.rules.datapath import MAP_FULL_ERRORS

from .tables import B1, B2, CLIENT, EMPTY_NFT, GOOD, KUBE_PROXY, PER_PACKET, PROG, SEP_ONLY, SVC, _h, _services, views


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
    assert timeout_problems(AffinityObservation("IPv4", ("a", "b"), (), (), ("a", "a"), 1, 2.5)) == [
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
