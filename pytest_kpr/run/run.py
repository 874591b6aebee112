"""KprRun: one kpr run without pytest (provider, cluster, facts, namespaces, evidence dir, cost, outcomes).

It provisions lazily: only when a selected ``kpr`` test (or a ``kpr_*`` fixture) needs a cluster. It
cleans up at session end, also after a failure or Ctrl-C, and never deletes what it did not create.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn, Protocol

from ..observe import readiness
from ..cluster.facts import ClusterFacts
from ..cluster.provider import ClusterHandle, Provider, SharedProvider
from .recording import Recorder, RecordingKube, RecordingNodes, RecordingOutside
from .cost import Cost, CountingKube, CountingNodes
from ..core.errors import KprError, ProvisioningError, SettingsError, Unavailable
from ..k8s.api import KubeAPI
from .settings import IfUnavailable, ProviderName, Settings
from ..evidence.runrecord import SETUP_PHASES, RunRecord
from .shared_run import SharedRun, by_worker, run_dir
from .sums import Sums
from .summary import RunSummary
from ..core.wait import Timeouts
from ..core import clock, tokens
from ..core.inputs import path_component
from .ownership import Ownership

__all__ = ["EXIT_INTERNAL", "EXIT_PROVISIONING", "EXIT_UNAVAILABLE", "KprRun", "PlainHost", "RunEnded", "RunHost"]

#: Exit status of ``pytest -m kpr`` when the environment cannot run the suites (no Docker, no kind, ...).
EXIT_UNAVAILABLE = 4
#: Exit status when provisioning or readiness failed.
EXIT_PROVISIONING = 3
#: Exit status when pytest-kpr itself failed before the suites (a bug, not a verdict on the machine or the cluster):
#: EX_SOFTWARE of sysexits.h, so CI can tell a crash from exit 3 and 4 (pytest's own INTERNALERROR is also 3).
EXIT_INTERNAL = 70


class RunHost(Protocol):
    """What a run needs from the program running it. The plugin's host is pytest (pytest_kpr.plugin.session.PytestHost):
    its terminal, pytest.exit and the ``pytest_kpr_*`` hooks; :class:`PlainHost` runs without pytest."""

    #: the project root (the run record's git commit) and the run's command-line arguments
    rootpath: Path
    arguments: list[str]
    #: pytest-xdist's worker input when the run is one of its workers (shares one cluster with the others), else None
    workerinput: dict[str, Any] | None

    def progress(self, line: str) -> None:
        """Show a progress line at once."""

    def show_exit(self, message: str) -> bool:
        """Show the run's last word; False when there is nowhere to show it."""

    def exit(self, message: str, returncode: int) -> NoReturn:
        """End the run with ``returncode``."""

    def report_problems(self, first_line: str, problems: list[str]) -> bool:
        """Show why the machine cannot run the suites: a first line, then one per problem. False with nowhere to show it."""

    def kube_client(self, kubeconfig: Path | None, context: str | None) -> KubeAPI | None:
        """Another plugin's Kubernetes client (hookspecs.pytest_kpr_kube_client), or None for the real one."""

    def provider(self, settings: Settings, timeouts: Timeouts,
                 kube_factory: Callable[[Path | None, str | None], KubeAPI]) -> Provider | None:
        """Another plugin's provider (hookspecs.pytest_kpr_provider; the fake is one), or None for the named built-in one."""

    def hand_over(self, part: dict[str, Any]) -> None:
        """A pytest-xdist worker's part, for the controller (pytest-xdist's ``workeroutput``)."""


class RunEnded(Exception):
    """The run ended itself under a :class:`PlainHost`: its last word and exit status."""

    def __init__(self, message: str, returncode: int):
        super().__init__(message)
        self.returncode = returncode


class PlainHost:
    """A host without pytest: progress lines kept in :attr:`lines`, the exit raised as :class:`RunEnded`, and the provider
    given to it (None: the built-in one the settings name)."""

    def __init__(self, rootpath: Path, provider: Provider | None = None, arguments: list[str] | None = None):
        self.rootpath = rootpath
        self.arguments = list(arguments or [])
        self.workerinput: dict[str, Any] | None = None
        self.lines: list[str] = []
        self._provider = provider

    def progress(self, line: str) -> None:
        self.lines.append(f"[kpr] {line}")

    def show_exit(self, message: str) -> bool:
        self.lines.extend(message.splitlines())
        return True

    def exit(self, message: str, returncode: int) -> NoReturn:
        raise RunEnded(message, returncode)

    def report_problems(self, first_line: str, problems: list[str]) -> bool:
        self.lines.extend([f"[kpr] {first_line}", *(f"[kpr]   - {p}" for p in problems)])
        return True

    def kube_client(self, kubeconfig: Path | None, context: str | None) -> KubeAPI | None:
        return None

    def provider(self, settings: Settings, timeouts: Timeouts,
                 kube_factory: Callable[[Path | None, str | None], KubeAPI]) -> Provider | None:
        return self._provider

    def hand_over(self, part: dict[str, Any]) -> None:
        return None  # no controller to hand it to


class KprRun:
    """One kpr run: provider, cluster handle, facts, evidence, cost and outcomes, with no pytest in it. What it needs from
    the program running it (the terminal, the exit, the hooks other plugins implement) comes through ``host``."""

    def __init__(self, settings: Settings, host: RunHost):
        self.host = host
        self.replayed: Any = None  # --kpr-provider=replay: the provider, read first (the run takes the recording's id and seed)
        if settings.provider is ProviderName.REPLAY and settings.replay is not None:
            settings, self.replayed = adopt_recording(settings)
        self.settings = settings
        from ..evidence.store import register_root

        register_root(settings.artifacts)  # every evidence file under it is checked for symlinks from there down
        self.timeouts = Timeouts().scaled(settings.timeout_scale)
        self.run_id = str(self.replayed.meta["run_id"]) if self.replayed is not None and self.replayed.meta.get("run_id") \
            else secrets.token_hex(4)
        self.failed_tests = 0
        #: a failure's bundle, by the exception (a module fixture's error fails each of its tests with the same one)
        self.bundles: dict[int, tuple[Path, str]] = {}
        #: every agent's drop counters at the last reading (after the facts, then at each failure), by node
        self.drop_counters: dict[str, Any] = {}
        self.drops_since = "the run began"
        #: the clock the run's waits and the evidence's durations ran on: "real", or "virtual" (the fake cluster's)
        self.clock_kind = "real"
        #: the message of the run's own exit, once the terminal showed it (pytest's trailer is then left out)
        self.exit_shown: str | None = None
        #: pytest's exit status as the session ends (results.json records it), and where results.json went
        self.exit_status: int | None = None
        self.results_file: Path | None = None
        #: settles exit_status from the run's outcomes (the plugin's rule: a run that judged nothing exits 5); called once,
        #: by settle_exit_status(run), before results.json is written with it
        self.settle_exit: Callable[[], None] | None = None
        #: the one line of the first ForeignObject (the run met an object of the same name that is not its own): the run
        #: stops there and exits EXIT_PROVISIONING, a set-up problem rather than a datapath verdict
        self.refused: str | None = None
        #: "SIGTERM" when the run was ended by it (plugin._end_cleanly_on_sigterm); Ctrl-C shows as exit status 2
        self.interrupted_by: str | None = None
        self.provider: Provider | None = None
        self.handle: ClusterHandle | None = None
        self.facts: ClusterFacts | None = None
        self.unavailable: str | None = None
        self.failed: str | None = None
        self.deselected_kpr = 0
        self.selected_kpr = 0
        self.collection_failed = False
        #: called at the end while the cluster still exists (end-of-run evidence)
        self.before_cleanup: list[Callable[[], None]] = []
        #: what the run's tests came to, summed from their reports where the run is summed up (pytest_kpr.run.sums)
        self.sums = Sums()
        #: the run summed up in its evidence: results.json, report.txt, cluster.json's cost, the recording, a worker's part
        self.summary = RunSummary(self)
        self._evidence: Any = None
        self._started = False
        self._stopped = False
        #: what the run cost the cluster (pytest_kpr.run.cost), in total (each test's: sums.cost_per_test)
        self.cost = Cost()
        #: the run's cost when the current kpr test began (its own cost is the difference at its teardown)
        self.test_cost_start = Cost()
        #: the test being run (set by the host around each kpr test; None between tests): what a recorded request is charged to
        self.current_test: str | None = None
        #: while a failure's bundle is collected (:meth:`diagnostics`): such requests are marked in the recording, and a replay
        #: neither needs nor misses them (a test that fails on one side only asks for a bundle there only)
        self.diagnosing = False
        self.recorder: Recorder | None = None if settings.no_recording else Recorder(lambda: clock.monotonic(), lambda: self.current_test,
                                                                                     diagnostic=lambda: self.diagnosing)
        if self.replayed is not None:
            self.replayed.player.diagnosing = lambda: self.diagnosing
        #: a pytest-xdist worker shares one cluster with the run's other workers (pytest_kpr.run.shared_run)
        self.shared: SharedRun | None = None
        self.joined: str | None = None  # "provisioned" or "attached"
        wi = host.workerinput
        if wi is not None and wi.get("testrunuid"):
            self.shared = SharedRun(run_dir(settings.artifacts, wi["testrunuid"]), wi["workerid"], int(wi["workercount"]))
        #: on the xdist controller: the workers' evidence dir (end_on_controller)
        self.merged_evidence_dir: Path | None = None
        #: what ran and how far it got, phase by phase: cluster.json from the first moment (pytest_kpr.evidence.runrecord)
        self.record = RunRecord(run_meta(settings, host, self.run_id))
        #: whose cluster objects are this run's, and their removal (pytest-free: pytest_kpr.run.ownership)
        self.ownership = Ownership(settings, self.run_id, self.timeouts, self.progress)

    # -- output -------------------------------------------------------------------------------------

    def progress(self, line: str) -> None:
        """A progress line as it happens (the host shows it at once, also while a test's output is captured)."""
        self.host.progress(line)

    # -- lifecycle ----------------------------------------------------------------------------------

    @contextmanager
    def diagnostics(self) -> Iterator[None]:
        """Around the requests that collect a failure's bundle (see ``diagnosing``)."""
        self.diagnosing = True
        try:
            yield
        finally:
            self.diagnosing = False

    def start(self) -> None:
        """Provision (or attach), wait for the datapath, read the facts. Idempotent.

        On an environment that cannot run the suites: exit with one line (or remember the reason to
        skip, with ``--kpr-if-unavailable=skip``). On a provisioning failure: clean up, then exit.
        """
        if self._started:
            return
        self._started = True
        self.record.begin("preflight")
        try:
            provider = make_provider(self)  # (--kpr-replay naming no readable recording: Unavailable, one line)
            self.provider = provider
            # the fake cluster's time is virtual: the run's waits share it (a real cluster keeps the real clock)
            clock.install(getattr(provider, "clock", None) or clock.REAL)
            self.clock_kind = clock.current().kind
            self.summary.refuse_an_unsafe_evidence_dir()
            provider.preflight()
        except Unavailable as e:
            self.record.end(str(e))
            self.summary.write_record()
            if self.settings.if_unavailable is IfUnavailable.SKIP:
                self.unavailable = f"kpr cluster unavailable: {e}"
                self.progress(f"{e}; skipping kpr tests (--kpr-if-unavailable=skip)")
                return
            if self._report_unavailable(e):
                n = len(e.problems)
                self.exit(f"pytest-kpr: cannot run the kpr suites here ({n} problem{'s' if n > 1 else ''} above)", EXIT_UNAVAILABLE)
            self.exit(f"pytest-kpr: cannot run the kpr suites here: {e}", EXIT_UNAVAILABLE)
        except Exception as e:  # noqa: BLE001 - anything else from the preflight is pytest-kpr's own failure
            self._crash("preflight", e)
        try:
            self.record.begin("provision")
            self.summary.write_record()
            if hasattr(provider, "on_phase"):
                provider.on_phase = self._phase  # type: ignore[attr-defined]  # kind: "install" before its helm install
            handle = self._provision_or_attach(provider)
            ledger = getattr(handle.outside, "ledger", None)
            if ledger is not None:  # the routes it adds are written down with the run's id (kpr cleanup --run ID --routes)
                ledger.run_id = self.run_id
            if self.replayed is not None:  # the suites' tokens are the recorded run's
                tokens.install(self.replayed.token)
            if self.recorder is not None:  # what the run asks of the cluster from here on, and the answers (run.recording)
                self.recorder.meta = self.summary.recording_meta(handle)
                recorder, base = self.recorder, self.replayed.token if self.replayed is not None else secrets.token_hex
                tokens.install(lambda n: recorder.token(n, base))
                handle.kube = RecordingKube(handle.kube, self.recorder)  # type: ignore[assignment]
                handle.nodes = RecordingNodes(handle.nodes, self.recorder)  # type: ignore[assignment]
                if handle.outside is not None:
                    handle.outside = RecordingOutside(handle.outside, self.recorder)  # type: ignore[assignment]
            handle.kube = CountingKube(handle.kube, self.cost)  # type: ignore[assignment]
            s = self.settings
            handle.kube = self.ownership.bind(handle.kube)
            if hasattr(handle.nodes, "kube"):  # the node shells are the run's pods too (its pull secret, its labels)
                handle.nodes.kube = handle.kube  # type: ignore[attr-defined]
            if s.no_node_shell:
                from ..cluster.nodeshell import NoNodeShell

                handle.nodes = NoNodeShell()  # type: ignore[assignment]
            handle.nodes = CountingNodes(handle.nodes, self.cost)  # type: ignore[assignment]
            self.handle = handle
            if self.ownership.fixed_namespace is not None:  # named, so it must exist: checked before any wait, in one line
                self.ownership.create_namespace("check")
            from ..observe.agent import locate_agents

            self._phase("readiness")
            where = locate_agents(self.handle.kube, self.settings.cilium_namespace)
            self.progress(f"waiting for the Cilium datapath (every agent of {where} Ok, KubeProxyReplacement True)")
            states = readiness.wait_ready(self.handle.kube, self.timeouts, self.progress)
            self._phase("facts")
            self.facts = readiness.read_facts(self.handle, states, self.timeouts.EXEC)
            self.summary.write_cluster_json()
            refuse_kernels_below_the_floor(self.settings, self.facts)
            refuse_a_profile_that_did_not_take(self.settings, self.facts)
            self.drop_counters = readiness.drop_baseline(states)  # a failure's drops rise from here (read with the status)
            self._phase("suites")
        except KprError as e:
            self.failed = str(e)
            self._setup_failed(str(e))
            self.stop()
            self.exit(f"pytest-kpr: {e}", EXIT_PROVISIONING)
        except Exception as e:  # noqa: BLE001 - not a KprError: pytest-kpr's own failure, never a setup verdict
            phase = self.record.current["phase"] if self.record.current else "provision"
            self.stop()
            self._crash(phase, e)
        except BaseException as e:
            self.record.end(f"interrupted: {self.interrupted_by or type(e).__name__}")
            self.stop()
            self.summary.write_record()  # cluster.json says the phase was interrupted, not still running
            raise

    def _crash(self, phase: str, e: BaseException) -> None:
        """pytest-kpr failed in ``phase`` with an exception it did not expect: the phase is recorded as crashed (never as
        ok, never as a cluster failure), the traceback goes to ``crash.txt`` beside cluster.json, and the run ends with
        one line and EXIT_INTERNAL."""
        import traceback

        what = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
        where = ""
        try:
            from ..evidence.store import put_text

            d = self.evidence_dir
            put_text(d / "crash.txt", "".join(traceback.format_exception(type(e), e, e.__traceback__)))
            where = f"; traceback in {d / 'crash.txt'}"
        except OSError:
            pass
        if self.record.current:
            self.record.end(f"crashed: {what}")
        self.summary.write_record()
        self.exit(f"pytest-kpr: internal error during {phase} ({what}): a bug in pytest-kpr, not a verdict on this machine or "
                  f"cluster (exit status {EXIT_INTERNAL}){where}", EXIT_INTERNAL)

    def exit(self, message: str, returncode: int) -> NoReturn:
        """End the run with ``message`` as its last word and ``returncode`` (the host shows it, then ends the run)."""
        if self.host.show_exit(message):
            self.exit_shown = message
        self.host.exit(message, returncode)

    def _phase(self, name: str) -> None:
        self.record.begin(name)
        self.summary.write_record()

    def _setup_failed(self, error: str) -> None:
        """A phase before the suites failed: record it, and collect what explains it while the cluster still exists."""
        phase = self.record.current["phase"] if self.record.current else "provision"
        self.record.end(error)
        if phase in SETUP_PHASES:
            from ..observe.diagnose import setup_bundle

            dest = self.evidence_dir / "setup-failure"
            try:
                files = setup_bundle(self.provider, self.handle, self.settings, dest, self.timeouts.EXEC, self.progress)
                self.progress(f"{phase} failed: {len(files)} diagnostic files under {dest}")
            except Exception as e:  # noqa: BLE001 - the diagnosis must not hide the failure it explains
                self.progress(f"could not collect the diagnostics of the failed {phase}: {e}")
        self.summary.write_record()

    def _provision_or_attach(self, provider: Provider) -> ClusterHandle:
        """Without xdist: provision. A worker: the first to take the run's lock provisions, the others attach."""
        if self.shared is None:
            return provider.provision(self.progress)
        if not isinstance(provider, SharedProvider):
            raise KprError(f"provider {provider.name} cannot be shared by pytest-xdist workers (it has no share/attach); run without -n")
        got: list[ClusterHandle] = []

        def provision() -> dict[str, Any]:
            got.append(provider.provision(self.progress))
            return provider.share(got[0])

        def attach(shared: dict[str, Any]) -> None:
            got.append(provider.attach(shared, self.progress))

        self.joined = self.shared.join(provision, attach)
        return got[0]

    def reread_facts(self) -> ClusterFacts:
        """After Cilium changed under the run (an upgrade): wait for the datapath again and read the facts anew."""
        assert self.handle is not None
        states = readiness.wait_ready(self.handle.kube, self.timeouts, self.progress)
        self.facts = readiness.read_facts(self.handle, states, self.timeouts.EXEC)
        self.summary.write_cluster_json()
        return self.facts

    def _report_unavailable(self, e: Unavailable) -> bool:
        """A short first line, then one line per missing piece with how to get it. False when the host has nowhere to show it."""
        n = self.selected_kpr
        return self.host.report_problems(
            f"{n} kpr test{'s' if n != 1 else ''} selected, but this machine cannot run them "
            f"(exit status {EXIT_UNAVAILABLE}; --kpr-if-unavailable=skip skips them instead):", list(e.problems))

    @property
    def evidence_dir(self) -> Path:
        """``<artifacts>/<cluster>``: one directory of evidence per cluster."""
        planned = getattr(self.provider, "cluster_name", None) if self.provider is not None else None
        name = self.handle.name if self.handle is not None else planned or self.settings.cluster_name
        return self.settings.artifacts / path_component(str(name))

    @property
    def evidence(self) -> Any:
        if self._evidence is None:
            from ..evidence import Evidence

            self._evidence = Evidence(self.evidence_dir)
        return self._evidence

    def stop(self) -> None:
        """Delete the namespaces this run created, then let the provider remove its cluster. Idempotent. The real
        clock is the project's again afterwards."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self._stop()
        finally:
            clock.install(clock.REAL)
            tokens.install(None)

    def _stop(self) -> None:
        if self._started and not self.unavailable and self.record.failed() is None:
            self.record.begin("cleanup")
        for fn in self.before_cleanup:
            try:
                fn()
            except (KprError, AssertionError) as e:
                self.progress(f"end-of-run evidence failed: {e}")
        try:
            self.ownership.end()
        except KprError as e:  # e.g. a replay that diverged: what is left is named, the run still ends in one piece
            self.progress(f"cleanup failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        self.summary.write_recording()
        if self.shared is not None and self.joined is not None:
            self.summary.hand_over()  # the controller writes cluster.json, report.txt and the summary for the run
            self.shared.leave(self._teardown)  # the last worker out tears down
            return
        if self.facts is not None:  # the run's whole cost, cleanup included (the summary line shows the same)
            try:
                self.summary.write_cluster_json()
                self.summary.write_report(self.evidence_dir, self.facts.to_json())
                settle_exit_status(self)
                self.results_file = self.summary.write_results(self.evidence_dir)
            except OSError as e:
                self.progress(f"could not write cluster.json with the run's cost: {e}")
        self._teardown()

    def note_failure(self) -> None:
        """A kpr test failed or errored: the cluster's own logs are collected before it is deleted (_teardown)."""
        self.failed_tests += 1
        if self.shared is not None:  # the worker that tears down may not be the one that saw the failure
            try:
                self.shared.dir.mkdir(parents=True, exist_ok=True)
                (self.shared.dir / f"failed-{self.shared.worker}").touch()
            except OSError:
                pass

    def _run_failed(self) -> bool:
        return bool(self.failed or self.failed_tests or (self.shared is not None and any(self.shared.dir.glob("failed-*"))))

    def _teardown(self) -> None:
        self._teardown_provider()
        if self.record.current is not None and self.record.current["phase"] == "cleanup":
            self.record.end()
            if self.shared is None and (self.evidence_dir / "cluster.json").is_file():
                self.summary.write_record()

    def _teardown_provider(self) -> None:
        collect = getattr(self.provider, "collect_logs", None)
        if collect is not None and self._run_failed():
            try:  # before the cluster goes: afterwards there is nothing to read
                collect(self.evidence_dir / "cluster-logs", self.progress)
            except KprError as e:
                self.progress(f"could not collect the cluster's logs: {e}")
        if self.provider is not None:
            try:
                self.provider.teardown(self.progress)
            except KprError as e:
                self.progress(f"teardown failed: {e}")

    def end_on_controller(self, testrunuid: str) -> None:
        """On the xdist controller, after the workers finished: the run summed up from the workers' parts and the
        reports (RunSummary.on_controller); a teardown the last worker did not do (it died) is done here."""
        d = run_dir(self.settings.artifacts, testrunuid)
        state = (SharedRun(d, "controller", 0).read() or {}) if d.is_dir() else {}
        for part in by_worker(self.sums.parts):  # the workers' costs, the run's in total
            for k, v in part["cost"].items():
                if k != "commands":
                    setattr(self.cost, k, getattr(self.cost, k) + v)
        self.merged_evidence_dir = self.summary.on_controller(state, lambda: settle_exit_status(self))
        if "shared" in state and not state.get("torn_down", True):
            teardown_for_dead_worker(self, state)
        shutil.rmtree(d, ignore_errors=True)
        try:
            d.parent.rmdir()  # .kpr-xdist, if no other run uses it
        except OSError:
            pass


def settle_exit_status(run: KprRun) -> None:
    """The run's exit status decided from its outcomes, once (``run.settle_exit``), before results.json records it."""
    fn, run.settle_exit = run.settle_exit, None
    if fn is not None:
        fn()


def refuse_a_profile_that_did_not_take(settings: Settings, facts: ClusterFacts) -> None:
    """The profile's promised settings are read back from the agents; one that does not show stops the run."""
    from ..judge.profiles import profile_problems

    problems = profile_problems(settings.profile, facts)
    if problems:
        raise ProvisioningError("; ".join(problems) + " (clusters/profiles/" + settings.profile + ".yaml did not take effect)")


def refuse_kernels_below_the_floor(settings: Settings, facts: ClusterFacts) -> None:
    """A node whose kernel is below the Cilium version's floor or the profile's (clusters/kernels.yaml) stops the run:
    one line per node."""
    if settings.clusters_dir is None or not (settings.clusters_dir / "kernels.yaml").is_file():
        return
    from ..rules.kernels import KernelTable

    problems = KernelTable.load(settings.clusters_dir / "kernels.yaml").floor_problems(
        facts.cilium_version, {n.name: n.kernel for n in facts.nodes}, settings.profile)
    if problems:
        raise KprError("; ".join(problems))


def adopt_recording(settings: Settings) -> tuple[Settings, Any]:
    """Under replay: the recording (its provider, read first) and the settings with its seed; its address families and
    profile must be the run's (one line if not). A recording that cannot be read: no provider, preflight says it."""
    from dataclasses import replace

    from .replay import ReplayProvider

    try:
        replayed = ReplayProvider(settings.replay)  # type: ignore[arg-type]
    except Unavailable:
        return settings, None
    meta = replayed.meta
    for name, flag in (("ip_families", "--kpr-ip-families"), ("profile", "--kpr-profile")):
        recorded = tuple(meta[name]) if name == "ip_families" and name in meta else meta.get(name)
        if recorded is not None and recorded != getattr(settings, name):
            shown = ",".join(recorded) if isinstance(recorded, tuple) else recorded
            raise SettingsError(f"--kpr-replay: the recording was made with {flag}={shown}; replay it with the same")
    return replace(settings, seed=meta.get("seed", settings.seed)), replayed


def kube_factory(host: RunHost) -> Callable[[Path | None, str | None], KubeAPI]:
    """The run's Kubernetes clients: another plugin's (the host's hook), else the real one."""
    def factory(kubeconfig: Path | None, context: str | None) -> KubeAPI:
        custom = host.kube_client(kubeconfig, context)
        if custom is not None:
            return custom
        from ..k8s.client import RealKube

        return RealKube(kubeconfig, context)

    return factory


def make_provider(run: KprRun) -> Provider:
    """The run's provider: the recording's under replay, another plugin's (the fake is one), else the named built-in."""
    s = run.settings
    if s.provider is ProviderName.REPLAY:  # asked for by name: before any plugin's provider
        from .replay import ReplayProvider

        return run.replayed if run.replayed is not None else ReplayProvider(s.replay)  # type: ignore[arg-type]
    custom = run.host.provider(s, run.timeouts, kube_factory(run.host))
    if custom is not None:
        return custom
    if s.provider is ProviderName.FAKE:  # hooks.FakeProviderPlugin answers the hook above
        raise KprError("--kpr-provider=fake: nothing answers for the fake cluster (the plugin registers it, by pytest_configure)")
    if s.provider is ProviderName.EXISTING:
        from ..cluster.existing import ExistingProvider

        return ExistingProvider(s.provider_config(), kube_factory(run.host), run.ownership.create_namespace)
    from ..cluster.kind import KindProvider

    return KindProvider(s.provider_config(), run.timeouts, kube_factory(run.host))


def teardown_for_dead_worker(run: KprRun, state: dict[str, Any]) -> None:
    """On the xdist controller: a worker ended without leaving the shared cluster (it died), so the controller attaches
    through the provider and tears the run's cluster down."""
    missing = sorted(set(state.get("joined", [])) - set(state.get("left", [])))
    run.progress(f"worker(s) {', '.join(missing) or '?'} ended without leaving the run's cluster: tearing it down from the controller")
    try:
        provider = make_provider(run)
        provider.preflight()
        if isinstance(provider, SharedProvider):
            provider.attach(state["shared"], run.progress)
            provider.teardown(run.progress)
    except (KprError, Unavailable) as e:
        run.progress(f"teardown failed: {e}")


def run_meta(s: Settings, host: RunHost, run_id: str) -> dict[str, Any]:
    """cluster.json's run record from the first moment: the run, the plugin, the commit, the arguments, what was asked."""
    from .. import __version__
    from ..evidence.runrecord import git_sha

    return {"id": run_id, "plugin_version": __version__, "git_sha": git_sha(host.rootpath),
            "arguments": list(host.arguments), "provider": str(s.provider),
            "requested": {"cilium_version": s.cilium_version, "profile": s.profile, "node_image": s.node_image or None,
                          "upgrade_to": s.upgrade_to}}
