"""What explains a failed setup (provision, install, readiness, facts), collected while the cluster still exists.

Written under ``<evidence>/setup-failure/``: the provider's own view (kind: ``helm status`` and the applied values; the
cluster's logs come from the provider's ``collect_logs`` just before it deletes the cluster), the Cilium pods as the
API shows them and their recent logs, the events of the Cilium namespace, each reachable agent's
``cilium-dbg status --verbose``, and ``cilium sysdump`` when the ``cilium`` CLI is on PATH (``--kpr-no-sysdump`` turns it
off; never on an existing cluster: its archive is the CLI's, and would not go through the secret filter every other file
goes through, pytest_kpr.evidence.store.put_text). Every piece is best effort: what cannot be collected is written down
as such, never raised.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .agent import agent_pods, agents
from ..cluster import agents as _where
from ..cluster.provider import ClusterHandle
from ..evidence.store import put_text, safe_name
from ..k8s.api import KubeAPI, pod_ready

#: lines of each Cilium pod's log kept (the end: the error is usually last)
LOG_LINES = 300


def _write(dest: Path, name: str, text: str, files: list[Path]) -> None:
    # ``name`` holds a pod's or a node's name (from the cluster, or a recording): one file name, never a path
    files.append(put_text(dest / safe_name(name), text if text.endswith("\n") or not text else text + "\n", root=dest))


def _tail(text: str, n: int = LOG_LINES) -> str:
    lines = text.splitlines()
    return "\n".join(([f"[{len(lines) - n} earlier lines not kept]"] if len(lines) > n else []) + lines[-n:])


def _pods(kube: KubeAPI, dest: Path, files: list[Path]) -> None:
    import yaml

    pods = kube.list("Pod", _where.CILIUM_NAMESPACE)
    cilium = [p for p in pods if "cilium" in p["metadata"]["name"]]
    summary = {p["metadata"]["name"]: {"node": p.get("spec", {}).get("nodeName"), "status": p.get("status", {})} for p in cilium}
    _write(dest, "cilium-pods.yaml", yaml.safe_dump(summary, sort_keys=True) if summary else "no Cilium pods\n", files)
    for p in cilium:
        name = p["metadata"]["name"]
        try:
            text = _tail(kube.logs(_where.CILIUM_NAMESPACE, name))
        except Exception as e:  # noqa: BLE001 - best effort
            text = f"could not read the log: {e}"
        _write(dest, f"log-{name}.txt", text, files)


def _events(kube: KubeAPI, dest: Path, files: list[Path]) -> None:
    events = kube.list("Event", _where.CILIUM_NAMESPACE)
    events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    lines = [f"{e.get('lastTimestamp') or e.get('eventTime') or '?'}\t{e.get('type', '')}\t{e.get('reason', '')}\t"
             f"{(e.get('involvedObject') or {}).get('kind', '')}/{(e.get('involvedObject') or {}).get('name', '')}\t{e.get('message', '')}"
             for e in events]
    _write(dest, f"events-{_where.CILIUM_NAMESPACE}.txt", "\n".join(lines) if lines else "no events\n", files)


def _agent_status(kube: KubeAPI, dest: Path, exec_timeout: float, files: list[Path]) -> None:
    if not agent_pods(kube):
        _write(dest, "agent-status.txt", "no cilium-agent pod to ask\n", files)
        return
    for a in agents(kube, exec_timeout=exec_timeout, retry_timeout=5.0):
        try:
            r = a.exec([a.detect_binary(), "status", "--verbose"])
            text = r.stdout if r.ok else f"exit {r.returncode}: {r.stderr}{r.stdout}"
        except Exception as e:  # noqa: BLE001 - an agent that does not answer is part of the story
            text = f"could not ask the agent: {e}"
        _write(dest, f"agent-status-{a.node}.txt", text, files)


def _sysdump(kubeconfig: Path | None, dest: Path, files: list[Path], progress: Callable[[str], None]) -> None:
    cli = shutil.which("cilium")
    if cli is None:
        return
    progress(f"cilium sysdump into {dest} (the cilium CLI is on PATH; --kpr-no-sysdump skips it)")
    env = {**os.environ, **({"KUBECONFIG": str(kubeconfig)} if kubeconfig else {})}
    try:
        r = subprocess.run([cli, "sysdump", "--output-filename", str(dest / "cilium-sysdump")], capture_output=True, text=True,
                           timeout=600, env=env)
        _write(dest, "cilium-sysdump.log", r.stdout + r.stderr + f"\nexit {r.returncode}\n", files)
    except (OSError, subprocess.SubprocessError) as e:
        _write(dest, "cilium-sysdump.log", f"could not run cilium sysdump: {e}\n", files)


def setup_bundle(provider: Any, handle: Any, settings: Any, dest: Path, exec_timeout: float,
                 progress: Callable[[str], None]) -> list[Path]:
    """Collect what explains a failed setup into ``dest``; the files written."""
    files: list[Path] = []
    own = getattr(provider, "diagnostics", None)
    if own is not None:
        try:
            for name, text in own().items():
                _write(dest, name, text, files)
        except Exception as e:  # noqa: BLE001
            _write(dest, "provider.txt", f"could not collect the provider's diagnostics: {e}\n", files)
    kube = handle.kube if handle is not None else (provider.diagnostics_kube() if hasattr(provider, "diagnostics_kube") else None)
    if kube is None:
        _write(dest, "cluster.txt", "no cluster API to read (the cluster was not created)\n", files)
    else:
        for name, step in (("pods", lambda: _pods(kube, dest, files)), ("events", lambda: _events(kube, dest, files)),
                           ("agent-status", lambda: _agent_status(kube, dest, exec_timeout, files))):
            try:
                step()
            except Exception as e:  # noqa: BLE001
                _write(dest, f"{name}-error.txt", f"could not collect the {name}: {e}\n", files)
    if str(getattr(settings, "provider", "")) == "existing":
        _write(dest, "cilium-sysdump.txt", "cilium sysdump not run: the cluster is not the run's own, and the archive would "
                                           "not go through the evidence's secret filter (run it yourself if you need it)\n", files)
    elif not getattr(settings, "no_sysdump", False):
        _sysdump(getattr(handle, "kubeconfig", None) or getattr(provider, "kubeconfig_path", None), dest, files, progress)
    return files


@dataclass(frozen=True)
class FailureSnapshot:
    """What the datapath looked like when a test failed: the bundle's text by title (what is written), and what was
    read from it where it was collected (the agents' drop counters, parsed, by node; a node whose list did not parse is
    absent), so nothing is parsed back from the text."""
    sections: dict[str, str]
    drops: dict[str, Any] = field(default_factory=dict)

    @property
    def pods(self) -> list[str]:
        return [line for line in self.sections.get("pods", "").splitlines() if line]


def failure_snapshot(handle: ClusterHandle, namespaces: list[str], exec_timeout: float = 30.0) -> FailureSnapshot:
    """What the datapath looked like when a test failed: per agent ``service list``, ``bpf lb list``, ``lb/maps-dump``
    (the master entries' COUNT: which slots new connections pick), ``bpf ct list global``, ``bpf metrics list`` (one exec per agent); the pods of the run's namespaces, by title (:func:`pytest_kpr.evidence.store.write_sections`
    writes them).
    Collection problems are recorded in the bundle, never raised (the test already failed)."""
    from ..parse.errors import ParseError
    from ..parse.metrics import parse_bpf_metrics_list

    sections: dict[str, str] = {}
    drops: dict[str, Any] = {}
    views = (("service list", ("service", "list")), ("bpf lb list", ("bpf", "lb", "list")),
             ("lb maps-dump", ("shell", "--", "lb/maps-dump")), ("bpf ct list global", ("bpf", "ct", "list", "global")),
             ("bpf metrics list", ("bpf", "metrics", "list")))
    for a in agents(handle.kube, exec_timeout=exec_timeout, retry_timeout=5.0):
        try:  # one exec per agent
            results = a.run_many(*(args for _, args in views))
            texts = [r.stdout if r.ok else f"exit {r.returncode}: {r.stderr}" for r in results]
        except Exception as e:  # noqa: BLE001 - evidence collection must not mask the failure
            texts = [f"could not collect: {e}"] * len(views)
        for (title, _), text in zip(views, texts):
            sections[f"{a.node}: {title}"] = text
        try:  # the drop counters, parsed here: the plugin compares them with the last reading
            drops[a.node] = parse_bpf_metrics_list(texts[-1])
        except ParseError:
            pass
    lines = []
    for ns in namespaces:
        try:
            for p in handle.kube.list("Pod", ns):
                st = p.get("status", {})
                ready = pod_ready(p)
                lines.append(f"{ns}/{p['metadata']['name']}\t{st.get('phase')}\tready={ready}\tnode={p.get('spec', {}).get('nodeName')}\tip={st.get('podIP')}")
        except Exception as e:  # noqa: BLE001
            lines.append(f"{ns}: could not list pods: {e}")
    sections["pods"] = "\n".join(lines) + "\n"
    return FailureSnapshot(sections, drops)
