"""The DSR/SNAT judgement (pytest_kpr.judge.dsr) on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_kpr.judge.dsr import dsr_problems
from pytest_kpr.judge.dsr import DsrObservation

SEEN = DsrObservation("IPv4", "SNAT", "Tunnel", "w1", "172.18.0.3", "10.244.1.118", "w2", 30780, "172.18.0.1", 200, "10.244.1.118",
                      "cilium-internal-ip", "SNAT to the cilium_host address in tunnel routing", "SRC_SNAT_ADDRESS")


@pytest.mark.parametrize(("change", "want"), [
    ({}, []),
    ({"mode": "DSR", "expected": "client", "seen": "172.18.0.1"}, []),
    ({"expected": "node", "seen": "172.18.0.3"}, []),
    ({"http_code": 0}, ["172.18.0.3:30780 from outside answered nothing, so what the backend sees is unknown"]),
    ({"http_code": 503}, ["172.18.0.3:30780 from outside answered 503, so what the backend sees is unknown"]),
    ({"http_code": None, "seen": None}, ["172.18.0.3:30780 from outside answered nothing, so what the backend sees is unknown"]),
    ({"seen": None}, ["no backend logged the request, so what it saw is unknown"]),
    ({"seen": "172.18.0.3"}, ["the backend saw 172.18.0.3 (the receiving node's InternalIP), expected 10.244.1.118 (the receiving node's "
                              "CiliumInternalIP: SNAT to the cilium_host address in tunnel routing)"]),
    ({"seen": "172.18.0.1"}, ["the backend saw 172.18.0.1 (the client's address), expected 10.244.1.118 (the receiving node's "
                              "CiliumInternalIP: SNAT to the cilium_host address in tunnel routing)"]),
    ({"cilium_internal_ip": ""}, ["the backend saw 10.244.1.118, but the receiving node's CiliumInternalIP is unknown (CiliumNode not "
                                  "readable), so the SNAT rule cannot be checked"]),
    ({"family": "IPv6", "node_ip": "fc00::3", "http_code": 0}, ["[fc00::3]:30780 from outside answered nothing, so what the backend sees is unknown"]),
])
def test_dsr_judgement(change: dict, want: list[str]) -> None:
    assert dsr_problems(replace(SEEN, **change)) == want


def test_the_observation_is_dsr_json() -> None:
    assert list(SEEN.to_json()) == ["family", "mode", "routing", "receiving_node", "node_ip", "cilium_internal_ip", "backend_node",
                                    "node_port", "client", "http_code", "seen", "expected", "why", "rule"]
