"""External tools (kind, kubectl, helm, docker): found on PATH or given by option, never downloaded."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Sequence

from ..core.errors import Unavailable
from ..k8s.api import ExecResult

#: How to get each tool, for the one-line "missing" message.
HOW_TO_GET = {
    "docker": "install Docker and start its daemon (https://docs.docker.com/engine/install/)",
    "kind": "install kind v0.20+ (https://kind.sigs.k8s.io/docs/user/quick-start/#installation) or pass --kpr-kind-bin",
    "kubectl": "install kubectl (https://kubernetes.io/docs/tasks/tools/) or pass --kpr-kubectl-bin",
    "helm": "install helm 3 (https://helm.sh/docs/intro/install/) or pass --kpr-helm-bin",
}


@dataclass(frozen=True)
class Tool:
    name: str
    path: str

    def run(self, args: Sequence[str], *, timeout: float = 600.0, input: str | None = None, env: dict[str, str] | None = None) -> ExecResult:
        argv = (self.path, *args)
        try:
            cp = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, input=input, env=env, stdin=None if input else subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            return ExecResult(tuple(argv), 124, out, f"timed out after {timeout:.0f}s", self.name)
        return ExecResult(tuple(argv), cp.returncode, cp.stdout, cp.stderr, self.name)


def require(name: str, path: str | None, *, purpose: str) -> Tool:
    """The tool, or :class:`Unavailable` with what is missing and how to get it."""
    if not path:
        raise Unavailable(f"{name} not found on PATH, needed {purpose}: {HOW_TO_GET.get(name, 'install it')}")
    return Tool(name, path)


def docker_daemon_answers(docker: Tool) -> None:
    """Raise :class:`Unavailable` unless ``docker info`` reaches a daemon."""
    r = docker.run(["info", "--format", "{{.ServerVersion}}"], timeout=20)
    if not r.ok or not r.stdout.strip():
        reason = (r.stderr or r.stdout).strip().splitlines()
        detail = reason[-1] if reason else f"exit {r.returncode}"
        raise Unavailable(
            f"no Docker daemon answers (`docker info`: {detail}): kind needs one, {HOW_TO_GET['docker']}, "
            "or use a running cluster with --kpr-provider=existing --kpr-kubeconfig=PATH"
        )
