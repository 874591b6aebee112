"""KprSession: the plugin's face of one run. The run itself is pytest-free (:class:`pytest_kpr.run.run.KprRun`); here it
gets pytest as its host (:class:`PytestHost`: the terminal, ``pytest.exit``, the ``pytest_kpr_*`` hooks), and the plugin
registers it as the plugin object ``kpr-session`` (as pytest-xdist registers its scheduler), whose hooks feed it what only
pytest sees: each test's cost, the collection header, the xdist workers' counts.

It provisions lazily: only when a selected ``kpr`` test (or a ``kpr_*`` fixture) needs a cluster. It cleans up at session
end, also after a failure or Ctrl-C, and never deletes what it did not create.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn

import pytest

from ..cluster.provider import Provider
from ..core.wait import Timeouts
from ..k8s.api import KubeAPI
from ..run.ownership import NAMESPACE_PREFIX, OWNER_LABEL, OWNER_VALUE, PRIVILEGED_NAMESPACES, RUN_LABEL, RunObjectsKube
from ..run.run import EXIT_INTERNAL, EXIT_PROVISIONING, EXIT_UNAVAILABLE, KprRun
from ..run.settings import ProviderName, Settings
from . import markers

__all__ = ["EXIT_INTERNAL", "EXIT_PROVISIONING", "EXIT_UNAVAILABLE", "KprSession", "NAMESPACE_PREFIX", "OWNER_LABEL", "OWNER_VALUE",
           "PLUGIN_NAME", "PRIVILEGED_NAMESPACES", "PytestHost", "RUN_LABEL", "RunObjectsKube", "header_lines"]

#: the name the run is registered under: ``config.pluginmanager.get_plugin("kpr-session")`` is another plugin's way to it
PLUGIN_NAME = "kpr-session"


class PytestHost:
    """pytest as the run's host (:class:`pytest_kpr.run.run.RunHost`)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.rootpath = Path(config.rootpath)
        self.arguments = [str(a) for a in config.invocation_params.args]
        self.workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)

    def _terminal(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def progress(self, line: str) -> None:
        """On the terminal as it happens, also while a test's fixtures run under output capture (as pytest's live logging
        does): a long wait (an install, an upgrade's roll) never leaves the terminal still."""
        tr = self._terminal()
        if tr is None:
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        uncaptured = capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext()
        with uncaptured:
            tr.ensure_newline()
            tr.write_line(f"[kpr] {line}")

    def show_exit(self, message: str) -> bool:
        """The run's last word, red, by the terminal reporter; pytest's ``! _pytest.outcomes.Exit: ... !`` trailer then does
        not repeat it (hooks.ExitTrailer)."""
        tr = self._terminal()
        if tr is None:
            return False
        tr.ensure_newline()
        for line in message.splitlines():
            tr.write_line(line, red=True, bold=True)
        return True

    def exit(self, message: str, returncode: int) -> NoReturn:
        pytest.exit(message, returncode=returncode)

    def report_problems(self, first_line: str, problems: list[str]) -> bool:
        tr = self._terminal()
        if tr is None:
            return False
        tr.ensure_newline()
        tr.write_line(f"[kpr] {first_line}", red=True)
        for problem in problems:
            tr.write_line(f"[kpr]   - {problem}")
        return True

    def kube_client(self, kubeconfig: Path | None, context: str | None) -> KubeAPI | None:
        return self.config.hook.pytest_kpr_kube_client(config=self.config, kubeconfig=kubeconfig, context=context)  # type: ignore[no-any-return]

    def provider(self, settings: Settings, timeouts: Timeouts,
                 kube_factory: Callable[[Path | None, str | None], KubeAPI]) -> Provider | None:
        return self.config.hook.pytest_kpr_provider(  # type: ignore[no-any-return]
            config=self.config, settings=settings, timeouts=timeouts, kube_factory=kube_factory)

    def hand_over(self, part: dict[str, Any]) -> None:
        """On a pytest-xdist worker: the part goes to the controller with the worker's ``workeroutput``
        (pytest_kpr.plugin.reporter reads it in ``pytest_testnodedown``)."""
        output = getattr(self.config, "workeroutput", None)
        if output is not None:
            output["kpr_part"] = part


class KprSession(KprRun):
    """The run with pytest as its host, and the plugin object ``kpr-session``: the hooks below are the run's own."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        super().__init__(settings, PytestHost(config))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[Any]:
        """Where each kpr test's cost to the cluster starts (setup, call and teardown: its teardown report carries it, for
        the summary and cluster.json); and the test the recording charges each request to."""
        if item.get_closest_marker(markers.KPR) is None:
            return (yield)
        self.test_cost_start = self.cost.copy()  # its teardown report carries the difference (hooks: reporter.carry)
        self.current_test = item.nodeid  # what the recording charges each request to
        try:
            return (yield)
        finally:
            self.current_test = None

    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str]:
        """The cluster's facts under pytest's collection line (or why there is no cluster)."""
        if self.facts is not None:
            return self.facts.header_lines()
        if self.unavailable:
            return [self.unavailable]
        return []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist controller: the workers collected (and deselected), so the 'not selected' hint comes from them."""
        self.deselected_kpr = max(self.deselected_kpr, int(getattr(node, "workeroutput", {}).get("kpr_deselected", 0)))


def header_lines(s: Settings) -> list[str]:
    """pytest's header lines for a kpr run: the provider, the Cilium version, the profile, the families, the artifacts."""
    src = " (pinned in clusters/versions.yaml)" if s.sources.get("cilium_version") == "pins" else ""
    if s.provider is ProviderName.FAKE:
        faults = ", ".join(f"{n}={v!r}" if v is not True else n for n, v in s.fake_faults) or "none"
        return [f"kpr: provider fake (an in-memory cluster), Cilium {s.cilium_version}, profile {s.profile}{_families(s)}, "
                f"faults: {faults}, artifacts {s.artifacts}",
                "kpr: THIS IS A DRY RUN: the fake cluster answers from pytest-kpr's own rules; nothing about a real datapath is tested"]
    where = f"kubeconfig {s.kubeconfig or '$KUBECONFIG'}" if s.provider is ProviderName.EXISTING else f"kind cluster {s.cluster_name}"
    cilium = "" if s.provider is ProviderName.EXISTING else f", Cilium {s.cilium_version}{src}"
    return [f"kpr: provider {s.provider} ({where}){cilium}, profile {s.profile}{_families(s)}, artifacts {s.artifacts}"]


def _families(s: Settings) -> str:
    """The header's word on the families the family-dependent suites run for, when it is more than IPv4."""
    fams = s.ip_families
    return "" if tuple(fams) == ("IPv4",) else f", families {'+'.join(fams)}"
