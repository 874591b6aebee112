"""Where the project's data files live: ``clusters/`` (kind configs, Helm values, version matrices) and ``suites/`` (the
conformance suites). A checkout keeps both at its top level; the wheel ships them inside the package
(``pytest_kpr/clusters``, ``pytest_kpr/suites``: pyproject.toml maps them there)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


PACKAGE_DIR = Path(__file__).resolve().parent.parent  # pytest_kpr/ (this module is pytest_kpr/run/resources.py)
REPO_DIR = PACKAGE_DIR.parent


def packaged_dir(name: str) -> Path | None:
    """``suites`` or ``clusters`` as installed: inside the package (a wheel), else at the top of the checkout this package
    runs from (a checkout, an editable install)."""
    for c in (PACKAGE_DIR / name, REPO_DIR / name):
        if c.is_dir():
            return c
    return None


def find_clusters_dir(rootdir: Path | None = None, explicit: Path | None = None) -> Path | None:
    """The ``clusters/`` directory: an explicit one, else the rootdir's, else the one installed with the package."""
    candidates = [explicit] if explicit else []
    if rootdir is not None:
        candidates.append(rootdir / "clusters")
    candidates.append(packaged_dir("clusters"))
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
    probe_image: str = ""  # the published probe image, pinned by digest ("" until the first release)

    @classmethod
    def load(cls, clusters_dir: Path) -> "Pins":
        from ..core import yamlfile as y

        path = clusters_dir / "versions.yaml"
        data = y.mapping(y.load(path, "the pinned versions"), str(path))
        cilium = y.mapping(data.get("cilium"), f"{path}: cilium")
        kind = y.mapping(data.get("kind"), f"{path}: kind")
        matrix = tuple(y.version(v, f"{path}: cilium.matrix") for v in y.sequence(cilium.get("matrix"), f"{path}: cilium.matrix"))
        if not matrix:
            raise y.YamlFileError(f"{path}: cilium.matrix is empty")
        return cls(
            cilium_version=y.version(cilium.get("default"), f"{path}: cilium.default"),
            cilium_matrix=matrix,
            node_image=y.text(kind.get("node_image"), f"{path}: kind.node_image", 300),
            kind_version=y.version(kind.get("version"), f"{path}: kind.version"),
            oldest=y.version(cilium.get("oldest", "1.18"), f"{path}: cilium.oldest"),
            probe_image=str(y.mapping(data.get("probe"), f"{path}: probe").get("image") or ""),
        )
