"""internalTrafficPolicy=Local: a pod's connections to the ClusterIP are served by its own node's backends only, and outside
traffic through a NodePort is unaffected. (A pod on a node without a local backend gets its plane's no-backend answer:
judged by :func:`pytest_kpr.judge.no_backend.no_backend_problems`.)

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import Mapping, Sequence


def local_only_problems(served: "Mapping[str, Sequence[str | None]]", backend_node: "Mapping[str, str]") -> list[str]:
    """``served``: client node -> the backend pod each of its connections reached (None: it did not connect);
    ``backend_node``: backend pod -> its node. Every connection from a node is served by a backend on that node
    (datapath.SRC_ITP_CLUSTER_IP: the ClusterIP's only scope holds the node's own backends)."""
    out = []
    for node, pods in sorted(served.items()):
        if not pods:
            out.append(f"a pod on {node} made no connection, so which backends serve it is unknown")
            continue
        remote = sorted({p for p in pods if p is not None and p in backend_node and backend_node[p] != node})
        stray = sorted({p for p in pods if p is not None and p not in backend_node})
        lost = sum(p is None for p in pods)
        if stray:
            n = sum(p in stray for p in pods)
            out.append(f"{n} of {len(pods)} connections from a pod on {node} have their socket on {', '.join(stray)}, no backend of the "
                       "Service (the socket plane did not translate them to a backend)")
        if remote:
            where = ", ".join(f"{p} (on {backend_node.get(p, '?')})" for p in remote)
            n = sum(p in remote for p in pods)
            out.append(f"{n} of {len(pods)} connections from a pod on {node} were served by {where}: another node's backend, "
                       "as if internalTrafficPolicy were Cluster")
        if lost:
            out.append(f"{lost} of {len(pods)} connections from a pod on {node} reached no backend (its node has a local backend)")
    return out


def external_problems(verdict: str, via: str, backend_on: str) -> list[str]:
    """A raw SYN from outside to ``via`` (a node without a local backend) for the NodePort of an internalTrafficPolicy=Local,
    externalTrafficPolicy=Cluster Service must be served (``accepted``) by the backend on ``backend_on``
    (datapath.SRC_ITP_EXTERNAL: the external scope keeps every backend)."""
    if verdict == "accepted":
        return []
    return [f"a raw SYN from outside to {via}, which has no local backend, got {verdict}; internalTrafficPolicy must not apply "
            f"to traffic from outside (externalTrafficPolicy Cluster: the backend on {backend_on} serves it)"]
