"""Node commands on clusters without ``docker exec``: one privileged pod per node.

The pod shares the node's network and PID namespaces; commands enter the host's mount namespace with
``nsenter -t 1 -m -u -i -n -p`` so the node's own ``iptables-save``, ``ss``, ``bpftool`` and ``tc``
run. Pods live in a namespace the session created, so they are removed with it.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..core.errors import ApiError, InfraError
from ..k8s.api import ExecResult, KubeAPI
from ..core.wait import WaitTimeout, eventually

NODE_SHELL_LABEL = "kpr.cilium.io/node-shell"
NSENTER = ("nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "--")


#: what the node shell is, the privileges it takes and why: the skip reason of every test that needs it
NODE_SHELL_NEEDS = ("the node shell: one pod per node, privileged, with host network and host PID, to read the node's own "
                    "iptables/nft rules, listening sockets (ss) and /proc/net/ip_vs")


class NoNodeShell:
    """--kpr-no-node-shell: no node shell pod is ever created; a node command raises :class:`NodeShellDisabled`, which
    the plugin turns into a skip of the test that asked, with :data:`NODE_SHELL_NEEDS` as the reason."""

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> ExecResult:
        from ..core.errors import NodeShellDisabled

        raise NodeShellDisabled(f"needs {NODE_SHELL_NEEDS}; disabled by --kpr-no-node-shell")


def node_shell_name(node: str) -> str:
    """``node-shell-<node>``, a pod name (a DNS-1123 subdomain's first label, at most 63). A longer one is cut and ends with
    a digest of the whole node name: two nodes whose names share the first 52 characters never share one shell."""
    import hashlib
    import re

    name = re.sub(r"[^a-z0-9-]", "-", f"node-shell-{node}".lower())
    if len(name) <= 63 and name == f"node-shell-{node}":
        return name.rstrip("-")
    digest = hashlib.sha256(node.encode()).hexdigest()[:10]
    return f"{name[:52].rstrip('-')}-{digest}"


def node_shell_pod(name: str, namespace: str, node: str, image: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {NODE_SHELL_LABEL: node}},
        "spec": {
            "nodeName": node,
            "hostNetwork": True,
            "hostPID": True,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "shell",
                    "image": image,
                    "command": ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done"],
                    "securityContext": {"privileged": True},
                }
            ],
        },
    }


class PodNodeRunner:
    def __init__(self, kube: KubeAPI, namespace: Callable[[], str], image: str, ready_timeout: float = 120.0):
        self.kube = kube
        self._namespace_factory = namespace
        self._namespace: str | None = None
        self.image = image
        self.ready_timeout = ready_timeout
        self._pods: dict[str, str] = {}

    def _pod(self, node: str) -> str:
        if node in self._pods:
            return self._pods[node]
        if self._namespace is None:
            self._namespace = self._namespace_factory()
        ns = self._namespace
        name = node_shell_name(node)
        try:
            self.kube.create(node_shell_pod(name, ns, node, self.image))
        except ApiError as e:
            if e.status != 409:
                raise
        try:
            eventually(
                lambda: (self.kube.get("Pod", name, ns) or {}).get("status", {}).get("phase"),
                until=lambda phase: phase == "Running",
                timeout=self.ready_timeout,
                what=f"node shell pod {ns}/{name} on {node} to run ({self.image})",
                abort=lambda phase: "it ended" if phase in ("Failed", "Succeeded") else None,
            )
        except WaitTimeout as e:
            raise InfraError(str(e)) from None
        self._pods[node] = name
        return name

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> ExecResult:
        pod = self._pod(node)
        assert self._namespace is not None
        r = self.kube.exec(self._namespace, pod, [*NSENTER, *argv], container="shell", timeout=timeout)
        return ExecResult(tuple(argv), r.returncode, r.stdout, r.stderr, f"node {node}")
