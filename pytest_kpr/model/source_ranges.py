"""What the source-ranges suite observes, in one family: for each LoadBalancer Service with loadBalancerSourceRanges (an
allow list, or a deny list by annotation), an HTTP request from the runner to its VIP through one node and the drop
reasons that rose on that node's agent meanwhile; and a pod's connection to a VIP whose ranges exclude it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

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
