"""The fake agent's load-balancer control plane, piece by piece (pytest_kpr.testing.lbcp): tables, no root.

Cilium's scripts (test_lb_txtar.py) check the pieces together; these pin each piece on its own, so that a change that
breaks one names it."""

from __future__ import annotations

import ipaddress

import pytest

from pytest_kpr.testing.lbcp import AgentConfig, ConfigError, L3n4
from pytest_kpr.testing.lbcp.agent import Agent, parse_endpoint_slice, select_backends
from pytest_kpr.testing.lbcp.bpf import (F_AFFINITY, F_ROUTABLE, IdAllocator, flags_string, svc_flags)
from pytest_kpr.testing.lbcp.config import parse_flags
from pytest_kpr.testing.lbcp.maglev import BackendInfo, hash_string, lookup_table, murmur3_128
from pytest_kpr.testing.lbcp.tables import ACTIVE, MAINTENANCE, TERMINATING, TERMINATING_NOT_SERVING
from pytest_kpr.testing.txtar import address_key, go_replacement, split_by_positions, split_header, tabwrite


def a(text: str) -> L3n4:
    return L3n4.parse(text)


# MurmurHash3_x64_128 (Appleby's reference, which cilium/cilium pkg/murmur3 implements): published vectors
@pytest.mark.parametrize(("data", "h1", "h2"), [
    (b"", 0, 0),
    (b"hello", 0xCBD8A7B341BD9B02, 0x5B1E906A48AE1D19),
    (b"The quick brown fox jumps over the lazy dog", 0xE34BBC7BBC071B6C, 0x7A433CA9C49A9347),
])
def test_murmur3_128_gives_the_reference_vectors(data: bytes, h1: int, h2: int) -> None:
    assert murmur3_128(data, 0) == (h1, h2)


@pytest.mark.parametrize(("addr", "text"), [
    ("10.244.1.1:80/TCP", "[10.244.1.1:80/TCP,State:active]"),
    ("[2001::1]:8080/UDP", "[[2001::1]:8080/UDP,State:active]"),
])
def test_maglev_hashes_a_backend_by_its_address_string(addr: str, text: str) -> None:
    assert hash_string(a(addr)) == text


@pytest.mark.parametrize(("weights", "m", "counts"), [
    ((100, 100, 100), 251, {1: (83, 84), 2: (83, 84), 3: (83, 84)}),
    ((200, 100), 251, {1: (166, 168), 2: (83, 85)}),
    ((100,), 251, {1: (251, 251)}),
])
def test_maglev_fills_every_slot_in_proportion_to_the_weights(weights: tuple[int, ...], m: int, counts: dict[int, tuple[int, int]]) -> None:
    bes = [BackendInfo(i + 1, a(f"10.0.0.{i + 1}:80/TCP"), w) for i, w in enumerate(weights)]
    table = lookup_table(bes, m)
    assert len(table) == m and -1 not in table
    for bid, (lo, hi) in counts.items():
        assert lo <= table.count(bid) <= hi, (bid, table.count(bid))


def test_maglev_moves_few_slots_when_a_backend_goes() -> None:
    bes = [BackendInfo(i + 1, a(f"10.0.0.{i + 1}:80/TCP")) for i in range(5)]
    before, after = lookup_table(bes, 1021), lookup_table(bes[:-1], 1021)
    moved = sum(1 for x, y in zip(before, after) if x != y and x != 5)
    assert moved < 1021 // 10, moved  # Maglev's minimal disruption: beyond the removed backend's own slots, few change


@pytest.mark.parametrize(("texts", "ordered"), [
    # the tables' primary key is Bytes(): the 16-byte address (IPv4 mapped: ::ffff:a.b.c.d), port, protocol, scope
    (["10.0.0.2:80/TCP", "10.0.0.1:80/TCP"], ["10.0.0.1:80/TCP", "10.0.0.2:80/TCP"]),
    (["10.0.0.1:80/UDP", "10.0.0.1:80/TCP"], ["10.0.0.1:80/TCP", "10.0.0.1:80/UDP"]),
    (["10.0.0.1:443/TCP", "10.0.0.1:80/TCP"], ["10.0.0.1:80/TCP", "10.0.0.1:443/TCP"]),
    (["0.0.0.0:30000/TCP/i", "0.0.0.0:30000/TCP"], ["0.0.0.0:30000/TCP", "0.0.0.0:30000/TCP/i"]),
    (["10.0.0.1:80/TCP", "[::1]:80/TCP", "[fd00::1]:80/TCP"], ["[::1]:80/TCP", "10.0.0.1:80/TCP", "[fd00::1]:80/TCP"]),
])
def test_addresses_sort_as_their_key_bytes(texts: list[str], ordered: list[str]) -> None:
    assert [str(x) for x in sorted((a(t) for t in texts), key=lambda x: x.key)] == ordered


@pytest.mark.parametrize("text", ["10.0.0.1:80/TCP", "[2001::1]:53/UDP", "0.0.0.0:30000/TCP/i", "1.1.1.1:5/SCTP"])
def test_an_address_prints_as_it_parses(text: str) -> None:
    assert str(a(text)) == text


@pytest.mark.parametrize(("kw", "text"), [
    (dict(svc_type="ClusterIP"), "ClusterIP+non-routable"),
    (dict(svc_type="NodePort", routable=True), "NodePort"),
    (dict(svc_type="LoadBalancer", routable=True, ext_local=True), "LoadBalancer+Local+two-scopes"),
    (dict(svc_type="NodePort", routable=True, ext_local=True, int_local=True), "NodePort+Local+InternalLocal"),
    (dict(svc_type="ClusterIP", int_local=True), "ClusterIP+InternalLocal+non-routable"),
    (dict(svc_type="LoadBalancer", routable=True, check_source_range=True), "LoadBalancer+check source-range"),
    (dict(svc_type="LoadBalancer", routable=True, check_source_range=True, source_range_deny=True),
     "LoadBalancer+check source-range+deny"),
    (dict(svc_type="HostPort", routable=True, loopback=True), "HostPort+loopback"),
    (dict(svc_type="NodePort", routable=True, dsr=True), "NodePort+dsr"),
    (dict(svc_type="ExternalIPs", routable=True, affinity=True), "ExternalIPs+sessionAffinity"),
])
def test_service_flags_print_as_lb_maps_dump_prints_them(kw: dict, text: str) -> None:
    assert flags_string(svc_flags(**kw)) == text


def test_the_affinity_and_routable_bits_are_ciliums() -> None:
    assert (F_AFFINITY, F_ROUTABLE) == (1 << 4, 1 << 6)  # loadbalancer.go serviceFlagSessionAffinity, serviceFlagRoutable


def test_ids_are_allocated_upwards_and_a_released_one_is_not_reused_at_once() -> None:
    ids = IdAllocator(1, 10)
    x, y = ids.acquire(a("10.0.0.1:80/TCP")), ids.acquire(a("10.0.0.2:80/TCP"))
    assert (x, y) == (1, 2)
    assert ids.acquire(a("10.0.0.1:80/TCP")) == 1  # the same address keeps its ID
    ids.release(a("10.0.0.1:80/TCP"))
    assert ids.acquire(a("10.0.0.3:80/TCP")) == 3


@pytest.mark.parametrize(("args", "check"), [
    ([], lambda c: (c.lb_algorithm, c.maglev_table_size, c.lb_mode) == ("random", 1021, "snat")),
    (["--bpf-lb-algorithm=maglev"], lambda c: c.lb_algorithm == "maglev"),
    (["--node-port-algorithm=maglev"], lambda c: c.lb_algorithm == "maglev"),
    (["--enable-service-topology"], lambda c: c.service_topology),
    (["--enable-service-topology=false"], lambda c: not c.service_topology),
    (["--bpf-lb-mode=hybrid", "--bpf-lb-mode-annotation"], lambda c: (c.lb_mode, c.mode_annotation) == ("hybrid", True)),
    (["--lb-test-fault-probability=0.0"], lambda c: True),
    (["--enable-experimental-lb"], lambda c: c.cilium_minor == (1, 17)),
])
def test_the_flags_the_fake_models(args: list[str], check) -> None:  # type: ignore[no-untyped-def]
    assert check(parse_flags(args))


@pytest.mark.parametrize(("args", "error"), [
    (["--enable-scale-to-zero"], "--enable-scale-to-zero: an agent flag the fake does not model"),
    (["--bpf-lb-mode=fast"], "--bpf-lb-mode=fast: expected snat, dsr or hybrid"),
    (["--enable-service-topology=maybe"], "not a boolean"),
    (["--bpf-lb-maglev-table-size=1000"], "not one of"),
    (["maglev"], "maglev: not a flag"),
])
def test_a_flag_the_fake_does_not_model_is_refused_not_ignored(args: list[str], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        parse_flags(args)


def _slice(conditions: dict, annotations: dict | None = None) -> dict:
    return {"metadata": {"name": "s", "namespace": "t", "annotations": annotations or {}}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "nodeName": "n1", "conditions": conditions}],
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}


@pytest.mark.parametrize(("conditions", "annotations", "state"), [
    ({}, None, ACTIVE),
    ({"ready": True}, None, ACTIVE),
    ({"ready": False, "serving": True, "terminating": True}, None, TERMINATING),
    ({"ready": False, "serving": False, "terminating": True}, None, TERMINATING_NOT_SERVING),
    ({"ready": False}, None, MAINTENANCE),
    ({"ready": True}, {"service.cilium.io/weight": "0"}, MAINTENANCE),
])
def test_an_endpoints_conditions_decide_its_backend_state(conditions: dict, annotations: dict | None, state: str) -> None:
    (be,) = parse_endpoint_slice(AgentConfig(), "t/s", _slice(conditions, annotations)).values()
    assert be.state == state and str(be.address) == "10.0.0.1:80/TCP" and be.node_name == "n1"


def test_a_selected_backend_matches_the_frontends_protocol_family_and_port_name() -> None:
    cfg = AgentConfig()
    agent = Agent(cfg)
    agent.start()
    agent.k8s_upsert({"kind": "Service", "metadata": {"name": "s", "namespace": "t"},
                      "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                                                   {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}})
    agent.k8s_upsert({"kind": "EndpointSlice", "metadata": {"name": "s-1", "namespace": "t", "labels": {"kubernetes.io/service-name": "s"}},
                      "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}],
                      "ports": [{"name": "dns", "port": 5353, "protocol": "UDP"}, {"name": "dns-tcp", "port": 5353, "protocol": "TCP"}]})
    agent.sync()
    rows = {r["Address"]: r["Backends"] for r in agent.table("frontends")}
    assert rows == {"10.96.0.1:53/TCP": "10.0.0.1:5353/TCP", "10.96.0.1:53/UDP": "10.0.0.1:5353/UDP"}
    assert select_backends is not None


@pytest.mark.parametrize(("header", "names", "positions"), [
    ("Address   Type  Backends", ["Address", "Type", "Backends"], [0, 10, 16]),
    ("Foo  Bar Baz", ["Foo", "Bar", "Baz"], [0, 5, 9]),  # statedb's own example (script.go splitHeaderLine)
    ("  Name\tSource", ["  Name", "Source"], [0, 7]),  # as statedb: the first column starts at 0, whatever leads it
])
def test_db_cmp_takes_the_columns_and_their_positions_from_the_header(header: str, names: list[str], positions: list[int]) -> None:
    assert split_header(header) == (names, positions)


@pytest.mark.parametrize(("line", "cells"), [
    ("10.0.0.1:80/TCP   ClusterIP   a, b", ["10.0.0.1:80/TCP", "ClusterIP", "a, b"]),
    ("10.0.0.1:80/TCP   ClusterIP", ["10.0.0.1:80/TCP", "ClusterIP", ""]),
])
def test_db_cmp_cuts_a_row_at_the_headers_positions(line: str, cells: list[str]) -> None:
    assert split_by_positions(line, [0, 18, 30]) == cells


def test_tables_print_as_statedb_prints_them() -> None:
    assert tabwrite([["Address", "Type"], ["1.1.1.1:80/TCP", "ClusterIP"]]) == ("Address          Type\n"
                                                                              "1.1.1.1:80/TCP   ClusterIP\n")


@pytest.mark.parametrize(("query", "key"), [
    ("10.0.0.1:80/TCP", bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1]) + bytes(4) + (80).to_bytes(2, "big") + b"T\0"),
    ("10.0.0.1:80/TCP/i", bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1]) + bytes(4) + (80).to_bytes(2, "big") + b"T\1"),
    ("10.0.0.0/8", bytes(10) + b"\xff\xff" + bytes([10])),
    ("[2001::1]:53/UDP", ipaddress.IPv6Address("2001::1").packed + bytes(4) + (53).to_bytes(2, "big") + b"U\0"),
])
def test_a_query_address_becomes_its_index_key(query: str, key: bytes) -> None:
    assert address_key(query) == key


@pytest.mark.parametrize(("pattern", "template", "text", "out"), [
    (r"(\d+)", "<$1>", "a12b", "a<12>b"),
    (r"(\d+)", "<${1}x>", "a12b", "a<12x>b"),
    (r"(\d+)", "<$1x>", "a12b", "a<>b"),  # Go: $1x names the group "1x", which does not exist
    (r"(\d+)", "$$", "a12b", "a$b"),
])
def test_sed_expands_replacements_as_go_does(pattern: str, template: str, text: str, out: str) -> None:
    import re
    assert re.sub(pattern, go_replacement(template), text) == out
