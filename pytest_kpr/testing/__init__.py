"""Test support shipped with the plugin: an in-memory fake cluster and renderers of Cilium's formats.

Users can run their own suites against :class:`FakeCluster` through the ``pytest_kpr_provider`` hook
(see :class:`FakeProvider`).
"""

from .config import FakeConfig, Faults
from .fake import FakeCluster
from .provider import FakeProvider

__all__ = ["FakeCluster", "FakeConfig", "FakeProvider", "Faults"]
