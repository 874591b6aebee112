"""Cluster providers (kind, existing kubeconfig, later VMs), Cilium install and readiness, cluster facts."""

from .provider import ClusterHandle, NodeRunner, Progress, Provider

__all__ = ["ClusterHandle", "NodeRunner", "Progress", "Provider"]
