"""The existing-cluster provider: a kubeconfig and context that already run Cilium with KPR.

It creates nothing at the cluster level and deletes nothing it did not create; the session's
readiness check refuses the cluster clearly when Cilium is missing or runs without KPR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..core.errors import ApiError, InfraError, KprError, Unavailable
from ..k8s.api import KubeAPI
from .kind import default_env_kubeconfig
from .nodeshell import PodNodeRunner
from .outside import LocalOutside
from .provider import ClusterHandle, Progress, ProviderConfig

KubeFactory = Callable[[Path | None, str | None], KubeAPI]


def kubeconfig_problem(path: Path, context: str | None) -> str | None:
    """What is wrong with a kubeconfig before any client reads it, in one line: not YAML (with the line), not a
    kubeconfig, or without the requested (or a current) context. None when it looks usable."""
    import yaml

    try:
        with open(path, "rb") as f:  # a pipe (--kpr-kubeconfig <(...)) is fine; more than 16 MiB is no kubeconfig
            raw = f.read(16 * 1024 * 1024 + 1)
        if len(raw) > 16 * 1024 * 1024:
            return f"kubeconfig {path} is larger than 16 MiB: not a kubeconfig"
        from ..core.yamlfile import structure_problem

        text = raw.decode("utf-8")
        why = structure_problem(text, max_aliases=16)  # a kubeconfig needs none; a few are tolerated
        if why:
            return f"kubeconfig {path} is not one every client reads the same way ({why})"
        data = yaml.safe_load(text)
    except OSError as e:
        return f"kubeconfig {path} cannot be read: {e.strerror or e}"
    except UnicodeDecodeError as e:
        return f"kubeconfig {path} is not text (not UTF-8 at byte {e.start})"
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return f"kubeconfig {path} is not valid YAML{where}: {getattr(e, 'problem', None) or e}"
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), list):
        return f"kubeconfig {path} is not a kubeconfig (no 'contexts' list)"
    if not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in data["contexts"]):
        return f"kubeconfig {path} is not a kubeconfig (a context without a name)"
    for key in ("clusters", "users"):
        if not isinstance(data.get(key, []), list):
            return f"kubeconfig {path} is not a kubeconfig ({key!r} is not a list)"
    names = [c.get("name") for c in data["contexts"] if isinstance(c, dict)]
    want = context or data.get("current-context")
    if not want:
        return f"kubeconfig {path} has no current-context; pass --kpr-context (contexts: {', '.join(map(str, names)) or 'none'})"
    if want not in names:
        return f"kubeconfig {path} has no context {want!r} (contexts: {', '.join(map(str, names)) or 'none'})"
    return None


def api_refusal(kubeconfig: Path, context: str | None, e: ApiError) -> str:
    """The first request's refusal, in one line that says what to do: the credentials (401), the permissions (403), or
    a URL that is not a Kubernetes API (any other answer)."""
    where = f"{kubeconfig}{f' (context {context})' if context else ''}"
    said = " ".join(str(e.message or e.reason or "").split())[:160]
    if e.status == 401:
        return (f"the API server of {where} refused its credentials (401 Unauthorized{f': {said}' if said else ''}); "
                "renew the token or certificate, or pick another --kpr-context")
    if e.status == 403:
        return (f"the API server of {where} denied reading /version (403 Forbidden{f': {said}' if said else ''}); "
                "the user needs the permissions in clusters/rbac.yaml (kpr check-access lists what is missing)")
    what = f"GET /version answered {e.status} {e.reason}" if e.status else said or "GET /version did not answer as Kubernetes does"
    return f"the server of {where} is not a Kubernetes API: {what}; check the cluster's server URL"


#: how long the preflight waits for the API server's first answer (GET /version: connect and read each), seconds
PREFLIGHT_TIMEOUT = 15.0

class ExistingProvider:
    name = "existing"

    def __init__(self, settings: ProviderConfig, kube_factory: KubeFactory, create_namespace: Callable[[str], str] | None = None):
        self.settings = settings
        self.kube_factory = kube_factory
        self.create_namespace = create_namespace
        self.kubeconfig = settings.kubeconfig or default_env_kubeconfig()
        self.kube: KubeAPI | None = None

    def preflight(self) -> None:
        given = self.settings.kubeconfig
        if given is not None and not given.is_file():
            what = "is a directory" if given.is_dir() else "does not exist" if not given.exists() else "is not a regular file"
            raise Unavailable(f"--kpr-kubeconfig {given} {what}")
        if self.kubeconfig is None or not self.kubeconfig.is_file():
            raise Unavailable(
                f"no kubeconfig for --kpr-provider=existing ({self.kubeconfig or 'KUBECONFIG unset, no ~/.kube/config'}); "
                "pass --kpr-kubeconfig=PATH [--kpr-context=NAME]"
            )
        why = kubeconfig_problem(self.kubeconfig, self.settings.context)
        if why:
            raise Unavailable(why)
        self.kube = self.kube_factory(self.kubeconfig, self.settings.context)
        try:  # one bounded question first: a server that accepts and never answers is one line within the bound
            self.kube.server_version(timeout=PREFLIGHT_TIMEOUT)
        except InfraError as e:
            raise Unavailable(f"the API server of {self.kubeconfig} does not answer GET /version (waited at most {PREFLIGHT_TIMEOUT:g} s): "
                              f"{e}") from None
        except ApiError as e:
            raise Unavailable(api_refusal(self.kubeconfig, self.settings.context, e)) from None

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

    @property
    def cluster_name(self) -> str:
        return self.settings.context or "existing"

    def diagnostics_kube(self) -> KubeAPI | None:
        return self.kube

    def diagnostics(self) -> dict[str, str]:
        from .cilium import helm_diagnostics

        try:
            return helm_diagnostics(self._helm(), self.kubeconfig, self.settings.context)
        except Exception as e:  # noqa: BLE001 - no helm here is not the failure being explained
            return {"helm-status.txt": f"helm not available: {e}\n"}

    def attach(self, shared: dict[str, Any], progress: Progress) -> ClusterHandle:
        return self.provision(progress)

    def helm_values(self) -> dict[str, Any]:
        from .cilium import helm_get_values

        return helm_get_values(self._helm(), self.kubeconfig, self.settings.context)

    def upgrade(self, to_version: str, from_version: str, progress: Progress) -> None:
        """Only with --kpr-allow-disruptive (checked by the caller): the cluster is not ours."""
        from ..core.wait import Timeouts
        from .cilium import helm_upgrade
        from .kind import save_values

        from ..core.inputs import path_component

        saved = self.settings.artifacts / path_component(self.settings.context or "existing") / "upgrade" / f"values-{from_version}.yaml"
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
