"""The existing-cluster provider: a kubeconfig and context that already run Cilium with KPR.

It creates nothing at the cluster level and deletes nothing it did not create; the session's
readiness check refuses the cluster clearly when Cilium is missing or runs without KPR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import InfraError, KprError, Unavailable
from ..k8s.api import KubeAPI
from ..settings import Settings
from .kind import default_env_kubeconfig
from .nodeshell import PodNodeRunner
from .outside import LocalOutside
from .provider import ClusterHandle, Progress

KubeFactory = Callable[[Path | None, str | None], KubeAPI]


class ExistingProvider:
    name = "existing"

    def __init__(self, settings: Settings, kube_factory: KubeFactory, create_namespace: Callable[[str], str] | None = None):
        self.settings = settings
        self.kube_factory = kube_factory
        self.create_namespace = create_namespace
        self.kubeconfig = settings.kubeconfig or default_env_kubeconfig()
        self.kube: KubeAPI | None = None

    def preflight(self) -> None:
        if self.kubeconfig is None or not self.kubeconfig.is_file():
            raise Unavailable(
                f"no kubeconfig for --kpr-provider=existing ({self.kubeconfig or 'KUBECONFIG unset, no ~/.kube/config'}); "
                "pass --kpr-kubeconfig=PATH [--kpr-context=NAME]"
            )
        self.kube = self.kube_factory(self.kubeconfig, self.settings.context)
        try:
            self.kube.server_version()
        except InfraError as e:
            raise Unavailable(f"the API server of {self.kubeconfig} does not answer: {e}") from None

    def provision(self, progress: Progress) -> ClusterHandle:
        assert self.kube is not None, "preflight() first"
        progress(f"using existing cluster from {self.kubeconfig}{f' (context {self.settings.context})' if self.settings.context else ''}")
        return ClusterHandle(
            name=self.settings.context or "existing",
            provider=self.name,
            kube=self.kube,
            nodes=PodNodeRunner(
                self.kube,
                lambda: self._namespace("nodeshell"),
                self.settings.node_shell_image,
            ),
            created=False,
            kubeconfig=self.kubeconfig,
            context=self.settings.context,
            outside=LocalOutside(),
        )

    def share(self, handle: ClusterHandle) -> dict[str, Any]:
        return {}  # every worker reads the same kubeconfig and context

    def attach(self, shared: dict[str, Any], progress: Progress) -> ClusterHandle:
        return self.provision(progress)

    def helm_values(self) -> dict[str, Any]:
        from .cilium import helm_get_values

        return helm_get_values(self._helm(), self.kubeconfig, self.settings.context)

    def upgrade(self, to_version: str, from_version: str, progress: Progress) -> None:
        """Only with --kpr-allow-disruptive (checked by the caller): the cluster is not ours."""
        from ..wait import Timeouts
        from .cilium import helm_upgrade
        from .kind import save_values

        saved = self.settings.artifacts / (self.settings.context or "existing") / "upgrade" / f"values-{from_version}.yaml"
        save_values(self._helm(), self.kubeconfig, saved, self.settings.context)
        assert self.kube is not None
        helm_upgrade(self._helm(), self.kube, self.settings, self.kubeconfig, from_version, to_version, saved,
                     Timeouts().scaled(self.settings.timeout_scale), progress, context=self.settings.context)

    def _helm(self) -> Any:
        from .tools import require

        return require("helm", self.settings.binary("helm"), purpose="to upgrade Cilium on an existing cluster")

    def _namespace(self, purpose: str) -> str:
        if self.create_namespace is None:
            raise KprError("no namespace factory: node commands need the pytest session")
        return self.create_namespace(purpose)

    def teardown(self, progress: Progress) -> None:
        """Nothing: the cluster is not ours. Namespaces the run created are removed by the session."""
