"""What the Maglev suite observes, per family: each agent's hash seed and lookup table for a NodePort frontend,
whether the ClusterIP has a table, where flows from outside went through two nodes, and where they went after a
backend was deleted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class MaglevRemap:
    removed: str  # the deleted backend pod
    through: str  # the node the flows were sent through after it
    before: Mapping[int, str | None]  # source port -> the pod that served it before (through the first node)
    after: Mapping[int, str | None]  # and after the deletion

    def to_json(self) -> dict[str, Any]:
        return {"removed": self.removed, "through": self.through, "before": {str(p): b for p, b in self.before.items()},
                "after": {str(p): b for p, b in self.after.items()}}


@dataclass(frozen=True)
class MaglevObservation:
    family: str
    node_port: int
    backends: tuple[str, ...]  # the EndpointSlice's ready addresses of the family
    pods: tuple[str, ...]  # the backend pods, all of them (before any deletion)
    seeds: Mapping[str, str | None]  # node -> its agent's configured seed (None: the default)
    tables: Mapping[str, Any]  # node -> its NodePort frontend's Maglev table (judge.maglev.maglev_table; None: none)
    cluster_ip_tables: Mapping[str, bool]  # node -> whether the ClusterIP frontend has a table
    flows: Mapping[str, Mapping[int, str | None]] | None = None  # node -> source port -> serving pod (None: no outside view)
    remap: MaglevRemap | None = None

    def to_json(self) -> dict[str, Any]:
        """maglev.json."""
        return {"family": self.family, "node_port": self.node_port, "backends": list(self.backends), "seeds": dict(self.seeds),
                "tables": dict(self.tables), "cluster_ip_tables": dict(self.cluster_ip_tables),
                "flows": None if self.flows is None else {n: {str(p): b for p, b in f.items()} for n, f in self.flows.items()},
                "remap": None if self.remap is None else self.remap.to_json()}
