"""What the trafficDistribution suite observes, in one family: a pod's connections to Services with a
trafficDistribution, each connection's backend (the kernel socket's peer), and where each backend runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Placed:
    """A backend: its pod, node and zone."""
    pod: str
    node: str
    zone: str | None


@dataclass(frozen=True)
class Reached:
    """``connections`` from the client pod to ``service`` (trafficDistribution ``distribution``): each one's backend
    address (None: not connected), and the Service's backends by address."""
    service: str
    distribution: str
    backends: Mapping[str, Placed]
    peers: tuple[str | None, ...]

    def to_json(self) -> dict[str, Any]:
        return {"service": self.service, "distribution": self.distribution,
                "backends": {a: {"pod": p.pod, "node": p.node, "zone": p.zone} for a, p in self.backends.items()},
                "peers": list(self.peers)}


@dataclass(frozen=True)
class TopologyObservation:
    family: str
    client_node: str
    client_zone: str | None
    same_node: Reached  # PreferSameNode, a backend on the client's node and one elsewhere
    away: Reached  # PreferSameNode, backends on another node only
    close: Reached  # PreferClose, a backend in the client's zone and one in another

    def to_json(self) -> dict[str, Any]:
        """traffic-distribution.json."""
        return {"family": self.family, "client": {"node": self.client_node, "zone": self.client_zone},
                "same_node": self.same_node.to_json(), "away": self.away.to_json(), "close": self.close.to_json()}
