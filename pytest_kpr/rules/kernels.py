"""Kernel facts as data (clusters/kernels.yaml): which KPR feature needs which kernel, and each Cilium minor's floor.

A suite asks :func:`expects` whether a node's kernel has a feature; the answer comes from the table, with the
source next to each entry. What the agent reports (attach mode, socket-LB coverage) is read from the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence


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
    from ..core import yamlfile as y

    data = y.mapping(y.load(path, "the kernel table"), str(path))
    out = []
    for i, f in enumerate(y.sequence(data.get("floors"), f"{path}: floors")):
        f = y.mapping(f, f"{path}: floors[{i}]")
        out.append(KernelFloor(_minor(y.version(f.get("cilium"), f"{path}: floors[{i}].cilium")),
                               _kernel(f.get("kernel"), f"{path}: floors[{i}].kernel"), y.text(f.get("source"), f"{path}: floors[{i}].source")))
    return out


def _kernel(value: object, where: str) -> str:
    """A kernel version from the table: a quoted "5.10" (YAML reads an unquoted 5.10 as the number 5.1)."""
    from ..core import yamlfile as y

    text = y.version(value, where)
    if kernel_tuple(text) is None:
        raise y.YamlFileError(f"{where}: {value!r} is not a kernel version")
    return text


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
class ProfileFloor:
    """A cluster profile's own kernel floor, above Cilium's (clusters/kernels.yaml ``profile_floors``)."""
    profile: str
    kernel: str
    source: str

    def problems(self, node_kernels: dict[str, str]) -> list[str]:
        """The nodes below it, one line each naming the node, the profile and the source."""
        want = kernel_tuple(self.kernel) or ()
        return [f"node {node} runs kernel {kernel}, below the {self.profile} profile's floor {self.kernel} ({self.source})"
                for node, kernel in sorted(node_kernels.items()) if (have := kernel_tuple(kernel)) is not None and have < want]


@dataclass(frozen=True)
class KernelTable:
    features: dict[str, KernelFeature]
    floors: list[KernelFloor]
    profile_floors: dict[str, ProfileFloor] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> "KernelTable":
        from ..core import yamlfile as y

        data = y.mapping(y.load(path, "the kernel table"), str(path))
        feats = {}
        for name, f in y.mapping(data.get("features"), f"{path}: features").items():
            f = y.mapping(f, f"{path}: features.{name}")
            feats[str(name)] = KernelFeature(str(name), _kernel(f.get("kernel"), f"{path}: features.{name}.kernel"),
                                             y.text(f.get("what"), f"{path}: features.{name}.what"),
                                             y.text(f.get("source"), f"{path}: features.{name}.source"))
        profiles = {}
        for name, f in y.mapping(data.get("profile_floors") or {}, f"{path}: profile_floors").items():
            f = y.mapping(f, f"{path}: profile_floors.{name}")
            profiles[str(name)] = ProfileFloor(str(name), _kernel(f.get("kernel"), f"{path}: profile_floors.{name}.kernel"),
                                               y.text(f.get("source"), f"{path}: profile_floors.{name}.source"))
        return cls(feats, load_floors(path), profiles)

    def expects(self, feature: str, kernel: str) -> bool | None:
        return self.features[feature].on(kernel)

    def floor_problems(self, cilium_version: str, node_kernels: dict[str, str], profile: str = "default") -> list[str]:
        """Nodes whose kernel is below the Cilium version's floor or the profile's, one line each naming the node."""
        v = Version.parse(cilium_version)
        own = self.profile_floors.get(profile)
        return floor_problems(self.floors, (v.major, v.minor), node_kernels) + (own.problems(node_kernels) if own else [])
