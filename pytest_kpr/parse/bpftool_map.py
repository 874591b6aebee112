"""``bpftool map dump pinned PATH -j``: a map's entries as bytes, and the per-packet session-affinity map's entries decoded.

The printer (libbpf/bpftool src/map.c print_entry_json, rules.datapath.SRC_BPFTOOL_DUMP): a JSON array of objects with
``key`` and ``value``, each a list of ``"0x%02hhx"`` strings, one per byte (a per-CPU map has ``values`` instead, and a map
with BTF a ``formatted`` object beside them, both ignored here). The affinity map's layout is Cilium's packed structs
(rules.datapath.SRC_AFFINITY_MAP): key = client (4 bytes, network order, in an 8-byte union; IPv6: 16) | rev_nat_id u16
in **network** byte order (copied from the service entry's rev_nat_index, which the agent stores in network order:
rules.datapath.SRC_REV_NAT_ORDER) | netns_cookie bit | pad; value = last_used u64 | backend_id u32 | pad, in the host's
byte order (little-endian on the architectures Cilium ships for).
"""

from __future__ import annotations

import ipaddress
import json
import struct
from dataclasses import dataclass

from .errors import ParseError


@dataclass(frozen=True)
class MapEntry:
    key: bytes
    value: bytes


@dataclass(frozen=True)
class AffinityEntry:
    client: str  # the client's address (or, with netns_cookie, the cookie in hex)
    rev_nat_id: int
    netns_cookie: bool  # the socket plane's entry, keyed by a network namespace
    backend_id: int
    last_used: int


def _bytes(cells: object, lineno: int, what: str) -> bytes:
    if not isinstance(cells, list) or not all(isinstance(c, str) and c.startswith("0x") and len(c) == 4 for c in cells):
        raise ParseError("bpftool-map-dump", lineno, str(cells)[:80], f"{what}: expected a list of \"0xNN\" strings")
    return bytes(int(c, 16) for c in cells)


def parse_map_dump_json(text: str) -> list[MapEntry]:
    try:
        doc = json.loads(text or "[]")
    except ValueError as e:
        raise ParseError("bpftool-map-dump", 1, (text or "")[:80], f"not JSON: {e}") from None
    if not isinstance(doc, list):
        raise ParseError("bpftool-map-dump", 1, (text or "")[:80], "expected a JSON array of entries")
    out = []
    for i, row in enumerate(doc, 1):
        if not isinstance(row, dict) or "key" not in row or "value" not in row:
            raise ParseError("bpftool-map-dump", i, str(row)[:80], "an entry needs key and value (a per-CPU map is not read here)")
        out.append(MapEntry(_bytes(row["key"], i, "key"), _bytes(row["value"], i, "value")))
    return out


AFFINITY_KEY_SIZE = {"IPv4": 16, "IPv6": 24}
AFFINITY_VALUE_SIZE = 16


def affinity_entries(entries: list[MapEntry], family: str) -> list[AffinityEntry]:
    """The entries of ``family``'s affinity map, decoded; an entry of another size is a ParseError naming it."""
    width = 4 if family == "IPv4" else 16
    union = 8 if family == "IPv4" else 16  # the client union: the address or an 8-byte netns cookie
    out = []
    for i, e in enumerate(entries, 1):
        if len(e.key) != AFFINITY_KEY_SIZE[family] or len(e.value) != AFFINITY_VALUE_SIZE:
            raise ParseError("bpftool-map-dump", i, e.key.hex(), f"not a {family} affinity entry: key {len(e.key)} B, value {len(e.value)} B "
                             f"(expected {AFFINITY_KEY_SIZE[family]} and {AFFINITY_VALUE_SIZE})")
        rev_nat_id = struct.unpack_from("!H", e.key, union)[0]  # network order (SRC_REV_NAT_ORDER)
        cookie = bool(e.key[union + 2] & 1)
        client = e.key[:8].hex() if cookie else str(ipaddress.ip_address(e.key[:width]))
        last_used, backend_id = struct.unpack_from("<QI", e.value, 0)
        out.append(AffinityEntry(client, rev_nat_id, cookie, backend_id, last_used))
    return out
