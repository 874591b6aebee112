"""Every node runs a cilium-agent that has replaced kube-proxy.

The precondition of every other suite, checked per node rather than once: a cluster where one
node's agent fell back to KubeProxyReplacement False serves that node's Services from nowhere.
"""

from __future__ import annotations

import pytest

from pytest_kpr.agent import agents
from pytest_kpr.cluster.facts import ClusterFacts
from pytest_kpr.cluster.provider import ClusterHandle

pytestmark = pytest.mark.kpr
PROPERTY = "agents"


def test_every_node_runs_a_cilium_agent(kpr_cluster: ClusterHandle, kpr_facts: ClusterFacts) -> None:
    nodes = sorted(n.name for n in kpr_facts.nodes)
    with_agent = sorted(a.node for a in agents(kpr_cluster.kube))
    assert with_agent == nodes, f"nodes without a cilium-agent: {sorted(set(nodes) - set(with_agent))}"


def test_every_agent_reports_kube_proxy_replacement_true(kpr_cluster: ClusterHandle) -> None:
    modes = {a.node: a.status().kpr.mode for a in agents(kpr_cluster.kube)}
    assert modes and set(modes.values()) == {"True"}, f"KubeProxyReplacement per node: {modes}"
