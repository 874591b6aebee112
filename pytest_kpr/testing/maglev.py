"""The fake agents' Maglev tables: the populate step of the Maglev paper as cilium/cilium pkg/maglev implements it
(each backend's permutation from an offset and a skip derived from its name and the seed; backends take turns
claiming their next free slot), and the flow hash that indexes the table (datapath.SRC_MAGLEV_HASH: source address,
ports and protocol, never the destination).

The hashes are stand-ins (SHA-256, not Cilium's murmur3/jhash): the suites compare agents with each other and flows
through different nodes, never a table with a computed one, so only the properties matter -- one seed and one set of
backends give one table on every agent, and removing a backend moves little more than its own slots.
"""

from __future__ import annotations

import functools
import hashlib

#: the table size Cilium uses by default (Documentation/network/kubernetes/kubeproxy-free.rst: M = 16381)
TABLE_SIZE = 16381


def _h(seed: str, text: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}|{text}".encode()).digest()[:8], "big")


@functools.lru_cache(maxsize=64)
def table(seed: str, backends: tuple[str, ...], size: int = TABLE_SIZE) -> tuple[str, ...]:
    """The lookup table: ``size`` slots, each a backend (``ip:port``)."""
    if not backends:
        return ()
    names = sorted(backends)  # pkg/maglev sorts the backends before populating, so the order given does not matter
    perms = [(_h(seed, "offset|" + b) % size, _h(seed, "skip|" + b) % (size - 1) + 1) for b in names]
    nxt = [0] * len(names)
    out: list[str | None] = [None] * size
    filled = 0
    while True:
        for i, (offset, skip) in enumerate(perms):
            c = (offset + nxt[i] * skip) % size
            while out[c] is not None:
                nxt[i] += 1
                c = (offset + nxt[i] * skip) % size
            out[c] = names[i]
            nxt[i] += 1
            filled += 1
            if filled == size:
                return tuple(b for b in out if b is not None)


def flow_hash(seed: str, saddr: str, sport: int, dport: int, proto: str = "TCP") -> int:
    """hash_from_tuple_v4's inputs: (saddr, dport<<16|sport, nexthdr) -- not the destination address."""
    return _h(seed, f"flow|{saddr}|{dport << 16 | sport}|{proto}")


def pick(seed: str, backends: tuple[str, ...], saddr: str, sport: int, dport: int, proto: str = "TCP") -> str:
    lut = table(seed, backends)
    return lut[flow_hash(seed, saddr, sport, dport, proto) % len(lut)]


def slot_counts(seed: str, backends: tuple[str, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for b in table(seed, backends):
        counts[b] = counts.get(b, 0) + 1
    return counts
