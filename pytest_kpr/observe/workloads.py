"""Manifests of the workloads the suites create (plain dicts, ready for KubeAPI.create)."""

from __future__ import annotations

from typing import Any

PROBE_CONTAINER = "probe"


def probe_pod(name: str, namespace: str, image: str, node: str | None = None, labels: dict[str, str] | None = None,
              command: list[str] | None = None, host_network: bool = False) -> dict[str, Any]:
    """A pod running the probe image with CAP_NET_RAW only (raw SYN probes), not privileged; with
    ``host_network`` in the node's network namespace (a client whose packets leave through the native device)."""
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": PROBE_CONTAINER,
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": command or ["sleep", "infinity"],
                "securityContext": {
                    "privileged": False,
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_RAW"]},
                },
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    if host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/component": "kpr-probe", **(labels or {})}},
        "spec": spec,
    }
