"""The provider interface: small on purpose, so a VM-per-kernel provider can be added later.

A provider checks that it can run here (:meth:`Provider.preflight`), gives a ready-to-use
:class:`ClusterHandle` (:meth:`Provider.provision`: create, or attach to, a cluster with Cilium
installed) and removes what it created (:meth:`Provider.teardown`). Datapath readiness and the
cluster facts are common to every provider and live in :mod:`pytest_kpr.cluster.cilium`.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Protocol, Sequence, runtime_checkable

from ..k8s.api import ExecResult, KubeAPI

#: Progress lines go to the terminal while a long step runs ("creating kind cluster kpr ...").
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ProviderConfig:
    """What a provider needs of the run's settings, and nothing else (the options table stays in run/; a provider of
    one's own gets the full Settings through the ``pytest_kpr_provider`` hook)."""

    cluster_name: str = "kpr"
    artifacts: Path = Path("kpr-artifacts")
    cilium_version: str = ""
    cilium_chart: str = "cilium/cilium"
    clusters_dir: Path | None = None
    profile: str = "default"
    helm_values: tuple[Path, ...] = ()
    kind_config: Path = Path("clusters/kind/kpr.yaml")
    node_image: str = ""
    probe_image: str = ""
    reuse_cluster: bool = False
    keep_cluster: bool = False
    kubeconfig: Path | None = None
    context: str | None = None
    node_shell_image: str = "busybox:1.36.1"
    timeout_scale: float = 1.0
    #: tool name -> the executable given on the command line (--kpr-<tool>-bin); a tool not named here comes from PATH
    tools: dict[str, Path] = field(default_factory=dict)

    def binary(self, name: str) -> str | None:
        """The path of an external tool: the option if given, else PATH. None when it is not there."""
        explicit = self.tools.get(name)
        if explicit is not None:
            return str(explicit) if explicit.is_file() and os.access(explicit, os.X_OK) else None
        return shutil.which(name)

    def profile_file(self) -> Path | None:
        """The profile's Helm values overlay (clusters/profiles/<name>.yaml), if the clusters dir has profiles."""
        if self.clusters_dir is None:
            return None
        p = self.clusters_dir / "profiles" / f"{self.profile}.yaml"
        return p if p.is_file() else None

    def values_file(self, series: str) -> Path | None:
        """The per-minor Helm values file (``values-1.18.yaml``) if the clusters dir has one."""
        if self.clusters_dir is None:
            return None
        p = self.clusters_dir / "cilium" / f"values-{series}.yaml"
        return p if p.is_file() else None


@runtime_checkable
class NodeRunner(Protocol):
    """Runs a command on a node's host (network) namespace: ``docker exec`` on kind, a pod elsewhere."""

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> ExecResult: ...


@runtime_checkable
class OutsideClient(Protocol):
    """The test runner's host as a client outside the cluster (NodePort from outside)."""

    def reaches(self, ip: str) -> bool:
        """Whether packets to ``ip`` take a specific route from here (not the default route)."""

    def http(self, url: str, timeout: float, source_port: int | None = None) -> Any:
        """An HTTP GET (from ``source_port``, if given: one flow, repeatable); a :class:`~pytest_kpr.traffic.probes.ProbeResult`."""

    def can_send_raw(self) -> bool:
        """Whether this host may send a crafted packet (CAP_NET_RAW)."""

    def raw_syn(self, ip: str, port: int, timeout: float) -> Any:
        """One raw TCP SYN; a :class:`~pytest_kpr.traffic.probes.ProbeResult`. Only after ``reaches`` and ``can_send_raw``."""

    def udp_icmp(self, ip: str, port: int, timeout: float, sport: int | None = None) -> Any:
        """One UDP datagram (DF set) from a raw socket and the ICMP error about it (IPv4); a
        :class:`~pytest_kpr.traffic.probes.ProbeResult`. Only after ``reaches`` and ``can_send_raw``."""

    def source_address(self, ip: str) -> str | None:
        """The address this host's packets to ``ip`` carry (what a backend preserving the client's address sees)."""

    def via(self, node_ip: str, addresses: Sequence[str]) -> ContextManager[str | None]:
        """While the context lasts, packets to each of ``addresses`` (VIPs, externalIPs) go to the node at ``node_ip``;
        yields None, or why they cannot (one line)."""


@dataclass
class ClusterHandle:
    """A cluster the suites can use: its API, a way onto its nodes, and whether the plugin created it."""

    name: str
    provider: str
    kube: KubeAPI
    nodes: NodeRunner
    created: bool
    kubeconfig: Path | None = None
    context: str | None = None
    outside: OutsideClient | None = None


@runtime_checkable
class Provider(Protocol):
    name: str

    def preflight(self) -> None:
        """Raise :class:`~pytest_kpr.core.errors.Unavailable` (one line: what is missing, how to get it) if this
        provider cannot run here. Must be fast and must not change anything."""

    def provision(self, progress: Progress) -> ClusterHandle:
        """Create or attach to the cluster and make sure Cilium is installed. Does not wait for readiness."""

    def teardown(self, progress: Progress) -> None:
        """Remove what :meth:`provision` created, unless asked to keep it. Never removes anything else."""


@runtime_checkable
class SharedProvider(Provider, Protocol):
    """A provider whose cluster several processes can use (pytest-xdist workers, :mod:`pytest_kpr.run.shared_run`):
    :meth:`share` says, as JSON, what another process needs to :meth:`attach` to what :meth:`provision` made.
    After ``attach``, :meth:`teardown` removes what the provisioning process created (the last worker out
    calls it)."""

    def share(self, handle: ClusterHandle) -> dict[str, Any]: ...

    def attach(self, shared: dict[str, Any], progress: Progress) -> ClusterHandle: ...


@runtime_checkable
class UpgradableProvider(Provider, Protocol):
    """A provider that can change the Cilium version of its cluster (pytest_kpr.scenarios.upgrade_run)."""

    def helm_values(self) -> dict[str, Any]:
        """The install's user-supplied Helm values (``helm get values``), what an upgrade must carry over."""

    def upgrade(self, to_version: str, from_version: str, progress: Progress) -> None:
        """Start moving Cilium to ``to_version`` the way Cilium's upgrade guide says; return once the new
        DaemonSet spec is applied. The caller watches the roll (pytest_kpr.scenarios.upgrade.RollWatch)."""
