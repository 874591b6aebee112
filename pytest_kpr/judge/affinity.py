"""Session affinity: ClientIP sticks to one backend, its timeout expires, and without it the picks spread.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen.

What the affinity suite observes: the backend each connection from one client reached, per Service of one family."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class OutsideAffinity:
    """Requests from the runner (outside the cluster) to one node's NodePort, per Service: the backend pod that served
    each (from its log; None: not served), to the sessionAffinity ClientIP Service and to the one without affinity."""
    node: str  # the node whose NodePort every request went to
    source: str  # the runner's address toward it: what that node's per-packet affinity is keyed by
    backends: tuple[str, ...]  # the backend pods
    sticky: tuple[str | None, ...]
    plain: tuple[str | None, ...]
    #: the node's per-packet affinity map after the requests (``bpftool map dump``: SRC_AFFINITY_MAP), each entry
    #: (client, rev_nat_id, netns_cookie, backend_id); None: not read (why: ``map_unread``)
    map_entries: tuple[tuple[str, int, bool, int], ...] | None = None
    map_unread: str | None = None
    #: the sticky Service's NodePort frontend on that node (its rev NAT ID), and each backend pod's ID, from lb/maps-dump
    rev_nat_id: int | None = None
    backend_ids: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "source": self.source, "backends": list(self.backends), "requests": len(self.sticky),
                "sticky": list(self.sticky), "plain": list(self.plain),
                "affinity_map": None if self.map_entries is None else [
                    {"client": c, "rev_nat_id": r, "netns_cookie": n, "backend_id": b} for c, r, n, b in self.map_entries],
                "affinity_map_unread": self.map_unread, "rev_nat_id": self.rev_nat_id, "backend_ids": dict(self.backend_ids)}


@dataclass(frozen=True)
class AffinityObservation:
    family: str
    backends: tuple[str, ...]  # the Services' ready backends (address:port)
    #: the backend each connection reached (the kernel socket's peer; None: no connection or no backend shown), to the
    #: sessionAffinity ClientIP Service, to the one without affinity, and to the one with a short timeout (idle_s apart)
    sticky: tuple[str | None, ...]
    plain: tuple[str | None, ...]
    timeout_peers: tuple[str | None, ...]
    timeout_s: int  # the short Service's sessionAffinityConfig timeoutSeconds
    idle_s: float  # seconds between its connections
    #: the per-packet plane from outside (None: the runner has no view of the nodes)
    outside: OutsideAffinity | None = None

    def to_json(self) -> dict[str, Any]:
        """affinity.json's observation (the suite adds the problems)."""
        return {"family": self.family, "backends": list(self.backends), "connections": len(self.sticky), "sticky": list(self.sticky),
                "plain": list(self.plain), "timeout": {"timeout_s": self.timeout_s, "idle_s": self.idle_s, "peers": list(self.timeout_peers)},
                "outside": self.outside.to_json() if self.outside else None}


#: connections the affinity suite makes per Service, and the backends behind it
AFFINITY_CONNECTIONS, AFFINITY_BACKENDS = 20, 4


#: the affinity-timeout round: Service timeoutSeconds, seconds between connections (past the timeout, with the seconds
#: granularity of bpf_mono_now()), and connections
AFFINITY_TIMEOUT_S, AFFINITY_IDLE_S, AFFINITY_TIMEOUT_ROUNDS = 1, 2.5, 10

#: requests the runner sends from outside to each NodePort Service (4 backends: all 12 on one backend by chance, 2.4e-07)
OUTSIDE_REQUESTS = 12


def _unanswered(peers: "Sequence[str | None]") -> list[str]:
    missing = [i for i, p in enumerate(peers) if p is None]
    return [f"{len(missing)} of {len(peers)} connections did not connect or show a backend"] if missing else []


def _strangers(peers: "Sequence[str | None]", backends: "Sequence[str]", noun: str = "connections") -> list[str]:
    strangers = sorted({p for p in peers if p is not None and p not in backends})
    return [f"{noun} reached {strangers}, which are not the Service's backends {sorted(backends)}"] if strangers else []


def _stays(peers: "Sequence[str | None]", backends: "Sequence[str]", what: str, noun: str = "connections") -> list[str]:
    out = _unanswered(peers) if noun == "connections" else _unserved(peers)
    out += _strangers(peers, backends, noun)
    hit = sorted({p for p in peers if p})
    if len(hit) > 1:
        out.append(f"{len(peers)} {what} reached {len(hit)} backends {hit} despite sessionAffinity ClientIP")
    return out


def _spreads(peers: "Sequence[str | None]", backends: "Sequence[str]", what: str, noun: str = "connections") -> list[str]:
    out = _unanswered(peers) if noun == "connections" else _unserved(peers)
    out += _strangers(peers, backends, noun)
    spread = sorted({p for p in peers if p})
    if len(backends) > 1 and len(peers) >= 2 and len(spread) == 1:
        n, k = len(backends), len(peers)
        out.append(f"all {k} {what} without affinity reached {spread[0]} of {n} backends (chance: {n * (1 / n) ** k:.1e})")
    return out


def _unserved(peers: "Sequence[str | None]") -> list[str]:
    missing = [i for i, p in enumerate(peers) if p is None]
    return [f"{len(missing)} of {len(peers)} requests were not served by a backend (no backend logged them)"] if missing else []


def sticky_problems(a: AffinityObservation) -> list[str]:
    """Every connection from one client to a sessionAffinity=ClientIP Service reached one backend."""
    return _stays(a.sticky, a.backends, "connections from one client")


def spread_problems(a: AffinityObservation) -> list[str]:
    """Without affinity, the connections reached more than one backend. Bound: with a uniformly random pick among N
    backends, all k connections reach one backend with probability N * (1/N)^k (4 backends, 20 connections: 3.6e-12),
    so a single backend is not chance."""
    return _spreads(a.plain, a.backends, "connections")


def outside_sticky_problems(o: OutsideAffinity) -> list[str]:
    """Every request from outside (one client address) to one node's NodePort of a sessionAffinity=ClientIP Service
    reached one backend: the node keys its affinity by the client's address (datapath.SRC_AFFINITY_OUTSIDE)."""
    return _stays(o.sticky, o.backends, f"requests from outside ({o.source}) to {o.node}'s NodePort", noun="requests")


def outside_spread_problems(o: OutsideAffinity) -> list[str]:
    """Without affinity the requests from outside spread over the backends (the bound of :func:`spread_problems`): a
    single backend for all of them means the sticky test's single backend proves nothing."""
    return _spreads(o.plain, o.backends, f"requests from outside to {o.node}'s NodePort", noun="requests")


def timeout_problems(a: AffinityObservation) -> list[str]:
    """With sessionAffinity timeoutSeconds shorter than the pause between connections, every connection is a new pick
    (bpf/lib/lb.h ``__lb4_affinity_backend_id``: the entry expires at last_used + timeout). If every one of k
    connections still reached the first one's backend, the timeout was not honoured: under uniform picks among N
    backends that happens with probability (1/N)^(k-1) (4 backends, 10 connections: 3.8e-06)."""
    peers = a.timeout_peers
    out = _unanswered(peers)
    hit = sorted({p for p in peers if p})
    if len(a.backends) > 1 and len(peers) >= 2 and not out and len(hit) == 1:
        n, k = len(a.backends), len(peers)
        out.append(f"all {k} connections, {a.idle_s:g} s apart (past the {a.timeout_s} s timeout), reached {hit[0]}: the affinity never "
                   f"expired (chance if it does: {(1 / n) ** (k - 1):.1e})")
    return out


def affinity_map_problems(o: OutsideAffinity) -> list[str]:
    """The node the requests went to holds, in its per-packet affinity map, an entry keyed by the client's address and
    the sticky Service's NodePort frontend (its rev NAT ID, in network byte order: datapath.SRC_REV_NAT_ORDER), naming the
    backend that served every request (datapath.SRC_AFFINITY_MAP: lb4_local writes it with ``lb4_update_affinity_by_addr``)."""
    if o.map_entries is None:
        return [f"the affinity map of {o.node} was not read: {o.map_unread or 'no reason given'}"]
    served = {s for s in o.sticky if s}
    if len(served) != 1 or o.rev_nat_id is None:
        return [f"no single backend served the sticky requests ({', '.join(sorted(served)) or 'none'}) or the frontend's rev NAT ID is "
                "unknown: nothing to look for"]
    pod = served.pop()
    want = o.backend_ids.get(pod)
    mine = [e for e in o.map_entries if e[0] == o.source and e[1] == o.rev_nat_id and not e[2]]
    shown = ", ".join(f"{c} rev_nat {r} backend {b}" for c, r, _, b in o.map_entries[:5]) or "none"
    if not mine:
        swapped = int.from_bytes(o.rev_nat_id.to_bytes(2, "big"), "little")
        hint = (f"; the client's entry carries rev NAT ID {swapped}, the frontend's ID with its two bytes swapped: writer and reader "
                "disagree on the byte order (Cilium keeps it in network order)" if swapped != o.rev_nat_id and any(
                    e[0] == o.source and e[1] == swapped and not e[2] for e in o.map_entries) else "")
        return [f"{o.node}'s affinity map holds no entry for {o.source} and the NodePort frontend (rev NAT ID {o.rev_nat_id}) after the "
                f"requests (entries: {shown}){hint}"]
    if want is not None and all(e[3] != want for e in mine):
        return [f"{o.node}'s affinity entry for {o.source} names backend {mine[0][3]}, but {pod} (backend {want}) served every request"]
    return []
