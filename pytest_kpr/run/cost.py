"""What a run costs the cluster: agent execs, other pod execs, node commands and API calls.

Every call the suites make goes through the run's :class:`~pytest_kpr.cluster.provider.ClusterHandle`;
the session wraps its ``kube`` and ``nodes`` in the counters below, so the totals are exact whatever the
provider. Per-test figures are differences of the running totals.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Sequence

from ..cluster.agents import AGENT_CONTAINER

_API_METHODS = ("get", "list", "create", "patch", "delete", "logs", "server_version")


@dataclass
class Cost:
    agent_execs: int = 0  # cilium-dbg in a cilium-agent container (one exec stream each)
    pod_execs: int = 0  # any other container: probe pods, node shells on an existing cluster
    node_commands: int = 0  # through the provider's NodeRunner (docker exec on kind)
    api_calls: int = 0

    def copy(self) -> "Cost":
        return Cost(**asdict(self))

    def minus(self, other: "Cost") -> "Cost":
        return Cost(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    @property
    def commands(self) -> int:
        """Everything that runs a process in the cluster (the expensive part: an exec stream each)."""
        return self.agent_execs + self.pod_execs + self.node_commands

    def to_json(self) -> dict[str, int]:
        return {**asdict(self), "commands": self.commands}

    def line(self) -> str:
        return (f"{self.agent_execs} agent execs, {self.node_commands} node commands, {self.pod_execs} other pod execs, "
                f"{self.api_calls} API calls")


class CountingKube:
    """A KubeAPI that counts; everything else passes through to the wrapped client."""

    def __init__(self, inner: Any, cost: Cost):
        self._inner = inner
        self._cost = cost

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in _API_METHODS and callable(attr):
            def counted(*args: Any, **kwargs: Any) -> Any:
                self._cost.api_calls += 1
                return attr(*args, **kwargs)

            return counted
        return attr

    def exec(self, namespace: str, pod: str, argv: Sequence[str], container: str | None = None, timeout: float = 60.0) -> Any:
        if container == AGENT_CONTAINER:
            self._cost.agent_execs += 1
        else:
            self._cost.pod_execs += 1
        return self._inner.exec(namespace, pod, argv, container=container, timeout=timeout)


class CountingNodes:
    """A NodeRunner that counts."""

    def __init__(self, inner: Any, cost: Cost):
        self._inner = inner
        self._cost = cost

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> Any:
        self._cost.node_commands += 1
        return self._inner.run(node, argv, timeout=timeout)
