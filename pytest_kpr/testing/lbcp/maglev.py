"""Cilium's Maglev lookup table, computed as the agent computes it.

cilium/cilium pkg/maglev/maglev.go@e0cc421a (the newest the look-ups hold): each backend is hashed by its
``hashString`` -- `"[" + addr + ":" + port + "/" + proto + ",State:active]"` (IPv6: `"[[" + addr + "]:" ...`);
`getOffsetAndSkip`: `h1, h2 := murmur3.Hash128(addr, seed)`, `offset := h1 % m`, `skip := (h2 % (m - 1)) + 1`; the
backends are sorted by that string, then take turns claiming the next free slot of their permutation
(`computeLookupTable`, weights honoured by skipping a backend's turn). The seed is the first four bytes of the
base64 ``bpf-lb-maglev-hash-seed`` (default "JLfvgnHc2kaSUFaI"); murmur3 is MurmurHash3_x64_128
(pkg/murmur3/murmur3_reference.go: Appleby's reference).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from ...rules.datapath import MAGLEV_DEFAULT_SEED
from .addr import L3n4, SCOPE_INTERNAL

DEFAULT_SEED = MAGLEV_DEFAULT_SEED  # the agent's built-in bpf-lb-maglev-hash-seed
DEFAULT_TABLE_SIZE = 16381
#: maglev.go maglevSupportedTableSizes
SUPPORTED_TABLE_SIZES = (251, 509, 1021, 2039, 4093, 8191, 16381, 32749, 65521, 131071)

_M64 = (1 << 64) - 1
_C1, _C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    return k ^ (k >> 33)


def murmur3_128(data: bytes, seed: int) -> tuple[int, int]:
    """MurmurHash3_x64_128 of ``data``: (h1, h2)."""
    h1 = h2 = seed & 0xFFFFFFFF
    n = len(data) // 16
    for i in range(n):
        k1 = int.from_bytes(data[16 * i:16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8:16 * i + 16], "little")
        k1 = (_rotl((k1 * _C1) & _M64, 31) * _C2) & _M64
        h1 ^= k1
        h1 = (_rotl(h1, 27) + h2) & _M64
        h1 = (h1 * 5 + 0x52DCE729) & _M64
        k2 = (_rotl((k2 * _C2) & _M64, 33) * _C1) & _M64
        h2 ^= k2
        h2 = (_rotl(h2, 31) + h1) & _M64
        h2 = (h2 * 5 + 0x38495AB5) & _M64
    tail = data[16 * n:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl((k2 * _C2) & _M64, 33) * _C1) & _M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl((k1 * _C1) & _M64, 31) * _C2) & _M64
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    return h1, h2


def seed_murmur(seed: str) -> int:
    d = base64.b64decode(seed)
    if len(d) != 12:
        raise ValueError(f"decoded hash seed is {len(d)} bytes (not 12 bytes)")
    return int.from_bytes(d[:4], "big")


def hash_string(addr: L3n4) -> str:
    """maglev.go setHashString."""
    host = f"[{addr.ip}]:" if addr.is6 else f"{addr.ip}:"
    return "[" + host + f"{addr.port}/{addr.proto}" + ("/i" if addr.scope == SCOPE_INTERNAL else "") + ",State:active]"


@dataclass(frozen=True)
class BackendInfo:
    id: int
    addr: L3n4
    weight: int = 100


def lookup_table(backends: list[BackendInfo], m: int = DEFAULT_TABLE_SIZE, seed: str = DEFAULT_SEED) -> list[int]:
    """``GetLookupTable``: ``m`` backend IDs."""
    if not backends:
        return []
    s = seed_murmur(seed)
    infos = sorted(((hash_string(b.addr), b) for b in backends), key=lambda t: t[0])
    perms = []
    for text, _ in infos:
        h1, h2 = murmur3_128(text.encode(), s)
        perms.append((h1 % m, h2 % (m - 1) + 1))
    n_b = len(infos)
    weight_sum = sum(b.weight for _, b in infos)
    counter = [b.weight / n_b for _, b in infos]
    weights_used = weight_sum // n_b > 1
    nxt = [0] * n_b
    entry = [-1] * m
    for n in range(m):
        i = n % n_b
        while True:
            b = infos[i][1]
            if weights_used:
                if (n + 1) * b.weight < int(counter[i]):
                    i = (i + 1) % n_b
                    continue
                counter[i] += weight_sum
            offset, skip = perms[i]
            c = (offset + nxt[i] * skip) % m
            while entry[c] >= 0:
                nxt[i] += 1
                c = (offset + nxt[i] * skip) % m
            entry[c] = b.id
            nxt[i] += 1
            break
    return entry
