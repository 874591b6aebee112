"""Where the project's data files live: ``clusters/`` (kind configs, Helm values, version matrices)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


def find_clusters_dir(rootdir: Path | None = None, explicit: Path | None = None) -> Path | None:
    """The ``clusters/`` directory: an explicit one, else the rootdir's, else the checkout this package runs from."""
    candidates = [explicit] if explicit else []
    if rootdir is not None:
        candidates.append(rootdir / "clusters")
    candidates.append(REPO_DIR / "clusters")
    for c in candidates:
        if c is not None and (c / "versions.yaml").is_file():
            return c
    return None


@dataclass(frozen=True)
class Pins:
    """The pinned defaults from ``clusters/versions.yaml``."""

    cilium_version: str
    cilium_matrix: tuple[str, ...]
    node_image: str
    kind_version: str
    oldest: str = "1.18"  # the oldest supported Cilium minor

    @classmethod
    def load(cls, clusters_dir: Path) -> "Pins":
        data: dict[str, Any] = yaml.safe_load((clusters_dir / "versions.yaml").read_text())
        cilium = data["cilium"]
        kind = data["kind"]
        return cls(
            cilium_version=str(cilium["default"]),
            cilium_matrix=tuple(str(v) for v in cilium.get("matrix", [])),
            node_image=str(kind["node_image"]),
            kind_version=str(kind["version"]),
            oldest=str(cilium.get("oldest", "1.18")),
        )
