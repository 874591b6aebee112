"""Starting backends: an endpoint that is neither ready, serving nor terminating (a pod still starting) takes no slot.

Pure: an observation in, the list of problems out (empty = the property holds), worded so that a failure names the
property and shows what was seen."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class StartingObservation:
    """Each agent's slots of the Service's ClusterIP frontend, beside the two addresses its EndpointSlice names."""
    family: str
    service: str  # namespace/name
    ready: str  # ip:port of the endpoint the slice marks ready
    starting: str  # ip:port of the endpoint the slice marks ready, serving and terminating false
    #: node -> (the slots a new connection picks, the slots kept after the count); None: no frontend on that agent
    slots: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]] | None]

    def to_json(self) -> dict[str, Any]:
        """starting.json."""
        return {**asdict(self), "slots": {n: None if s is None else {"picked": list(s[0]), "kept": list(s[1])}
                                          for n, s in self.slots.items()}}


def starting_problems(seen: StartingObservation) -> list[str]:
    """Every agent's frontend picks exactly the ready endpoint, and gives the starting one no slot at all: it is a
    maintenance backend, kept out of the services map (rules.datapath.SRC_STARTING_NO_SLOT)."""
    out = []
    for node, slots in sorted(seen.slots.items()):
        if slots is None:
            out.append(f"{node} has no slots for {seen.service}'s ClusterIP")
            continue
        picked, kept = slots
        if seen.starting in picked + kept:
            out.append(f"{node} gives the starting endpoint {seen.starting} (ready, serving, terminating false) a slot of "
                       f"{seen.service}: picked {list(picked)}, kept {list(kept)}")
        elif tuple(picked) != (seen.ready,):
            out.append(f"{node} picks {list(picked) or 'no backend'} for {seen.service}; its ready endpoint is {seen.ready}")
    return out
