""":class:`FakeProvider`: the provider interface over a :class:`FakeCluster`."""

from __future__ import annotations

from ..cluster.provider import ClusterHandle, Progress
from ..errors import Unavailable
from .fake import FakeCluster


class FakeProvider:
    name = "fake"

    def __init__(self, cluster: FakeCluster, *, created: bool = True, unavailable: str | None = None):
        self.cluster = cluster
        self.created = created
        self.unavailable = unavailable
        self.events: list[str] = []

    def preflight(self) -> None:
        self.events.append("preflight")
        if self.unavailable:
            raise Unavailable(self.unavailable)

    def provision(self, progress: Progress) -> ClusterHandle:
        self.events.append("provision")
        progress(f"using fake cluster {self.cluster.cfg.name}")
        return ClusterHandle(self.cluster.cfg.name, self.name, self.cluster, self.cluster, self.created)

    def teardown(self, progress: Progress) -> None:
        self.events.append("teardown")
