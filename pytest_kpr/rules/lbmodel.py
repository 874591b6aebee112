"""A model of Cilium's load-balancer frontend ownership (the new control plane, 1.18+).

What it models (``pkg/loadbalancer``, read at the commits :data:`SRC_FRONTEND_CONFLICT` names):

- **Writer.** ``UpsertServiceAndFrontends`` validates the whole frontend set first: a frontend owned by
  another service rejects the upsert whole (``ErrFrontendConflict``, "frontend already owned by another
  service: <addr> is owned by <ns/name>") before anything is written, so the claimant keeps its previous
  frontends and gains none. ``DeleteServiceAndFrontends`` removes the owner's frontends and re-queues
  nobody.
- **Reflector.** Upsert errors only feed its health (degraded) and a log line; events are acked at once,
  never retried. A rejected claimant is processed again only on its own next event.
- **Coalescing.** Events are buffered (``stream.Buffer``: ``batch_size`` events or ``window_ms``) into an
  insert-ordered map keyed by service: a later event for a service replaces its value but keeps its
  first-arrival position. So a claim arriving before a release in the same batch is processed first,
  rejected, and not retried.
- **Reconciler.** Frontends written in a batch are ``pending`` until the batch is reconciled, then
  ``done``; the BPF service ID is valid only then.

Variants: ``cilium-1.18`` (the above) and ``requeue`` (what a fixed Cilium would do: when frontends are
released, rejected claimants are processed again).
"""

from __future__ import annotations

import enum
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..core import inputs

SRC_FRONTEND_CONFLICT = ("cilium/cilium pkg/loadbalancer/writer/writer.go@da6d7b49 validateFrontends: `if found && "
                         "!fe.ServiceName.Equal(params.ServiceName) {` returns `fmt.Errorf(\"%w: %s is owned by %s\", "
                         "loadbalancer.ErrFrontendConflict, ...)`; UpsertServiceAndFrontends returns it before `w.svcs.Insert`, so "
                         "the claimant's upsert is rejected whole and nothing re-queues it")

_ADDR = re.compile(r"(?:\[[0-9a-fA-F:.]+\]|[0-9.]+):\d{1,5}/(?:TCP|UDP|SCTP|ANY)")


class Variant(str, enum.Enum):
    CILIUM_1_18 = "cilium-1.18"
    REQUEUE = "requeue"

    def __str__(self) -> str:
        return self.value


class Op(str, enum.Enum):
    UPSERT = "upsert"
    DELETE = "delete"


def conflict_error(addr: str, owner: str) -> str:
    return f"frontend already owned by another service: {addr} is owned by {owner}"


@dataclass(frozen=True)
class Event:
    at_ms: float
    op: Op
    service: str  # ns/name
    frontends: tuple[str, ...] = ()  # IP:PORT/PROTO

    @classmethod
    def from_dict(cls, d: dict[str, Any], index: int = 0) -> "Event":
        where = f"event {index}"
        unknown = sorted(set(map(str, d)) - _EVENT_KEYS)
        if unknown:
            raise ModelError(f"{where}: unknown key {unknown[0]!r} (an event has {', '.join(sorted(_EVENT_KEYS))})")
        try:
            op = Op(str(d["op"]))
        except (KeyError, ValueError):
            raise ModelError(f"{where}: op must be upsert or delete, got {inputs.show(d.get('op'))}") from None
        service = d.get("service", "")
        if not isinstance(service, str) or not re.fullmatch(r"[a-z0-9][-a-z0-9.]*/[a-z0-9][-a-z0-9.]*", service):
            raise ModelError(f"{where}: service must be ns/name, got {inputs.show(service)}")
        fes = d.get("frontends")
        if fes is None:
            fes = []
        if not isinstance(fes, list):
            raise ModelError(f"{where}: frontends must be a list of IP:PORT/PROTO, got {type(fes).__name__}")
        if op is Op.DELETE and fes:
            raise ModelError(f"{where}: a delete takes no frontends")
        canonical = tuple(frontend(fe, where) for fe in fes)
        try:
            at = inputs.number(d.get("at_ms", 0), f"{where}: at_ms", minimum=0)
        except inputs.BadInput as e:
            raise ModelError(str(e)) from None
        return cls(at, op, service, canonical)


_EVENT_KEYS = {"at_ms", "op", "service", "frontends"}
_FILE_KEYS = {"variant", "window_ms", "batch_size", "events"}


def frontend(text: Any, where: str) -> str:
    """``IP:PORT/PROTO`` with a real address ([IPv6] in brackets) and a port 1..65535, in one canonical spelling
    (``:00080`` is ``:80``, ``[2001:db8:0::1]`` is ``[2001:db8::1]``), so two spellings of one frontend conflict."""
    if not isinstance(text, str) or not _ADDR.fullmatch(text):
        raise ModelError(f"{where}: frontend {inputs.show(text)} is not IP:PORT/PROTO (PROTO: TCP, UDP, SCTP or ANY)")
    addr, _, rest = text.rpartition(":")
    try:
        ip = ipaddress.ip_address(addr[1:-1] if addr.startswith("[") else addr)
        if (ip.version == 6) != addr.startswith("["):
            raise ValueError
        port_text, _, proto = rest.partition("/")
        port = inputs.port(str(int(port_text)))
    except (ValueError, inputs.BadInput):
        raise ModelError(f"{where}: frontend {inputs.show(text)} needs an IPv4 address or [IPv6] and a port 1-65535") from None
    return f"[{ip}]:{port}/{proto}" if ip.version == 6 else f"{ip}:{port}/{proto}"


class ModelError(ValueError):
    """A malformed event list."""


@dataclass
class FrontendState:
    owner: str
    status: str = "pending"  # pending | done


@dataclass
class Rejection:
    service: str
    frontend: str
    error: str


@dataclass
class LbModel:
    variant: Variant = Variant.CILIUM_1_18
    window_ms: float = 500.0
    batch_size: int = 500
    #: the service table: name -> frontends as last written (a rejected upsert does not change it)
    services: dict[str, tuple[str, ...]] = field(default_factory=dict)
    frontends: dict[str, FrontendState] = field(default_factory=dict)
    #: service -> its last rejected upsert (desired frontends) and the error
    rejected: dict[str, tuple[tuple[str, ...], Rejection]] = field(default_factory=dict)
    pending: list[Event] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    # -- feeding -------------------------------------------------------------------------------------

    def push(self, event: Event) -> None:
        self.pending.append(event)

    def advance(self, now_ms: float = float("inf")) -> None:
        """Process every batch that has closed by ``now_ms`` (all of them by default)."""
        self.pending.sort(key=lambda e: e.at_ms)
        i, n = 0, len(self.pending)  # an index, not pop(0): linear in the number of events
        while i < n:
            start = self.pending[i].at_ms
            j = i
            while j < n and j - i < self.batch_size and self.pending[j].at_ms < start + self.window_ms:
                j += 1
            batch = self.pending[i:j]
            closes = start + self.window_ms if len(batch) < self.batch_size else batch[-1].at_ms
            if closes > now_ms:
                break
            self._process(batch)
            i = j
        del self.pending[:i]

    # -- the reflector and writer --------------------------------------------------------------------

    def _process(self, batch: list[Event]) -> None:
        ordered: dict[str, Event] = {}
        for ev in batch:  # insert-ordered map: an update keeps the first-arrival position
            ordered[ev.service] = ev
        for ev in ordered.values():
            if ev.op is Op.UPSERT:
                self._upsert(ev.service, ev.frontends)
            else:
                self._delete(ev.service)
        for fe in self.frontends.values():  # the reconciler programs the batch's writes
            fe.status = "done"

    def _upsert(self, service: str, wanted: tuple[str, ...]) -> bool:
        for addr in wanted:
            fe = self.frontends.get(addr)
            if fe is not None and fe.owner != service:
                rej = Rejection(service, addr, conflict_error(addr, fe.owner))
                self.rejected[service] = (wanted, rej)
                self.log.append(f"upsert {service} {list(wanted)}: rejected ({rej.error})")
                return False
        old = set(self.services.get(service, ()))
        self.services[service] = tuple(wanted)
        for addr in old - set(wanted):
            del self.frontends[addr]
        for addr in wanted:
            if addr not in self.frontends:
                self.frontends[addr] = FrontendState(service)
        self.rejected.pop(service, None)
        self.log.append(f"upsert {service} {list(wanted)}: ok")
        if old - set(wanted):
            self._released()
        return True

    def _delete(self, service: str) -> None:
        released = [a for a in self.services.pop(service, ()) if self.frontends.get(a, FrontendState("")).owner == service]
        for addr in released:
            del self.frontends[addr]
        self.rejected.pop(service, None)
        self.log.append(f"delete {service}: released {released}")
        if released:
            self._released()

    def _released(self) -> None:
        if self.variant is not Variant.REQUEUE:
            return  # Cilium 1.18: nothing re-queues a rejected claimant
        progress = True
        while progress:
            progress = False
            for service, (wanted, _) in list(self.rejected.items()):
                self.log.append(f"requeue {service}")
                if self._upsert(service, wanted):
                    progress = True

    # -- views ---------------------------------------------------------------------------------------

    @property
    def degraded(self) -> bool:
        return bool(self.rejected)

    def owner(self, addr: str) -> str | None:
        fe = self.frontends.get(addr)
        return fe.owner if fe else None

    def state(self) -> dict[str, Any]:
        """The final state as ``kpr lbmodel replay`` prints it."""
        return {
            "frontends": {a: {"owner": f.owner, "status": f.status} for a, f in sorted(self.frontends.items())},
            "rejected": [{"service": r.service, "frontend": r.frontend, "error": r.error} for _, (_, r) in sorted(self.rejected.items())],
            "degraded": self.degraded,
        }


def replay(events: Iterable[Event], variant: Variant = Variant.CILIUM_1_18, window_ms: float = 500.0, batch_size: int = 500) -> LbModel:
    m = LbModel(variant=variant, window_ms=window_ms, batch_size=batch_size)
    for e in events:
        m.push(e)
    m.advance()
    return m


def load_scenario(data: Any) -> tuple[list[Event], Variant, float, int]:
    """A replay file: ``{variant, window_ms, batch_size, events: [...]}`` or a bare event list.

    Strict, so that a typo is an error and not a silently different scenario: unknown keys, numbers
    that are not finite, frontends that are not real addresses and events out of time order
    (``at_ms`` must not decrease; equal times keep the file's order) are rejected.
    """
    if isinstance(data, list):
        data = {"events": data}
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise ModelError("expected a mapping with an 'events' list (or a list of events)")
    unknown = sorted(set(map(str, data)) - _FILE_KEYS)
    if unknown:
        raise ModelError(f"unknown key {unknown[0]!r} (a replay file has {', '.join(sorted(_FILE_KEYS))})")
    try:
        raw_variant = data.get("variant", Variant.CILIUM_1_18.value)
        if not isinstance(raw_variant, str):
            raise ValueError
        variant = Variant(raw_variant)
    except ValueError:
        raise ModelError(f"variant must be one of {', '.join(v.value for v in Variant)}") from None
    try:
        window = inputs.number(data.get("window_ms", 500), "window_ms", positive=True)
        size = inputs.number(data.get("batch_size", 500), "batch_size", positive=True)
    except inputs.BadInput as e:
        raise ModelError(str(e)) from None
    if size != int(size):
        raise ModelError(f"batch_size must be a whole number, got {inputs.show(data.get('batch_size'))}")
    events: list[Event] = []
    for i, d in enumerate(data["events"]):
        if not isinstance(d, dict):
            raise ModelError(f"event {i}: expected a mapping")
        ev = Event.from_dict(d, i)
        if events and ev.at_ms < events[-1].at_ms:
            raise ModelError(f"event {i}: at_ms {ev.at_ms:g} is before event {i - 1}'s {events[-1].at_ms:g}; "
                             "events must be in time order")
        events.append(ev)
    return events, variant, window, int(size)
