"""Kernel facts as data (clusters/kernels.yaml): which KPR feature needs which kernel, and each Cilium minor's floor.

A suite asks :func:`expects` whether a node's kernel has a feature; the answer comes from the table, with the
source next to each entry. What the agent reports (attach mode, socket-LB coverage) is read from the agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import yaml

from ..core.versions import Version, kernel_tuple


@dataclass(frozen=True)
class KernelFloor:
    cilium: tuple[int, int]
    kernel: str
    source: str


def _minor(text: str) -> tuple[int, int]:
    major, minor = str(text).split(".")[:2]
    return int(major), int(minor)


def load_floors(path: Path) -> list[KernelFloor]:
    data = yaml.safe_load(path.read_text()) or {}
    return [KernelFloor(_minor(f["cilium"]), str(f["kernel"]), str(f["source"])) for f in data.get("floors", [])]


def floor_for(floors: Sequence[KernelFloor], minor: tuple[int, int]) -> KernelFloor | None:
    """The floor of ``minor``: its own entry, else the newest older one."""
    older = [f for f in floors if f.cilium <= minor]
    return max(older, key=lambda f: f.cilium) if older else None


def floor_problems(floors: Sequence[KernelFloor], minor: tuple[int, int], node_kernels: dict[str, str],
                   report_unreadable: bool = False) -> list[str]:
    """Nodes whose kernel is below Cilium ``minor``'s floor, one line each naming the node (and, with
    ``report_unreadable``, the nodes whose kernel is not a version)."""
    floor = floor_for(floors, minor)
    if floor is None:
        return []
    want = kernel_tuple(floor.kernel) or ()
    out = []
    for node, kernel in sorted(node_kernels.items()):
        have = kernel_tuple(kernel)
        if have is None:
            if report_unreadable:
                out.append(f"node {node} reports kernel {kernel!r}, which is not a version: cannot check Cilium {minor[0]}.{minor[1]}'s "
                           f"floor {floor.kernel}")
        elif have < want:
            out.append(f"node {node} runs kernel {kernel}, below Cilium {minor[0]}.{minor[1]}'s floor {floor.kernel} ({floor.source})")
    return out


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
        v = Version.parse(cilium_version)
        return floor_problems(self.floors, (v.major, v.minor), node_kernels)
