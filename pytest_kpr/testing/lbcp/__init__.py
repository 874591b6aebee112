"""The fake agent's load-balancing control plane, derived the way Cilium derives it.

Kubernetes Services, EndpointSlices and Pods (hostPort) in; the agent's ``services``, ``frontends`` and ``backends``
tables and its BPF load-balancing maps out -- the same steps as cilium/cilium ``pkg/loadbalancer``: the reflectors turn
objects into a Service and its frontends (``reflectors/conversions.go`` convertService) and into backends
(``pkg/k8s/endpoints.go`` ParseEndpointSliceV1, ``convertEndpoints``); the writer associates each frontend with its
backends (``writer/writer.go`` DefaultSelectBackends); the BPF reconciler allocates IDs and writes the service,
backend, reverse-NAT, affinity, source-range and Maglev entries (``reconciler/bpf_reconciler.go`` updateFrontend).

Each module cites the lines it follows. Cilium's own test scripts (``pkg/loadbalancer/tests/testdata/*.txtar``) are
run against it by :mod:`pytest_kpr.testing.txtar`: where a script and this code disagree, the script is right.
"""

from __future__ import annotations

from .addr import L3n4
from .agent import Agent, AgentConfig, ConfigError

__all__ = ["Agent", "AgentConfig", "ConfigError", "L3n4"]
