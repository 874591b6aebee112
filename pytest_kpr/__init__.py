"""pytest-kpr: end-to-end datapath conformance tests for Cilium's kube-proxy replacement."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster.facts import ClusterFacts, Feature, NodeFacts
    from .core.errors import KprError

__all__ = ["ClusterFacts", "Feature", "KprError", "NodeFacts", "__version__"]


def __getattr__(name: str) -> Any:
    """Imported on first use, so that ``kpr parse``/``kpr probe`` start without the plugin's modules."""
    value: Any
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("pytest-kpr")
        except PackageNotFoundError:  # running from a source tree without an install
            value = "0+unknown"
    elif name in ("ClusterFacts", "Feature", "NodeFacts"):
        from .cluster import facts

        value = getattr(facts, name)
    elif name == "KprError":
        from .core import errors

        value = errors.KprError
    else:
        raise AttributeError(f"module 'pytest_kpr' has no attribute {name!r}")
    globals()[name] = value
    return value
