"""loadBalancerSourceRanges from outside: an allow list (a source in it is served, one outside dropped), a deny list by
annotation (the reverse), the drop counted under its reason, and in-cluster access unaffected.

Pure: an observation in, the list of problems out (empty = the property holds).

What the source-ranges suite observes, in one family: for each LoadBalancer Service with loadBalancerSourceRanges (an
allow list, or a deny list by annotation), an HTTP request from the runner to its VIP through one node and the drop
reasons that rose on that node's agent meanwhile; and a pod's connection to a VIP whose ranges exclude it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..rules.datapath import DROP_NOT_IN_SRC_RANGE, source_range_allows
from .north_south import OutsideHttp


@dataclass(frozen=True)
class RangeCase:
    service: str
    ranges: tuple[str, ...]
    deny: bool  # service.cilium.io/src-ranges-policy: deny
    request: OutsideHttp
    drops: tuple[str, ...]  # the drop reasons that rose on the node meanwhile, "reason xN (direction, file:line)"
    #: the Service's frontend the request went to: its VIP (LoadBalancer), a node's NodePort, or an externalIPs address
    frontend: str = "LoadBalancer"
    #: whether the ranges are checked on that frontend on this cluster (rules.datapath.source_ranges_checked; None: the
    #: release's behaviour is not known, so the case is recorded, not judged)
    checked: bool | None = True

    @property
    def served(self) -> bool:
        return self.request.http_code == 200


@dataclass(frozen=True)
class SourceRangesObservation:
    family: str
    client: str  # the runner's own address toward the node: the source the ranges are checked against
    via: str  # the node every request was routed through
    cases: tuple[RangeCase, ...]
    inside_service: str  # the Service whose VIP a pod connects to (its ranges exclude every pod)
    inside: str  # that connect()'s verdict
    no_view: str | None = None  # why the runner could not send from outside (then no case was observed)

    def case(self, service: str, frontend: str = "LoadBalancer") -> RangeCase:
        return next(c for c in self.cases if c.service == service and c.frontend == frontend)

    def to_json(self) -> dict[str, Any]:
        """source-ranges.json."""
        return {"family": self.family, "client": self.client, "via": self.via,
                "cases": [{**asdict(c), "ranges": list(c.ranges), "drops": list(c.drops)} for c in self.cases],
                "inside": {"service": self.inside_service, "verdict": self.inside}, "no_view": self.no_view}


def _kind(case: RangeCase) -> str:
    where = "" if case.frontend == "LoadBalancer" else f"{case.frontend} {case.request.target}, "
    return f"{where}{'deny' if case.deny else 'allow'} list {', '.join(case.ranges)}"


def _allowed(case: RangeCase, client: str) -> bool:
    """Whether the request from ``client`` may pass: the ranges decide where they are checked (case.checked)."""
    return source_range_allows(client, list(case.ranges), case.deny) if case.checked else True


def range_problems(case: RangeCase, client: str) -> list[str]:
    """The request from ``client`` is served exactly when the ranges let it through (datapath.source_range_allows:
    SRC_SOURCE_RANGES, SRC_SOURCE_RANGES_DENY) on a frontend where they are checked, and always on one where they are not
    (SRC_SOURCE_RANGES_TYPES: a NodePort without bpf-lb-source-range-all-types)."""
    allowed = _allowed(case, client)
    r = case.request
    if not case.checked and not case.served:
        return [f"{case.service} ({_kind(case)}): the ranges are not checked on a {case.frontend} frontend here, yet {r.target} "
                f"through {r.via} gave {r.answer()}"]
    if allowed and not case.served:
        return [f"{case.service} ({_kind(case)}): {client} may pass, yet {r.target} through {r.via} gave {r.answer()}"]
    if not allowed and case.served:
        return [f"{case.service} ({_kind(case)}): {client} is refused by the ranges, yet {r.target} through {r.via} answered "
                f"{r.answer()}: the source-range check did not apply"]
    return []


def drop_reason_problems(case: RangeCase, client: str) -> list[str]:
    """A request the ranges refuse is dropped, and the node's agent counts it as ``Denied by LB src range check``
    (SRC_DROP_SRC_RANGE); a request they let through counts no such drop."""
    allowed = _allowed(case, client)
    counted = [d for d in case.drops if d.startswith(DROP_NOT_IN_SRC_RANGE + " ")]
    if not allowed and case.served:
        return [f"{case.service} ({_kind(case)}): {client} was served, nothing was dropped"]
    if not allowed and not counted:
        rose = ", ".join(case.drops) or "none"
        return [f"{case.service} ({_kind(case)}): the request from {client} was dropped, but the agent on {case.request.via} "
                f"counted no \"{DROP_NOT_IN_SRC_RANGE}\" drop (drops that rose: {rose})"]
    if allowed and counted:
        return [f"{case.service} ({_kind(case)}): {client} may pass, yet the agent counted {', '.join(counted)}"]
    return []


def inside_problems(verdict: str, service: str) -> list[str]:
    """A pod's connect() to a VIP whose ranges exclude it is served: the field is for traffic from outside
    (SRC_SOURCE_RANGES_INSIDE)."""
    if verdict != "connected":
        return [f"a pod's connection to {service}'s VIP, whose ranges exclude it, got {verdict}: in-cluster access must ignore "
                "loadBalancerSourceRanges"]
    return []
