"""The workflows' matrices, read from the repository (clusters/versions.yaml, clusters/profiles/): one KEY=JSON line for
$GITHUB_OUTPUT. Versions are pinned in one place; tests/test_workflows.py runs this and checks the result.

    python .github/scripts/matrix.py cilium|profiles|pairs|kernels
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"


def _version_key(v: str) -> list[int]:
    return [int(x) for x in v.split(".")]


def matrix(name: str) -> list:
    pins = yaml.safe_load((CLUSTERS / "versions.yaml").read_text())
    if name == "cilium":  # every supported minor at its pinned patch
        return list(pins["cilium"]["matrix"])
    if name == "profiles":  # every profile but the default, on the pinned (newest) Cilium
        return sorted(p.stem for p in (CLUSTERS / "profiles").glob("*.yaml") if p.stem != "default")
    if name == "pairs":  # adjacent minors: one upgrade (and rollback) per pair
        m = sorted(pins["cilium"]["matrix"], key=_version_key)
        return [{"from": a, "to": b} for a, b in zip(m, m[1:])]
    if name == "kernels":  # little-vm-helper kind images, one per kernel
        return list(pins["lvh"]["kernels"])
    raise SystemExit(f"matrix.py: no matrix {name!r} (cilium, profiles, pairs, kernels)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python .github/scripts/matrix.py cilium|profiles|pairs|kernels")
    print(f"{sys.argv[1]}={json.dumps(matrix(sys.argv[1]), separators=(',', ':'))}")
