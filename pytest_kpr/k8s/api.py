"""The interface every cluster backend implements: objects as plain dicts, exec as :class:`ExecResult`.

Objects are the JSON form the API server speaks (``{"apiVersion", "kind", "metadata", ...}``), so the
real client, the in-memory fake and the suites agree without a translation layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from ..core.errors import CommandError

#: apiVersion of every kind the plugin touches.
API_VERSIONS: dict[str, str] = {
    "Namespace": "v1",
    "Node": "v1",
    "Pod": "v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Deployment": "apps/v1",
    "DaemonSet": "apps/v1",
    "EndpointSlice": "discovery.k8s.io/v1",
    "CiliumEndpoint": "cilium.io/v2",
    "CiliumNode": "cilium.io/v2",
    "CiliumLoadBalancerIPPool": "cilium.io/v2",
    "CiliumLocalRedirectPolicy": "cilium.io/v2",
    "ServiceAccount": "v1",
    "Secret": "v1",
    "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "Event": "v1",
    "SelfSubjectAccessReview": "authorization.k8s.io/v1",
    "SelfSubjectReview": "authentication.k8s.io/v1",
}


def api_version_of(kind: str) -> str:
    try:
        return API_VERSIONS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}") from None


def pod_ready(pod: dict[str, Any]) -> bool:
    """The pod's Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in pod.get("status", {}).get("conditions") or [])


@dataclass(frozen=True)
class ExecResult:
    """A finished command, like :class:`subprocess.CompletedProcess`. ``where`` names the pod or node."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    where: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def check(self) -> "ExecResult":
        """Raise :class:`CommandError` unless the command exited 0. A non-zero exit is a result, not retried."""
        if self.returncode != 0:
            raise CommandError(self.argv, self.returncode, self.stdout, self.stderr, self.where)
        return self


@runtime_checkable
class KubeAPI(Protocol):
    """What the plugin needs from a cluster's API server. Implemented by :class:`~pytest_kpr.k8s.client.RealKube`
    and :class:`~pytest_kpr.testing.fake.FakeCluster`. Transport failures raise
    :class:`~pytest_kpr.core.errors.InfraError`."""

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...

    def list(
        self, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...

    def create(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def patch(self, kind: str, name: str, namespace: str | None, patch: dict[str, Any]) -> dict[str, Any]: ...

    def delete(self, kind: str, name: str, namespace: str | None = None, grace_period_seconds: int | None = None) -> None: ...

    def exec(
        self,
        namespace: str,
        pod: str,
        argv: Sequence[str],
        container: str | None = None,
        timeout: float = 60.0,
    ) -> ExecResult: ...

    def logs(self, namespace: str, pod: str, container: str | None = None) -> str: ...

    def server_version(self) -> str: ...
