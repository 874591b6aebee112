"""Observations shared by several judges' tables (and by test_messages.py's whole messages)."""

from __future__ import annotations

from pytest_kpr.judge.socket_lb import SocketLBObservation
from pytest_kpr.parse import parse_iptables_save, parse_nft_ruleset, parse_service_list_json
from pytest_kpr.parse.health import HealthStatus
from pytest_kpr.rules.datapath import MAP_FULL_ERROR
from pytest_kpr.testing import render


SVC, B1, B2, CLIENT = "10.96.0.11:80", "10.244.1.10:8080", "10.244.2.10:8080", "10.244.1.5:40404"


GOOD = SocketLBObservation(SVC, CLIENT, app_peer=SVC, socket_peer=B1, backends=frozenset({B1, B2}), service_translations=0)


PER_PACKET = SocketLBObservation(SVC, CLIENT, app_peer=SVC, socket_peer=SVC, backends=frozenset({B1, B2}), service_translations=1)


PROG = {"program": "cil_from_container", "attach": "tcx/ingress", "tc_filter_lines": 0, "policy_map": "cilium_policy_v2_00101",
        "interface": "lxc1", "endpoint_id": 101}


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


def _services(*entries: tuple[str, int, str]) -> list:
    return parse_service_list_json(render.service_list_json([
        {"id": i, "ip": ip, "port": port, "protocol": "TCP", "type": typ, "name": "web-np", "namespace": "d", "backends": []}
        for i, (ip, port, typ) in enumerate(entries, 1)]))


def _h(module: str, level: str, error: str = f"incremental: x: {MAP_FULL_ERROR}") -> HealthStatus:
    return HealthStatus(module, "job-reconcile", level, "Reconciliation failed", error, "", "", 1)
