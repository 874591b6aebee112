"""The fake agents' Maglev tables: Cilium's own (lbcp.maglev.lookup_table: each backend's permutation from murmur3 over
its address string and the hash seed, backends taking turns at their next free slot, as cilium/cilium pkg/maglev does,
the table Cilium's scripts check), and the flow hash that indexes the table (datapath.SRC_MAGLEV_HASH: source address,
ports and protocol, never the destination).

The flow hash is a stand-in (SHA-256, not the datapath's jhash): the suites compare agents with each other and flows
through different nodes, never a flow's slot with a computed one, so only its properties matter -- one flow, one slot,
on every agent.
"""

from __future__ import annotations

import functools
import hashlib

from .lbcp.addr import L3n4, ip_of
from .lbcp.maglev import DEFAULT_TABLE_SIZE, BackendInfo, lookup_table

#: the table size Cilium uses by default (Documentation/network/kubernetes/kubeproxy-free.rst: M = 16381)
TABLE_SIZE = DEFAULT_TABLE_SIZE

Backend = tuple[str, int]  # (address, port)


@functools.lru_cache(maxsize=64)
def table(seed: str, backends: tuple[Backend, ...], proto: str = "TCP", size: int = TABLE_SIZE) -> tuple[Backend, ...]:
    """The lookup table: ``size`` slots, each a backend. The order given does not matter (pkg/maglev sorts them)."""
    if not backends:
        return ()
    ids = lookup_table([BackendInfo(i, L3n4(ip_of(ip), port, proto)) for i, (ip, port) in enumerate(backends)], size, seed)
    return tuple(backends[i] for i in ids)


def flow_hash(seed: str, saddr: str, sport: int, dport: int, proto: str = "TCP") -> int:
    """hash_from_tuple_v4's inputs: (saddr, dport<<16|sport, nexthdr) -- not the destination address."""
    return int.from_bytes(hashlib.sha256(f"{seed}|flow|{saddr}|{dport << 16 | sport}|{proto}".encode()).digest()[:8], "big")


def pick(seed: str, backends: tuple[Backend, ...], saddr: str, sport: int, dport: int, proto: str = "TCP") -> Backend:
    lut = table(seed, backends, proto)
    return lut[flow_hash(seed, saddr, sport, dport, proto) % len(lut)]


def slot_counts(seed: str, backends: tuple[Backend, ...], proto: str = "TCP") -> dict[Backend, int]:
    counts: dict[Backend, int] = {}
    for b in table(seed, backends, proto):
        counts[b] = counts.get(b, 0) + 1
    return counts
