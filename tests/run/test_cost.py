"""What a run costs the cluster: every call through the handle is counted, in the right column."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.run.cost import Cost, CountingKube, CountingNodes


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.cfg = "passes through"

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> str:
            self.calls.append((name, args, kwargs))
            return name

        return call

    def exec(self, namespace: str, pod: str, argv: Any, container: str | None = None, timeout: float = 60.0) -> str:
        self.calls.append(("exec", namespace, pod, container))
        return "exec"

    def run(self, node: str, argv: Any, timeout: float = 60.0) -> str:
        self.calls.append(("run", node))
        return "run"


@pytest.mark.parametrize(("call", "column"), [
    (lambda k, n: k.exec("kube-system", "cilium-x", ["cilium-dbg", "status"], container="cilium-agent"), "agent_execs"),
    (lambda k, n: k.exec("t", "probe", ["curl"]), "pod_execs"),
    (lambda k, n: k.exec("kpr-shell", "shell-0", ["nsenter"], container="shell"), "pod_execs"),
    (lambda k, n: n.run("kind-worker", ["iptables-save"]), "node_commands"),
    (lambda k, n: k.get("Service", "web", "t"), "api_calls"),
    (lambda k, n: k.list("Pod", "t"), "api_calls"),
    (lambda k, n: k.create({}), "api_calls"),
    (lambda k, n: k.patch("Service", "web", "t", {}), "api_calls"),
    (lambda k, n: k.delete("Service", "web", "t"), "api_calls"),
    (lambda k, n: k.logs("t", "web"), "api_calls"),
    (lambda k, n: k.server_version(), "api_calls"),
])
def test_each_call_is_counted_once_in_its_column(call: Any, column: str) -> None:
    cost = Cost()
    inner = Recorder()
    kube, nodes = CountingKube(inner, cost), CountingNodes(inner, cost)
    assert call(kube, nodes) is not None
    assert cost.to_json() == {**Cost().to_json(), column: 1, "commands": 0 if column == "api_calls" else 1}
    assert len(inner.calls) == 1, "the call reached the wrapped client exactly once"


def test_attributes_pass_through_uncounted() -> None:
    cost = Cost()
    assert CountingKube(Recorder(), cost).cfg == "passes through"
    assert cost == Cost()


def test_per_test_cost_is_the_difference_of_totals() -> None:
    total = Cost(agent_execs=5, node_commands=2, api_calls=9)
    before = Cost(agent_execs=3, api_calls=4)
    assert total.minus(before) == Cost(agent_execs=2, node_commands=2, api_calls=5)
    assert total.minus(before).line() == "2 agent execs, 2 node commands, 0 other pod execs, 5 API calls"
