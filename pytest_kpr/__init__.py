"""pytest-kpr: end-to-end datapath conformance tests for Cilium's kube-proxy replacement."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .cluster.facts import ClusterFacts, Feature, NodeFacts
from .errors import KprError

try:
    __version__ = _version("pytest-kpr")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0+unknown"

__all__ = ["ClusterFacts", "Feature", "KprError", "NodeFacts", "__version__"]
