"""Selectorless Services: a Service without a selector takes its backends from the EndpointSlices that name it.

Pure: an observation in, the list of problems out (empty = the property holds), worded so that a failure names the
property and shows what was seen."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class SelectorlessObservation:
    """Each agent's backends for the selectorless Service's frontend, beside the address the hand-written slice holds."""
    family: str
    service: str  # namespace/name
    slice_address: str  # the backend address:port the hand-written EndpointSlice names
    listed: Mapping[str, tuple[str, ...] | None]  # node -> the frontend's backends on its agent (None: no frontend)

    def to_json(self) -> dict[str, Any]:
        """selectorless.json."""
        return {**asdict(self), "listed": {n: list(b) if b is not None else None for n, b in self.listed.items()}}


def selectorless_problems(seen: SelectorlessObservation) -> list[str]:
    """Every agent lists the Service's frontend with exactly the slice's backend (the agent keys an EndpointSlice to its
    Service by its kubernetes.io/service-name label, whoever wrote it)."""
    out = []
    for node, backends in sorted(seen.listed.items()):
        if backends is None:
            out.append(f"{node} lists no frontend for {seen.service}, a Service without a selector")
        elif tuple(backends) != (seen.slice_address,):
            out.append(f"{node} lists {list(backends) or 'no backend'} for {seen.service}; its EndpointSlice names {seen.slice_address}")
    return out
