"""Kernel facts as data (clusters/kernels.yaml): which KPR feature needs which kernel, and each Cilium minor's floor.

A suite asks :func:`expects` whether a node's kernel has a feature; the answer comes from the table, with the
source next to each entry. What the agent reports (attach mode, socket-LB coverage) is read from the agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from .upgrade import KernelFloor, floor_for, kernel_tuple, load_floors


@dataclass(frozen=True)
class KernelFeature:
    name: str
    kernel: str
    what: str
    source: str

    def on(self, kernel: str) -> bool | None:
        """Whether ``kernel`` (as ``uname -r`` prints it) has this feature; None when it is not a version."""
        have, want = kernel_tuple(kernel), kernel_tuple(self.kernel)
        return None if have is None or want is None else have >= want


@dataclass(frozen=True)
class KernelTable:
    features: dict[str, KernelFeature]
    floors: list[KernelFloor]

    @classmethod
    def load(cls, path: Path) -> "KernelTable":
        data = yaml.safe_load(path.read_text()) or {}
        feats = {name: KernelFeature(name, str(f["kernel"]), str(f["what"]), str(f["source"])) for name, f in (data.get("features") or {}).items()}
        return cls(feats, load_floors(path))

    def expects(self, feature: str, kernel: str) -> bool | None:
        return self.features[feature].on(kernel)

    def floor_problems(self, cilium_version: str, node_kernels: dict[str, str]) -> list[str]:
        """Nodes whose kernel is below the Cilium version's floor, one line each naming the node."""
        from .versions import Version

        v = Version.parse(cilium_version)
        floor = floor_for(self.floors, (v.major, v.minor))
        if floor is None:
            return []
        want = kernel_tuple(floor.kernel) or ()
        out = []
        for node, kernel in sorted(node_kernels.items()):
            have = kernel_tuple(kernel)
            if have is not None and have < want:
                out.append(f"node {node} runs kernel {kernel}, below Cilium {v.major}.{v.minor}'s floor {floor.kernel} ({floor.source})")
        return out
