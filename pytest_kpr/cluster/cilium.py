"""Cilium on a cluster: the Helm install and Cilium's upgrade procedure (readiness and the facts, read through the
agents, are :mod:`pytest_kpr.observe.readiness`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .agents import agent_pods
from ..core.errors import ProvisioningError
from ..k8s.api import KubeAPI
from ..core.versions import Version
from ..core.wait import Timeouts, eventually
from .provider import Progress, ProviderConfig
from .tools import Tool


def helm_values_files(settings: ProviderConfig, version: str) -> list[Path]:
    """The values files for a Cilium version, in the order Helm applies them (later wins)."""
    if settings.clusters_dir is None:
        raise ProvisioningError("no clusters/ directory with Helm values (pass --kpr-clusters-dir)")
    files = [settings.clusters_dir / "cilium" / "values-kpr.yaml"]
    per_minor = settings.values_file(Version.parse(version).minor_series)
    if per_minor is not None:
        files.append(per_minor)
    profile = settings.profile_file()
    if profile is not None:
        files.append(profile)
    files.extend(settings.helm_values)
    return files


def helm_install_args(settings: ProviderConfig, cluster: str, kubeconfig: Path | None) -> list[str]:
    version = settings.cilium_version
    args = ["upgrade", "--install", "cilium", settings.cilium_chart, "--version", version, "--namespace", "kube-system"]
    for f in helm_values_files(settings, version):
        args += ["--values", str(f)]
    # kind's API server inside the docker network: <cluster>-control-plane:6443
    args += ["--set", f"k8sServiceHost={cluster}-control-plane"]
    if kubeconfig is not None:
        args += ["--kubeconfig", str(kubeconfig)]
    return args


def helm_install(helm: Tool, settings: ProviderConfig, cluster: str, kubeconfig: Path | None, progress: Progress, timeout: float) -> None:
    args = helm_install_args(settings, cluster, kubeconfig)
    progress(f"installing Cilium {settings.cilium_version} ({settings.cilium_chart}) with helm")
    r = helm.run(args, timeout=timeout)
    if not r.ok:
        msg = (r.stderr or r.stdout).strip().splitlines()
        last = msg[-1] if msg else f"exit {r.returncode}"
        hint = ""
        if "repo cilium not found" in last or "failed to download" in last or "no cached repo" in last:
            hint = " (add the chart repo first: helm repo add cilium https://helm.cilium.io, or pass a local chart with --kpr-cilium-chart)"
        raise ProvisioningError(f"helm install of Cilium {settings.cilium_version} failed: {last}{hint}")


PREFLIGHT_RELEASE = "cilium-preflight"
PREFLIGHT_CHECK = "cilium-pre-flight-check"  # the pre-flight DaemonSet and Deployment


def helm_get_values(helm: Tool, kubeconfig: Path | None, context: str | None = None) -> dict[str, Any]:
    """The install's user-supplied values: ``helm get values cilium -n kube-system -o yaml``."""
    import yaml

    r = helm.run(["get", "values", "cilium", "--namespace", "kube-system", "--output", "yaml", *_kc(kubeconfig, context)], timeout=120)
    if not r.ok:
        raise ProvisioningError(f"`helm get values cilium` failed: {(r.stderr or r.stdout).strip()[-300:]}")
    data = yaml.safe_load(r.stdout) or {}
    return data if isinstance(data, dict) else {}


def helm_diagnostics(helm: Tool, kubeconfig: Path | None, context: str | None = None) -> dict[str, str]:
    """``helm status cilium`` and the values it applied (``helm get values --all``), each as a file's text; a command
    that fails says so in its file (a failed install is when this is read)."""
    out = {}
    for name, args in (("helm-status.txt", ["status", "cilium", "--namespace", "kube-system"]),
                       ("helm-values.yaml", ["get", "values", "cilium", "--namespace", "kube-system", "--all", "--output", "yaml"])):
        r = helm.run([*args, *_kc(kubeconfig, context)], timeout=120)
        out[name] = r.stdout if r.ok else f"`helm {' '.join(args)}` exit {r.returncode}: {(r.stderr or r.stdout).strip()}\n"
    return out


def _kc(kubeconfig: Path | None, context: str | None = None) -> list[str]:
    return (["--kubeconfig", str(kubeconfig)] if kubeconfig is not None else []) + (["--kube-context", context] if context else [])


def helm_upgrade(helm: Tool, kube: KubeAPI, settings: ProviderConfig, kubeconfig: Path | None, from_version: str, to_version: str,
                 saved_values: Path, timeouts: Timeouts, progress: Progress, context: str | None = None) -> None:
    """Cilium's upgrade procedure, step by step (Documentation/operations/upgrade.rst):

    1. the pre-flight check: ``helm install cilium-preflight <chart> --version <to> --set preflight.enabled=true
       --set agent=false --set operator.enabled=false`` plus ``k8sServiceHost``/``Port`` (kube-proxy-free); wait until
       its DaemonSet is Ready on every node that runs an agent and its Deployment is 1/1 (the images are pulled),
       then remove it;
    2. ``helm upgrade cilium <chart> --version <to>`` with the saved values (``helm get values``: never
       ``--reuse-values`` across minors), the target minor's values and ``upgradeCompatibility=<from minor>``.

    Returns once helm has applied the new DaemonSet; the caller watches the agents roll."""
    import yaml

    values = yaml.safe_load(saved_values.read_text()) or {}
    chart, frm = settings.cilium_chart, Version.parse(from_version)
    host, port = values.get("k8sServiceHost"), values.get("k8sServicePort")
    pre = ["install", PREFLIGHT_RELEASE, chart, "--version", to_version, "--namespace", "kube-system",
           "--set", "preflight.enabled=true", "--set", "agent=false", "--set", "operator.enabled=false"]
    pre += [*(["--set", f"k8sServiceHost={host}"] if host else []), *(["--set", f"k8sServicePort={port}"] if port else []), *_kc(kubeconfig, context)]
    progress(f"pre-flight check for Cilium {to_version} (pre-pulls the images on every node)")
    r = helm.run(pre, timeout=timeouts.CILIUM_READY)
    if not r.ok:
        raise ProvisioningError(f"helm install {PREFLIGHT_RELEASE} failed: {(r.stderr or r.stdout).strip()[-300:]}")
    try:
        n_agents = len(agent_pods(kube))

        def preflight_ready() -> tuple[int, int]:
            ds = kube.get("DaemonSet", PREFLIGHT_CHECK, "kube-system") or {}
            dep = kube.get("Deployment", PREFLIGHT_CHECK, "kube-system") or {}
            return int((ds.get("status") or {}).get("numberReady", 0)), int((dep.get("status") or {}).get("readyReplicas", 0))

        eventually(preflight_ready, until=lambda rd: rd[0] >= n_agents and rd[1] >= 1, timeout=timeouts.CILIUM_READY,
                   what=f"the pre-flight DaemonSet Ready on all {n_agents} agent nodes and its Deployment 1/1",
                   describe=lambda rd: f"DaemonSet {rd[0]}/{n_agents} Ready, Deployment {rd[1]}/1", progress=progress)
    finally:
        helm.run(["uninstall", PREFLIGHT_RELEASE, "--namespace", "kube-system", *_kc(kubeconfig, context)], timeout=300)
    args = ["upgrade", "cilium", chart, "--version", to_version, "--namespace", "kube-system", "--values", str(saved_values)]
    per_minor = settings.values_file(Version.parse(to_version).minor_series)
    if per_minor is not None:
        args += ["--values", str(per_minor)]
    args += ["--set", f"upgradeCompatibility={frm.major}.{frm.minor}", *_kc(kubeconfig, context)]
    progress(f"helm upgrade cilium {from_version} -> {to_version} (saved values + values-{Version.parse(to_version).minor_series}.yaml, "
             f"upgradeCompatibility={frm.major}.{frm.minor})")
    r = helm.run(args, timeout=timeouts.CILIUM_READY)
    if not r.ok:
        raise ProvisioningError(f"helm upgrade of Cilium to {to_version} failed: {(r.stderr or r.stdout).strip()[-300:]}")
