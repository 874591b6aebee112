"""Backend slots: every agent's BPF LB slots hold exactly the EndpointSlice's ready addresses, and how fast each got there.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..parse.addr import L3n4, parse_l3n4
from ..parse.statedb import MapsDumpEntry


@dataclass(frozen=True)
class SlotView:
    node: str
    service_id: int | None  # the slot-0 entry's RevNAT ID
    backends: tuple[str, ...]  # ip:port of the slots a new connection may pick (1..COUNT), in slot order
    #: ip:port of the slots after COUNT (QCOUNT): terminating backends that only keep their slots
    kept: tuple[str, ...] = ()

    def describe(self) -> str:
        tail = f" (+{len(self.kept)} kept beyond the count: {list(self.kept)})" if self.kept else ""
        return f"{self.node}: {len(self.backends)} slots {list(self.backends)}{tail}"


def _same_frontend(addr: str, fe: L3n4) -> bool:
    got = parse_l3n4(addr)
    return got is not None and got.ip == fe.ip and got.port == fe.port and got.internal == fe.internal and (
        fe.proto is None or got.proto == fe.proto)


def active_slots(node: str, dump: list[MapsDumpEntry], fe: L3n4) -> SlotView:
    """``fe``'s slots in an agent's ``lb/maps-dump``: the master (SLOT=0) entry's COUNT slots are what a new connection
    picks (datapath.SRC_TERMINATING_NEW: ``% svc->count) + 1``); the QCOUNT slots after them hold terminating backends
    kept for existing connections (datapath.SRC_TERMINATING_SLOTS). ``bpf lb list`` prints
    every slot and no count (``cilium-dbg/cmd/bpf_lb_list.go@21d690e1`` dumpSVC: master ``"%s:%d (%d) (%d) [%s] %s"``,
    revNAT, slot, flags), so the count is read here."""
    addr_of = {e.fields.get("ID"): (e.fields.get("ADDR") or "") for e in dump if e.kind == "BE"}
    mine = [e for e in dump if e.kind == "SVC" and _same_frontend(e.fields.get("ADDR", ""), fe)]
    master = next((e for e in mine if e.fields.get("SLOT") == "0"), None)
    if master is None:
        return SlotView(node, None, ())
    count = int(master.fields.get("COUNT") or 0)
    by_slot = sorted((int(e.fields["SLOT"]), e.fields.get("BEID")) for e in mine if e.fields.get("SLOT", "0") != "0")

    def backend(beid: str | None) -> str:
        a = parse_l3n4(addr_of.get(beid, ""))
        return a.host_port() if a is not None else f"backend {beid} not found"

    return SlotView(node, int(master.fields["ID"]), tuple(backend(b) for s, b in by_slot if s <= count),
                    tuple(backend(b) for s, b in by_slot if s > count))


@dataclass(frozen=True)
class ConvergenceTiming:
    """When each new backend was first seen, in seconds since the scale: in the EndpointSlice (ready) and in
    each agent's BPF LB slots, polled every ``resolution`` seconds (so each time is late by at most that)."""

    endpointslice: dict[str, float]
    agents: dict[str, dict[str, float]]
    resolution: float

    def lag(self) -> dict[str, float | None]:
        """Per agent: when it held every new backend, minus when the EndpointSlice did (None: it never did)."""
        if not self.endpointslice:
            return {node: None for node in self.agents}
        es_done = max(self.endpointslice.values())
        out: dict[str, float | None] = {}
        for node, seen in self.agents.items():
            out[node] = round(max(seen.values()) - es_done, 3) if set(self.endpointslice) <= set(seen) else None
        return out

    def slowest(self) -> tuple[str, float | None] | None:
        """The agent that took longest (one that never caught up counts as slowest)."""
        lag = self.lag()
        if not lag:
            return None
        return max(lag.items(), key=lambda kv: float("inf") if kv[1] is None else kv[1])

    def to_json(self) -> dict[str, Any]:
        slowest = self.slowest()
        return {"resolution_seconds": self.resolution, "endpointslice": self.endpointslice, "agents": self.agents,
                "lag_seconds": self.lag(), "slowest": {"node": slowest[0], "lag_seconds": slowest[1]} if slowest else None}


@dataclass(frozen=True)
class Convergence:
    replicas: int
    ready_pods: int
    endpointslice: frozenset[str]
    slots: tuple[SlotView, ...]
    timing: ConvergenceTiming | None = None  # set by Lab.scale_web

    @property
    def converged(self) -> bool:
        return not convergence_problems(self)

    def describe(self) -> str:
        return (f"{self.ready_pods}/{self.replicas} pods Ready, EndpointSlice ready {sorted(self.endpointslice)}; "
                + "; ".join(v.describe() for v in self.slots))


def convergence_problems(c: Convergence) -> list[str]:
    """Every agent's slots hold exactly the EndpointSlice's ready addresses, once each, for the wanted replicas."""
    p: list[str] = []
    if c.ready_pods != c.replicas:
        p.append(f"{c.ready_pods}/{c.replicas} pods Ready")
    if len(c.endpointslice) != c.replicas:
        p.append(f"the EndpointSlice has {len(c.endpointslice)} ready addresses, not {c.replicas}")
    if not c.slots:
        p.append("no agent's slots were read")
    for v in c.slots:
        have = set(v.backends)
        missing, extra = sorted(c.endpointslice - have), sorted(have - c.endpointslice)
        dupes = sorted({b for b in v.backends if v.backends.count(b) > 1})
        if v.service_id is None:
            p.append(f"{v.node}: no slot-0 entry for the service")
        if missing:
            p.append(f"{v.node}: slots lack {missing}")
        if extra:
            p.append(f"{v.node}: slots still hold {extra}, which the EndpointSlice no longer has")
        if dupes:
            p.append(f"{v.node}: {dupes} fill more than one slot")
    return p


@dataclass(frozen=True)
class SlotsListed:
    """web's slots in one family at its first replica count, beside the client agent's service-list entry for the
    frontend (``listed``: None when the agent lists no such ClusterIP service)."""
    convergence: Convergence
    frontend: L3n4
    node: str
    listed: Any  # a parse.Service, or None
    mine: SlotView  # the client agent's slots


def listing_problems(s: SlotsListed) -> list[str]:
    """The agent's service list agrees with its BPF slots: the same backends, and slot 0's RevNAT ID is the service's ID."""
    if s.listed is None:
        return [f"the agent on {s.node} lists no ClusterIP service {s.frontend}"]
    out = []
    listed = sorted(b.address.host_port() for b in s.listed.backends)
    if listed != sorted(s.mine.backends):
        out.append(f"service list {listed} vs the BPF slots {sorted(s.mine.backends)}")
    if s.mine.service_id != s.listed.id:
        out.append(f"slot 0 carries RevNAT {s.mine.service_id}, service list ID {s.listed.id}")
    return out


def new_backend_problems(before: "frozenset[str] | set[str]", after: SlotView, added: int) -> list[str]:
    """A scale-up by ``added`` replicas shows exactly that many new backends in the client agent's slots."""
    new = sorted(set(after.backends) - set(before))
    return [] if len(new) == added else [f"expected {added} new backends, got {new}"]
