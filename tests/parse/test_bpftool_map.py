"""``bpftool map dump -j`` and the affinity map's entries (pytest_kpr.parse.bpftool_map): the recorded sample
(tests/data/bpftool/PROVENANCE.md), both families, the socket plane's netns-cookie entries, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kpr.parse.bpftool_map import AffinityEntry, MapEntry, affinity_entries, parse_map_dump_json
from pytest_kpr.parse.errors import ParseError
from pytest_kpr.testing.render import affinity_entry, map_dump_json

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "bpftool" / "map-dump-lru-hash-16-16.json"


def test_the_recorded_dump_reads_as_an_ipv4_affinity_entry() -> None:
    entries = parse_map_dump_json(SAMPLE.read_text())
    assert affinity_entries(entries, "IPv4") == [AffinityEntry("172.18.0.1", 7, False, 3, 16)]
    assert map_dump_json(entries) == SAMPLE.read_text().strip()  # the fake prints what bpftool printed


@pytest.mark.parametrize(("rev_nat_bytes", "rev_nat_id"), [
    (b"\x00\x07", 7), (b"\x07\x00", 1792), (b"\x01\x02", 258), (b"\x02\x01", 513), (b"\xff\x00", 65280), (b"\x00\x00", 0),
])
def test_the_rev_nat_id_is_read_in_network_byte_order(rev_nat_bytes: bytes, rev_nat_id: int) -> None:
    """The key's rev_nat_id is the service entry's index, which the agent stores in network byte order
    (rules.datapath.SRC_REV_NAT_ORDER): 00 07 is service 7, 07 00 is 1792, whatever the host's order."""
    key = bytes([172, 18, 0, 1]) + bytes(4) + rev_nat_bytes + bytes(6)
    value = (16).to_bytes(8, "little") + (3).to_bytes(4, "little") + bytes(4)
    assert affinity_entries([MapEntry(key, value)], "IPv4") == [AffinityEntry("172.18.0.1", rev_nat_id, False, 3, 16)]
    assert affinity_entry("172.18.0.1", rev_nat_id, 3, 16).key == key  # the fake writes what it reads


def test_a_maps_btf_formatted_object_is_not_read() -> None:
    """A map with BTF key/value types (as Cilium's are) makes bpftool add "formatted", where the network-order rev NAT ID
    shows as the little-endian integer (1792 for 7; tests/data/bpftool/PROVENANCE.md): the bytes decide."""
    row = json.loads(SAMPLE.read_text())[0]
    row["formatted"] = {"key": {"client_id": {"client_ip": 16781996, "client_cookie": 16781996}, "rev_nat_id": 1792,
                                "netns_cookie": "0x0", "reserved": "0x0", "pad1": 0, "pad2": 0},
                        "value": {"last_used": 16, "backend_id": 3, "pad": 0}}
    assert affinity_entries(parse_map_dump_json(json.dumps([row])), "IPv4") == [AffinityEntry("172.18.0.1", 7, False, 3, 16)]


def test_an_ipv6_entry_and_a_netns_cookie_entry() -> None:
    v6 = affinity_entry("fc00:f853:ccd:e793::1", 513, 70000, 5)
    cookie = MapEntry(bytes.fromhex("0102030405060708") + bytes([0x00, 0x09, 0x01, 0x00]) + bytes(4), bytes(8) + (2).to_bytes(4, "little") + bytes(4))
    assert affinity_entries([v6], "IPv6") == [AffinityEntry("fc00:f853:ccd:e793::1", 513, False, 70000, 5)]
    assert affinity_entries([cookie], "IPv4") == [AffinityEntry("0102030405060708", 9, True, 2, 0)]


@pytest.mark.parametrize(("text", "family", "message"), [
    ("not json", "IPv4", "bpftool-map-dump: line 1: not JSON"),
    ('{"key": []}', "IPv4", "expected a JSON array of entries"),
    ('[{"key": ["0x01"], "values": []}]', "IPv4", "an entry needs key and value (a per-CPU map is not read here)"),
    ('[{"key": ["1"], "value": ["0x00"]}]', "IPv4", 'key: expected a list of "0xNN" strings'),
    ('[{"key": ["0x00"], "value": ["0x00"]}]', "IPv4", "not a IPv4 affinity entry: key 1 B, value 1 B (expected 16 and 16)"),
])
def test_a_dump_that_is_not_an_affinity_map_is_one_line_naming_it(text: str, family: str, message: str) -> None:
    with pytest.raises(ParseError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        affinity_entries(parse_map_dump_json(text), family)
    assert "\n" not in str(e.value)


def test_an_empty_map_has_no_entries() -> None:
    assert affinity_entries(parse_map_dump_json("[]\n"), "IPv4") == [] and parse_map_dump_json("") == []
