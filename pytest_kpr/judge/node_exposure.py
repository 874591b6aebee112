"""Selective node exposure: a Service annotated ``service.cilium.io/node-selector`` (a label selector) or
``service.cilium.io/node`` (a label value) is installed only by the agents on the nodes it selects
(rules.datapath.service_exposed_on), while a Service without either is installed everywhere.

Pure: an observation in, the list of problems out (empty = the property holds)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ExposureObservation:
    """Which agents list a frontend of an annotated Service, against the nodes the rule says it is exposed on, beside a
    control without the annotations."""

    service: str  # ns/name
    annotations: dict[str, str]  # its service.cilium.io/node(-selector)
    exposed_on: tuple[str, ...]  # the nodes the rule installs it on
    listed: dict[str, int]  # node -> how many frontends of it the agent lists
    control: str  # ns/name of the control
    control_listed: dict[str, int]  # node -> how many frontends of the control the agent lists

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "exposed_on": list(self.exposed_on)}


def exposure_problems(o: ExposureObservation) -> list[str]:
    """Every node the Service is exposed on lists it, no other node does; the control must be listed everywhere (else the
    agents' tables were not read in time: a problem, never a pass)."""
    unread = sorted(n for n, count in o.control_listed.items() if count == 0)
    if not o.control_listed or unread:
        return [f"the control Service {o.control} (no exposure annotation) is not listed on {', '.join(unread) or 'any agent'}, so the "
                f"agents' frontends tell nothing about {o.service}"]
    shown = ", ".join(f"{k}: {v}" for k, v in sorted(o.annotations.items()))
    missing = sorted(n for n in o.exposed_on if not o.listed.get(n))
    extra = sorted(n for n, count in o.listed.items() if count and n not in o.exposed_on)
    out = []
    if missing:
        many = len(missing) > 1
        out.append(f"{o.service} ({shown}) is exposed on {', '.join(missing)}, yet the agent{'s' if many else ''} there "
                   f"list{'' if many else 's'} no frontend of it")
    if extra:
        out.append(f"{o.service} ({shown}) selects {', '.join(o.exposed_on) or 'no node'}, yet {', '.join(extra)} list"
                   f"{'' if len(extra) > 1 else 's'} its frontends: the agent installed a Service not exposed on its node")
    return out
