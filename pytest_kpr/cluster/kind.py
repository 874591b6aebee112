"""The kind provider, through pytest-kind's :class:`~pytest_kind.KindCluster`, made safe.

pytest-kind 22.11 downloads kind and kubectl from the internet when its paths do not exist, keeps its
state under ``./.pytest-kind`` of the current directory and creates clusters with a fixed ``--wait``
default. :class:`SafeKindCluster` keeps its lifecycle code (``create`` with reuse, ``delete``,
``load_docker_image``) but:

- takes ``kind``/``kubectl`` from PATH or options and refuses to download (``ensure_*`` raise);
- keeps its state (kubeconfig) under the artifacts directory;
- is the only class that imports pytest-kind, so it can be replaced without touching the rest.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

from ..core.errors import ProvisioningError, Unavailable
from ..k8s.api import ExecResult, KubeAPI
from ..core.wait import Timeouts
from . import cilium
from .outside import LocalOutside
from .provider import ClusterHandle, Progress, ProviderConfig
from .tools import Tool, docker_daemon_answers, require

KubeFactory = Callable[[Path | None, str | None], KubeAPI]


def _kind_cluster_class() -> type:
    from pytest_kind import KindCluster  # type: ignore[import-untyped]  # the only import of pytest-kind in the project

    class SafeKindCluster(KindCluster):  # type: ignore[misc,valid-type]
        def __init__(self, name: str, state_dir: Path, kind: Tool, kubectl: Tool, image: str | None):
            # Deliberately not calling KindCluster.__init__: it mkdirs ./.pytest-kind in the CWD and
            # points kind_path at a download location.
            self.name = name
            self.image = image or None
            self.path = state_dir
            self.path.mkdir(parents=True, exist_ok=True)
            self.kubeconfig_path = self.path / "kubeconfig"
            self.kind_path = Path(kind.path)
            self.kubectl_path = Path(kubectl.path)
            self.platform = "linux"

        def ensure_kind(self) -> None:
            if not self.kind_path.exists():
                raise Unavailable(f"kind not found at {self.kind_path} (pytest-kpr never downloads it)")

        def ensure_kubectl(self) -> None:
            if not self.kubectl_path.exists():
                raise Unavailable(f"kubectl not found at {self.kubectl_path} (pytest-kpr never downloads it)")

    return SafeKindCluster



def probe_image_problem(image: str, pull_error: str | None) -> str:
    """Why the probe image is not there, in one line, with the step to take: a published image (pinned by digest) that
    could not be pulled is most often a private GHCR package (a new one is private until made public) or a registry that
    wants a login; a local image is built with `kpr probe-image build` (from the installed package: no checkout needed)."""
    if pull_error is None:
        return (f"probe image {image} is not in the local Docker: build it with `kpr probe-image build` (or `make probe-image` "
                "in a checkout), or pass --kpr-probe-image")
    said = " ".join(pull_error.split())[:200]
    low = said.lower()
    if any(w in low for w in ("unauthorized", "denied", "forbidden", "authentication required", "403", "401")):
        return (f"probe image {image} cannot be pulled anonymously ({said}): its registry package is private -- make it public "
                "(GitHub: the package's settings, Change visibility) or `docker login` to that registry before the run")
    return f"probe image {image} could not be pulled ({said}): check the runner's network and the reference, or pass --kpr-probe-image"

class DockerNodeRunner:
    """Node commands on kind: ``docker exec <node container> argv``."""

    def __init__(self, docker: Tool):
        self.docker = docker

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> ExecResult:
        r = self.docker.run(["exec", node, *argv], timeout=timeout)
        return ExecResult(tuple(argv), r.returncode, r.stdout, r.stderr, f"node {node}")


def chart_version_problem(helm: Tool, chart: str, version: str) -> str | None:
    """Whether the chart repository has the Cilium version, asked before any cluster exists (`helm show chart --version`).
    A local chart directory is not asked about; a repository helm does not know is a problem with its fix."""
    if Path(chart).exists():
        return None
    r = helm.run(["show", "chart", chart, "--version", version], timeout=60)
    if r.ok:
        return None
    err = (r.stderr or r.stdout).strip().splitlines()
    last = err[-1] if err else f"exit {r.returncode}"
    repo = chart.split("/", 1)[0]
    if f"repo {repo} not found" in last and "/" in chart:  # helm: `Error: repo cilium not found`
        return (f"helm knows no repository {repo!r} for the chart {chart}: `helm repo add {repo} https://helm.cilium.io` "
                f"(`make kpr` does it), or pass --kpr-cilium-chart")
    if "not found" in last or "no chart version" in last:
        return (f"the chart {chart} has no version {version} (`helm show chart {chart} --version {version}`: {last}); "
                f"pass an existing --kpr-cilium-version (or `helm repo update`)")
    return f"`helm show chart {chart} --version {version}` failed: {last}"


class KindProvider:
    name = "kind"

    def __init__(self, settings: ProviderConfig, timeouts: Timeouts, kube_factory: KubeFactory):
        self.settings = settings
        self.timeouts = timeouts
        self.kube_factory = kube_factory
        self.cluster: Any = None
        self.created = False
        self._tools: dict[str, Tool] = {}
        #: told when the install begins (the session records it as its own phase)
        self.on_phase: Callable[[str], None] = lambda phase: None

    @property
    def cluster_name(self) -> str:
        return self.settings.cluster_name

    @property
    def kubeconfig_path(self) -> Path | None:
        path = Path(self.cluster.kubeconfig_path) if self.cluster is not None else None
        return path if path is not None and path.is_file() else None

    def diagnostics_kube(self) -> Any:
        """The API of the cluster being created, once kind wrote its kubeconfig (a failed install still has one)."""
        return self.kube_factory(self.kubeconfig_path, None) if self.kubeconfig_path is not None else None

    def diagnostics(self) -> dict[str, str]:
        if "helm" not in self._tools or self.kubeconfig_path is None:
            return {}
        return cilium.helm_diagnostics(self._tools["helm"], self.kubeconfig_path)

    def preflight(self) -> None:
        """Everything the kind provider needs, checked at once and reported in one line."""
        s = self.settings
        purpose = "to create a kind cluster"
        problems: list[str] = []
        for name in ("docker", "kind", "kubectl", "helm"):
            try:
                self._tools[name] = require(name, s.binary(name), purpose=purpose)
            except Unavailable as e:
                problems.append(str(e))
        if "docker" in self._tools:
            try:
                docker_daemon_answers(self._tools["docker"])
            except Unavailable as e:
                problems.insert(0, str(e))
        if "docker" in self._tools and not any(p.startswith("no Docker daemon") for p in problems):
            r = self._tools["docker"].run(["image", "inspect", "--format", "{{.Id}}", s.probe_image], timeout=30)
            pulled = None
            if not r.ok and "@sha256:" in s.probe_image:  # a published image, pinned by digest: pull this node's platform only
                pulled = r = self._tools["docker"].run(["pull", "--platform", node_platform(), s.probe_image], timeout=600)
            if not r.ok:
                problems.append(probe_image_problem(s.probe_image, (pulled.stderr or pulled.stdout) if pulled is not None else None))
        if not s.kind_config.is_file():
            problems.append(f"kind config {s.kind_config} not found (pass --kpr-kind-config)")
        if not s.cilium_version:
            problems.append("no Cilium version: clusters/versions.yaml is missing and --kpr-cilium-version was not given")
        elif "helm" in self._tools:
            why = chart_version_problem(self._tools["helm"], s.cilium_chart, s.cilium_version)
            if why:
                problems.append(why)
        if problems:
            raise Unavailable("; ".join(problems), problems)

    def _existing_clusters(self) -> list[str]:
        r = self._tools["kind"].run(["get", "clusters"], timeout=60)
        if not r.ok:
            raise ProvisioningError(f"`kind get clusters` failed: {(r.stderr or r.stdout).strip()}")
        return [line.strip() for line in r.stdout.splitlines() if line.strip()]

    def provision(self, progress: Progress) -> ClusterHandle:
        s = self.settings
        kind, kubectl = self._tools["kind"], self._tools["kubectl"]
        cls = _kind_cluster_class()
        state_dir = s.artifacts / ".kind" / s.cluster_name
        self.cluster = cls(s.cluster_name, state_dir, kind, kubectl, s.node_image)
        exists = s.cluster_name in self._existing_clusters()
        if exists and not s.reuse_cluster:
            raise ProvisioningError(
                f"a kind cluster named {s.cluster_name} already exists and was not created by this run; "
                "pass --kpr-reuse-cluster to use it, or --kpr-cluster-name to pick another name"
            )
        if exists:
            progress(f"reusing kind cluster {s.cluster_name}")
            r = kind.run(["export", "kubeconfig", f"--name={s.cluster_name}", f"--kubeconfig={self.cluster.kubeconfig_path}"])
            if not r.ok:
                raise ProvisioningError(f"`kind export kubeconfig` failed: {(r.stderr or r.stdout).strip()}")
        else:
            progress(f"creating kind cluster {s.cluster_name} ({s.node_image or 'kind default image'}) from {s.kind_config}")
            try:
                self.created = True  # from here on a failure still deletes what kind may have made
                self.cluster.create(config_file=s.kind_config)
            except Exception as e:  # subprocess.CalledProcessError from pytest-kind, with kind's output on stderr
                raise ProvisioningError(f"kind create cluster {s.cluster_name} failed: {e}") from e
        kubeconfig = Path(self.cluster.kubeconfig_path)
        progress(f"loading the probe image {s.probe_image} into the nodes (kind load)")
        self._load_probe_image(kind)
        self.on_phase("install")
        cilium.helm_install(self._tools["helm"], s, s.cluster_name, kubeconfig, progress, self.timeouts.CILIUM_READY)
        kube = self.kube_factory(kubeconfig, None)
        return ClusterHandle(
            name=s.cluster_name,
            provider=self.name,
            kube=kube,
            nodes=DockerNodeRunner(self._tools["docker"]),
            created=self.created,
            kubeconfig=kubeconfig,
            outside=LocalOutside(),
        )

    def _load_probe_image(self, kind: Tool) -> None:
        """The probe image into the nodes. A locally built image is one platform: ``kind load docker-image``. A published
        one is pinned by digest to a multi-platform index, which ``kind load docker-image`` cannot import under Docker's
        containerd image store (kind#3795: the save references every platform, only this one was pulled); as kind's own
        docs advise (kind#4247), save this platform alone and load the archive."""
        import tempfile

        s = self.settings
        if "@sha256:" not in s.probe_image:
            argv = ["load", "docker-image", "--name", s.cluster_name, s.probe_image]
            r = kind.run(argv, timeout=self.timeouts.CLUSTER_CREATE)
            if not r.ok:
                raise ProvisioningError(f"`kind load docker-image {s.probe_image}` failed: {(r.stderr or r.stdout).strip()}")
            return
        with tempfile.TemporaryDirectory(prefix=f"kpr-probe-{os.getpid()}-") as d:
            archive = str(Path(d) / "probe.tar")
            r = self._tools["docker"].run(["image", "save", "--platform", node_platform(), "-o", archive, s.probe_image], timeout=600)
            if not r.ok:
                raise ProvisioningError(f"`docker image save --platform {node_platform()} {s.probe_image}` failed (Docker 28 or newer saves "
                                        f"one platform): {(r.stderr or r.stdout).strip()}")
            r = kind.run(["load", "image-archive", "--name", s.cluster_name, archive], timeout=self.timeouts.CLUSTER_CREATE)
            if not r.ok:
                raise ProvisioningError(f"`kind load image-archive` of {s.probe_image} failed: {(r.stderr or r.stdout).strip()}")

    def share(self, handle: ClusterHandle) -> dict[str, Any]:
        """What another worker of the run needs to use this cluster (pytest_kpr.run.shared_run)."""
        return {"cluster_name": self.settings.cluster_name, "kubeconfig": str(handle.kubeconfig), "created": self.created}

    def attach(self, shared: dict[str, Any], progress: Progress) -> ClusterHandle:
        """Use the cluster another worker of this run provisioned (Cilium installed, probe image loaded); the
        last worker out deletes it if the run created it."""
        s = self.settings
        self.cluster = _kind_cluster_class()(shared["cluster_name"], s.artifacts / ".kind" / shared["cluster_name"],
                                             self._tools["kind"], self._tools["kubectl"], s.node_image)
        self.created = bool(shared["created"])
        kubeconfig = Path(shared["kubeconfig"])
        progress(f"attaching to kind cluster {shared['cluster_name']} (provisioned by another worker of this run)")
        return ClusterHandle(name=shared["cluster_name"], provider=self.name, kube=self.kube_factory(kubeconfig, None),
                             nodes=DockerNodeRunner(self._tools["docker"]), created=self.created, kubeconfig=kubeconfig,
                             outside=LocalOutside())

    def helm_values(self) -> dict[str, Any]:
        return cilium.helm_get_values(self._tools["helm"], Path(self.cluster.kubeconfig_path))

    def upgrade(self, to_version: str, from_version: str, progress: Progress) -> None:
        kubeconfig = Path(self.cluster.kubeconfig_path)
        saved = self.settings.artifacts / self.settings.cluster_name / "upgrade" / f"values-{from_version}.yaml"
        save_values(self._tools["helm"], kubeconfig, saved)
        cilium.helm_upgrade(self._tools["helm"], self.kube_factory(kubeconfig, None), self.settings, kubeconfig, from_version, to_version,
                            saved, self.timeouts, progress)

    def collect_logs(self, dest: Path, progress: Progress) -> None:
        """``kind export logs``: every node's journal, kubelet and container logs (the run failed; the cluster is about to go)."""
        if self.cluster is None or "kind" not in self._tools:
            return
        progress(f"the run failed: exporting the kind cluster's logs to {dest} (kind export logs)")
        r = self._tools["kind"].run(["export", "logs", str(dest), "--name", self.settings.cluster_name], timeout=300)
        if not r.ok:
            progress(f"`kind export logs` failed: {(r.stderr or r.stdout).strip()[:300]}")

    def teardown(self, progress: Progress) -> None:
        if self.cluster is None or not self.created:
            return
        if self.settings.keep_cluster:
            progress(f"keeping kind cluster {self.settings.cluster_name} (--kpr-keep-cluster); delete it with: kind delete cluster --name {self.settings.cluster_name}")
            return
        progress(f"deleting kind cluster {self.settings.cluster_name}")
        try:
            self.cluster.delete()
        except Exception as e:
            progress(f"could not delete kind cluster {self.settings.cluster_name}: {e}")


def save_values(helm: Tool, kubeconfig: Path | None, dest: Path, context: str | None = None) -> Path:
    """``helm get values cilium -o yaml`` into ``dest`` (kept with the run's evidence: what the upgrade carried over)."""
    import yaml

    from ..evidence.store import put_text

    return put_text(dest, yaml.safe_dump(cilium.helm_get_values(helm, kubeconfig, context), sort_keys=True))


def default_env_kubeconfig() -> Path | None:
    env = os.environ.get("KUBECONFIG")
    if env:
        return Path(env.split(os.pathsep)[0])
    p = Path.home() / ".kube" / "config"
    return p if p.exists() else None


def node_platform() -> str:
    """The platform of this machine's Docker and kind nodes, as ``docker --platform`` names it (``linux/amd64``)."""
    import platform

    machine = platform.machine().lower()
    return "linux/" + {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
