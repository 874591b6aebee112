"""pytest hooks of pytest-kpr: options, markers, selection, gating, header and cleanup.

Heavy modules (kubernetes, scapy) are imported only when a cluster is actually needed.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from . import markers, reporter
from ..evidence import results
from ..core.errors import ApiError, MarkerError, NodeShellDisabled, SettingsError, SetupRefused
from .keys import KNOWN_GAP, KPR_RUN_NAME, KPR_SESSION, REQUIREMENT, SUITE
from .session import EXIT_PROVISIONING, PLUGIN_NAME, KprSession, header_lines
from ..run.settings import ProviderName, add_options, new_run_name, resolve
from ..run.run import settle_exit_status

pytest_plugins = ["pytest_kpr.plugin.fixtures"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kpr", "Cilium kube-proxy-replacement conformance (pytest-kpr; besides pytest's exit statuses: "
                                   "3 provisioning failed, 4 this machine cannot run the suites)")
    add_options(group, parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """With pytest-xdist (``-n N``) and the suites selected: keep each suite module in one worker unless ``--dist``
    was chosen (``--dist loadscope``: its module fixtures make the workloads once, and the modules with cluster-wide
    state -- a fixed NodePort or hostPort, the shared VIP, the service map -- never run in two workers at once), and
    give the run an id the controller knows too, for the workers' shared cluster (pytest_kpr.run.shared_run).

    Not ``loadgroup``: pytest-xdist 3.8 marks a group by rewriting ``item._nodeid``, which pytest 9.2's ``nodeid`` no
    longer reads, so every test was scheduled on its own (seen here: a suite module split over two workers)."""
    if not getattr(config.option, "numprocesses", None) or getattr(config, "workerinput", None) is not None:
        return
    if getattr(config.option, "dist", "no") == "no" and not getattr(config.option, "distload", False) and _selects_kpr(config):
        config.option.dist = "loadscope"
    if getattr(config.option, "testrunuid", None) is None:
        config.option.testrunuid = uuid.uuid4().hex


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for doc in markers.DOCS.values():
        config.addinivalue_line("markers", doc)
    # each suite module gets an xdist group (_group_kpr_modules); without pytest-xdist the marker does nothing (and must still be known)
    config.addinivalue_line("markers", "xdist_group(name): run these tests in one pytest-xdist worker (pytest-xdist's marker)")
    cli = {k: v for k, v in vars(config.option).items() if k.startswith("kpr_")}
    worker = getattr(config, "workerinput", None)
    run_name = (worker or {}).get("kpr_run_name") or (new_run_name() if worker is None and _selects_kpr(config) else None)
    config.stash[KPR_RUN_NAME] = run_name
    _show_skip_reasons(config)
    try:
        _refuse_pytest_kind_options(config)
        # without an ini file pytest takes the rootdir from the command line's paths, a space-separated option value
        # included (`--kpr-kubeconfig ~/.kube/config` made it ~ and put the evidence in ~/.kube's parent): the evidence
        # then goes where pytest was started
        base = config.rootpath if config.inipath is not None else config.invocation_params.dir
        settings = resolve(cli, config.getini, config.rootpath, run_name, artifacts_base=base)
    except SettingsError as e:
        raise pytest.UsageError(f"pytest-kpr: {e}") from None
    if settings.fake_faults:  # the fake's fault names are the fake's to check (the options table only parses them)
        from dataclasses import replace

        from ..testing.config import check_faults

        try:
            settings = replace(settings, fake_faults=check_faults(settings.fake_faults))
        except ValueError as e:
            where = "--kpr-fake-faults" if settings.sources.get("fake_faults") == "cli" else "ini key kpr_fake_faults"
            raise pytest.UsageError(f"pytest-kpr: {where}: {e}") from None
    from ..run.settings import artifacts_problem, link_latest, unknown_ini_keys

    # pytest's own list of ini keys nobody registered (it only warns about them); private, hence the guard
    unknown = getattr(config, "_get_unknown_ini_keys", None)
    typos = unknown_ini_keys(sorted(unknown())) if callable(unknown) else []
    if typos:
        raise pytest.UsageError(f"pytest-kpr: {'; '.join(typos)}")
    if _selects_kpr(config) and getattr(config, "workerinput", None) is None and not config.option.collectonly:
        why = artifacts_problem(settings.artifacts)  # listing the tests is not a run: it writes nothing
        if why:
            raise pytest.UsageError(f"pytest-kpr: {why}")
        if settings.sources.get("artifacts") == "default" and run_name:
            link_latest(settings.artifacts)
    config.stash[KPR_SESSION] = session = KprSession(config, settings)
    config.pluginmanager.register(session, PLUGIN_NAME)  # the run's own hooks (plugin.session)
    if getattr(config, "workerinput", None) is None:  # where the run is summed up: the xdist controller, or the one process
        config.pluginmanager.register(reporter.Reporter(session.sums), "kpr-reporter")
    config.pluginmanager.register(ExitTrailer(config), "kpr-exit-trailer")
    if settings.provider is ProviderName.FAKE:  # the fake cluster is a provider like any other: it answers the hook
        config.pluginmanager.register(FakeProviderPlugin(), "kpr-fake-provider")
    _add_packaged_suites(config)
    _end_cleanly_on_sigterm(config)


class FakeProviderPlugin:
    """``--kpr-provider=fake``: the in-memory fake cluster (pytest_kpr.testing) through the ``pytest_kpr_provider`` hook, as
    any other provider plugs in; last, so a conftest's own provider still comes first."""

    @pytest.hookimpl(trylast=True)
    def pytest_kpr_provider(self, config: pytest.Config, settings: Any, timeouts: Any, kube_factory: Any) -> Any:
        from ..testing import fake_provider

        return fake_provider(settings)


class ExitTrailer:
    """pytest ends a run cut short by ``pytest.exit`` with a trailer, ``! _pytest.outcomes.Exit: <message> !``. When the
    message is the run's own exit (KprSession.exit), the terminal already showed it as the last line: the trailer is
    left out. Any other interruption (Ctrl-C, another plugin's exit) keeps it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        s = self.config.stash.get(KPR_SESSION, None)
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if s is None or tr is None or s.exit_shown is None or not isinstance(excinfo.value, pytest.exit.Exception):
            return
        if getattr(excinfo.value, "msg", None) == s.exit_shown and hasattr(tr, "_keyboardinterrupt_memo"):
            tr._keyboardinterrupt_memo = None  # pytest's private field: without it the trailer is printed as before


def _show_skip_reasons(config: pytest.Config) -> None:
    """A kpr run always shows why each skipped test was skipped (and each xfail why): a suite skipped for a missing
    feature, a profile or a privilege says so in its reason, which pytest prints only with ``-rs``. What ``-r`` already
    asks for stays; ``-rN`` (none) is respected."""
    if not _selects_kpr(config):
        return
    chars = getattr(config.option, "reportchars", "") or ""
    if "N" in chars or "a" in chars or "A" in chars:
        return
    config.option.reportchars = chars + "".join(c for c in "sx" if c not in chars)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist controller: every worker writes under the controller's run directory, not one of its own."""
    name = node.config.stash.get(KPR_RUN_NAME, None)
    if name:
        node.workerinput["kpr_run_name"] = name


def _end_cleanly_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM (a CI job cancelled, a timeout) ends the run as Ctrl-C does: the cluster objects are cleaned up and
    results.json says the run did not complete. Only where nobody else handles SIGTERM; restored at the end."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        s = config.stash.get(KPR_SESSION, None)
        if s is not None:
            s.interrupted_by = "SIGTERM"
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, on_sigterm)
    config.add_cleanup(lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))


def _add_packaged_suites(config: pytest.Config) -> None:
    """``pytest -m kpr`` with no paths given runs the suites installed with the plugin (and the rootdir's own tests, which
    get the same fixtures). Named paths are the user's choice; a path that already holds the suites is not added twice."""
    import sys
    from pathlib import Path

    from ..run.resources import packaged_dir
    from ..run.settings import Suites

    if not _selects_kpr(config) or config.args_source is pytest.Config.ArgsSource.ARGS or kpr_session(config).settings.suites is Suites.NONE:
        return
    suites = packaged_dir("suites")
    if suites is None:
        return
    suites = suites.resolve()
    in_venv = suites.is_relative_to(Path(sys.prefix).resolve())  # pytest does not recurse into a virtualenv
    names = sorted(p.name for p in suites.glob("test_*.py"))
    for arg in config.args:
        a = Path(arg.split("::", 1)[0]).resolve()
        if a == suites or (not in_venv and suites.is_relative_to(a)):
            return
        if names and _holds_a_copy(a, names):
            return
    config.args.append(str(suites))


def _holds_a_copy(path: "Path", names: list[str]) -> bool:
    """A path that already holds the suites' own files (a pytest-kpr checkout with the wheel installed, as a CI job's
    ``pip install .`` leaves it): adding the installed copy too would collect each suite twice under one module name,
    which pytest refuses ("import file mismatch")."""
    return any((d / n).is_file() for d in (path, path / "suites") for n in names)


#: pytest-kind's own options (pytest_kind/plugin.py), with their defaults, and the option to use instead.
#: pytest-kpr drives pytest-kind itself, so these would be silently ignored: refuse them instead.
PYTEST_KIND_OPTIONS = {
    "--cluster-name": ("cluster_name", "pytest-kind", "--kpr-cluster-name"),
    "--keep-cluster": ("keep_cluster", False, "--kpr-keep-cluster"),
    "--kubeconfig": ("kubeconfig", None, "--kpr-provider=existing --kpr-kubeconfig"),
    "--kind-image": ("kind_image", None, "--kpr-node-image"),
    "--kind-bin": ("kind_bin", None, "--kpr-kind-bin"),
    "--kind-kubectl-bin": ("kind_kubectl_bin", None, "--kpr-kubectl-bin"),
}


def _refuse_pytest_kind_options(config: pytest.Config) -> None:
    args = [str(a).split("=", 1)[0] for a in config.invocation_params.args]
    for flag, (dest, default, ours) in PYTEST_KIND_OPTIONS.items():
        value = getattr(config.option, dest, default)
        if flag in args or value != default:
            raise SettingsError(f"{flag} is pytest-kind's option, which pytest-kpr does not read; use {ours}")


def kpr_session(config: pytest.Config) -> KprSession:
    return config.stash[KPR_SESSION]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that uses ``kpr_family`` runs once per family of --kpr-ip-families (ids ``[IPv4]``, ``[IPv6]``); with the
    default, IPv4 alone, it is not parametrized and keeps its plain id."""
    if "kpr_family" not in metafunc.fixturenames:
        return
    session = metafunc.config.stash.get(KPR_SESSION, None)
    families = session.settings.ip_families if session is not None else ("IPv4",)
    if tuple(families) != ("IPv4",):
        metafunc.parametrize("kpr_family", list(families), indirect=True, scope="module", ids=list(families))


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The kpr banner, only in a run that selects kpr tests: any other run looks as it would without the plugin."""
    return header_lines(kpr_session(config).settings) if _selects_kpr(config) else []


def _selects_kpr(config: pytest.Config) -> bool:
    """kpr suites run only when the ``-m`` expression can select a kpr test: true for a test marked ``kpr`` (with any of
    the kpr markers the expression names, present or not): ``-m kpr``, ``-m "kpr and not kpr_disruptive"``,
    ``-m kpr_disruptive``. Plain ``pytest``, ``pytest -m "not kpr"`` and ``pytest -m "not slow"`` never provision a cluster
    and behave as if the plugin were not installed."""
    return selects_kpr(config.option.markexpr or "")


def selects_kpr(markexpr: str) -> bool:
    """Whether the mark expression ``markexpr`` is true for some test marked ``kpr``: every combination of the other kpr
    markers it names is tried (few: an expression names a handful). An expression pytest cannot parse is left to pytest,
    which reports it; here it selects nothing."""
    import itertools
    import re

    names = sorted(set(re.findall(r"(?<![\w-])(kpr\w*)", markexpr)))
    if not names:
        return False
    try:
        from _pytest.mark.expression import Expression  # pytest's own -m grammar (not public API)
    except ImportError:  # a pytest that moved it: the expression names a kpr marker, so take it as selecting kpr tests
        return True
    try:
        expr = Expression.compile(markexpr)
    except Exception:  # noqa: BLE001 - an expression pytest refuses itself, in its own words
        return False
    others = [n for n in names if n != "kpr"][:8]

    def matcher(present: set[str]) -> object:
        return lambda name, /, **kwargs: name in present

    return any(expr.evaluate(matcher({"kpr", *combo})) for r in range(len(others) + 1)  # type: ignore[arg-type]
               for combo in itertools.combinations(others, r))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        _attach_suites(items)
        _attach_requirements(items)
        _attach_known_gaps(config, items)
    except MarkerError as e:
        kpr_session(config).collection_failed = True  # pytest still calls collection_finish: never provision
        raise pytest.UsageError(str(e)) from None
    # a suite declared last=True (the map-pressure suite, which may fill the service map) runs after every other suite,
    # so no other suite's Services meet a full map
    items.sort(key=lambda item: SUITE in item.stash and item.stash[SUITE].last)
    _group_kpr_modules(items)
    if not _selects_kpr(config):
        _deselect_kpr(config, items)
    elif not kpr_session(config).settings.upgrade_to:
        _deselect(config, items, lambda item: item.get_closest_marker(markers.UPGRADE) is not None)


def _group_kpr_modules(items: list[pytest.Item]) -> None:
    """Under pytest-xdist a suite module's tests stay in one worker: their module fixtures create the workloads once
    (split, each worker would make its own), and a module's cluster-wide objects (a NodePort, a VIP, a hostPort) are
    used by one worker at a time. A module that declares an ``xdist_group`` of its own keeps it."""
    for item in items:
        if item.get_closest_marker(markers.KPR) is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(f"kpr-{_module_stem(item)}"))


def _module_stem(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")


def _attach_suites(items: list[pytest.Item]) -> None:
    """Validate every kpr test's suite contract (``pytest.mark.kpr(property=..., evidence=..., last=...)``, the closest
    mark wins) into one :class:`~pytest_kpr.plugin.markers.Suite`; a bare ``kpr`` mark names the module's property."""
    for item in items:
        mark = item.get_closest_marker(markers.KPR)
        if mark is None:
            continue
        try:
            item.stash[SUITE] = markers.parse_suite(mark.args, dict(mark.kwargs), _module_stem(item))
        except MarkerError as e:
            raise MarkerError(f"{item.nodeid}: {e}") from None


def _attach_requirements(items: list[pytest.Item]) -> None:
    """Validate every ``kpr_requires`` (module, class and function level) into one Requirement."""
    for item in items:
        requirement = None
        for mark in item.iter_markers(markers.REQUIRES):
            try:
                r = markers.parse_requires(mark.args, dict(mark.kwargs))
            except MarkerError as e:
                raise MarkerError(f"{item.nodeid}: {e}") from None
            requirement = r if requirement is None else _merge(requirement, r)
        if requirement is not None:
            item.stash[REQUIREMENT] = requirement


def _attach_known_gaps(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [(item, m) for item in items if (m := item.get_closest_marker(markers.KNOWN_GAP)) is not None]
    if not marked:
        return
    settings = kpr_session(config).settings
    path = settings.clusters_dir / "known-gaps.yaml" if settings.clusters_dir else None
    gaps = markers.load_known_gaps(path) if path is not None and path.is_file() else {}
    for item, m in marked:
        gid = m.args[0] if len(m.args) == 1 and not m.kwargs else None
        if gid not in gaps:
            known = ", ".join(sorted(gaps)) or "none"
            raise MarkerError(f"{item.nodeid}: @pytest.mark.{markers.KNOWN_GAP}({gid!r}): no such gap in clusters/known-gaps.yaml (known: {known})")
        item.stash[KNOWN_GAP] = gaps[gid]


def _deselect_kpr(config: pytest.Config, items: list[pytest.Item]) -> None:
    kpr_session(config).deselected_kpr = _deselect(config, items, lambda item: item.get_closest_marker(markers.KPR) is not None)


def _deselect(config: pytest.Config, items: list[pytest.Item], which: Any) -> int:
    """Deselect the items ``which`` picks (reported to pytest as deselected); how many."""
    dropped = [item for item in items if which(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not which(item)]
    return len(dropped)


def _merge(a: markers.Requirement, b: markers.Requirement) -> markers.Requirement:
    def higher(x: Any, xt: Any, y: Any, yt: Any) -> tuple[Any, Any]:
        if x is None:
            return y, yt
        if y is None:
            return x, xt
        return (x, xt) if x >= y else (y, yt)

    c, ct = higher(a.cilium, a.cilium_text, b.cilium, b.cilium_text)
    k, kt = higher(a.kernel, a.kernel_text, b.kernel, b.kernel_text)
    return markers.Requirement(a.features | b.features, c, ct, k, kt)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    # pytest calls this hook even when collection raised (e.g. a bad marker): never provision then
    if config.option.collectonly or kpr_session(config).collection_failed or session.testsfailed:
        return
    selected = sum(1 for item in session.items if item.get_closest_marker(markers.KPR))
    if not selected and _selects_kpr(config) and not session.items:
        from ..run.resources import packaged_dir

        config.get_terminal_writer().line(
            f"pytest-kpr: no kpr suite was collected; the suites installed with the plugin are in {packaged_dir('suites')} "
            "(run `pytest -m kpr` without paths to run them, or name them)")
    if selected:
        kpr_session(config).selected_kpr = selected
        kpr_session(config).start()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker(markers.KPR) is None and REQUIREMENT not in item.stash:
        return
    s = kpr_session(item.config)
    s.start()
    if s.unavailable:
        pytest.skip(s.unavailable)
    assert s.facts is not None and s.handle is not None
    requirement = item.stash.get(REQUIREMENT, None)
    if requirement is not None:
        reason = requirement.unmet(s.facts)
        if reason:
            pytest.skip(reason)
    if item.get_closest_marker(markers.DISRUPTIVE) and not s.handle.created and not s.settings.allow_disruptive:
        pytest.skip("disruptive test on a cluster this run did not create (pass --kpr-allow-disruptive to run it)")
    gap = item.stash.get(KNOWN_GAP, None)
    if gap is not None and gap.applies(s.facts.cilium_version):
        item.add_marker(pytest.mark.xfail(reason=gap.xfail_reason(s.facts.cilium_version), strict=True))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and report.when in ("setup", "call") and call.excinfo is not None and call.excinfo.errisinstance(NodeShellDisabled):
        # --kpr-no-node-shell: a test that needs a node command is not judged; it says what it would have needed
        report.outcome = "skipped"
        report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {call.excinfo.value}")
    if item.get_closest_marker(markers.KPR) is None:
        return report
    s = kpr_session(item.config)
    prop = item.stash[SUITE].property if SUITE in item.stash else _module_stem(item)
    _require_outside_view(report, call, s)
    if report.failed and call.excinfo is not None and s.refused is None and (
            call.excinfo.errisinstance(SetupRefused) or (call.excinfo.errisinstance(ApiError) and call.excinfo.value.status == 403)):
        # a set-up problem (an object of the suite's name that is not this run's, a namespace or pull Secret that is not
        # there, a permission the run's user lacks): the run stops here, exit 3, never a run of failures the gate would read
        s.refused = str(call.excinfo.value)
        item.session.shouldstop = f"pytest-kpr: {s.refused}"
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else "skipped" if report.skipped else report.outcome
        if outcome == "failed":
            s.note_failure()
        family = getattr(item, "callspec", None) and item.callspec.params.get("kpr_family")  # type: ignore[attr-defined]
        why = _reason(report, call, outcome)
        reporter.carry(report, result={"test": item.nodeid, "property": prop, "outcome": outcome,
                                       **({"family": family} if family else {}), **({"message": why} if why else {})})
    if report.failed and s.handle is not None:  # setup, call or teardown: each failure is explained the same way
        where, text = _failure_evidence(item, call, s)
        report.sections.append(("kpr: evidence", text))
        item.user_properties.append(("kpr_evidence", str(where)))
        if where.is_relative_to(s.evidence_dir):  # the failure's bundle, relative to the run's evidence (results.json's place)
            reporter.carry(report, evidence=str(where.relative_to(s.evidence_dir)))
    reporter.carry(report, figures=s.summary.new_figures(), report_values=s.summary.new_report_values(),
                   cost=s.cost.minus(s.test_cost_start) if report.when == "teardown" else None)
    if report.failed and call.excinfo is not None and not isinstance(report.longrepr, str) and item.config.get_verbosity() < 2:
        report.longrepr = short_failure(item, call.excinfo)
    return report


def _drop_lines(s: KprSession, now: dict[str, Any]) -> list[str]:
    """The drop reasons that rose on each agent (``now``: its drop counters, by node) since the last reading (the run's
    start or the previous failure)."""
    from ..parse.metrics import drops_that_rose

    if not now:
        return []
    rose = drops_that_rose(s.drop_counters, now)
    since, s.drop_counters, s.drops_since = s.drops_since, {**s.drop_counters, **now}, "the previous failure"
    if not rose:
        return [f"drops: no drop counter rose on any agent since {since}"]
    shown = ", ".join(str(d) for d in rose[:5]) + (f", and {len(rose) - 5} more" if len(rose) > 5 else "")
    return [f"drops since {since}: {shown}"]


#: the most lines of its own a failure shows at default verbosity (-vv shows pytest's full report)
FAILURE_LINES = 25


def short_failure(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """The failure as a user reads it in a CI log: where, and the verdict (an assertion's message, which names the
    property), or a short traceback for an error; at most FAILURE_LINES lines."""
    path, line, _ = item.reportinfo()
    if excinfo.errisinstance(AssertionError):
        text = [f"{path}:{(line or 0) + 1}: {item.name} failed", *str(excinfo.value).splitlines()]
    else:  # an error: the last frames of the suite's or the plugin's own code, then the exception (pytest's frames left out)
        frames = [e for e in excinfo.traceback if not any(part in str(e.path) for part in ("/_pytest/", "/pluggy/"))]
        text = [f"{e.path}:{e.lineno + 1}: in {e.name}" for e in frames[-3:]]
        text += [f"{excinfo.typename}: {line}" if i == 0 else line for i, line in enumerate(str(excinfo.value).splitlines() or [""])]
    if len(text) > FAILURE_LINES:
        text = text[: FAILURE_LINES - 1] + [f"[{len(text) - FAILURE_LINES + 1} more lines: run with -vv for pytest's full report]"]
    return "\n".join(text)


#: the longest reason results.json keeps for a test (the first line of its verdict, or its skip reason)
REASON_CHARS = 300


def _reason(report: pytest.TestReport, call: pytest.CallInfo[None], outcome: str) -> str:
    """Why a test did not pass, in one line: a failure's first line (an assertion's message names the property), a skip's
    or an expected failure's reason. Empty for a pass."""
    if outcome == "failed" and call.excinfo is not None:
        first = next((ln.strip() for ln in str(call.excinfo.value).splitlines() if ln.strip()), "")
        text = first if call.excinfo.errisinstance(AssertionError) else f"{call.excinfo.typename}: {first}"
    elif outcome == "xfailed":
        text = str(getattr(report, "wasxfail", "") or "")
    elif outcome == "skipped" and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        text = str(report.longrepr[2]).removeprefix("Skipped: ")
    else:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def _failure_evidence(item: pytest.Item, call: pytest.CallInfo[None], s: KprSession) -> tuple[Path, str]:
    """Collect the failure bundle (files under the run's evidence) once per failure: a module fixture's error is
    raised again for each of its tests, and they share its bundle. Where it is, and a few lines for the terminal."""
    from ..evidence import write_sections
    from ..observe.diagnose import failure_snapshot

    key = id(call.excinfo.value) if call.excinfo is not None else None
    done = s.bundles.get(key) if key is not None else None
    if done is not None:
        return done
    dest = s.evidence_dir / "failures" / re.sub(r"[^A-Za-z0-9_.-]+", "-", item.nodeid).strip("-")
    try:
        with s.diagnostics():  # marked in the recording: a replay neither needs nor misses a bundle (pytest_kpr.run.replay)
            snap = failure_snapshot(s.handle, s.ownership.namespaces, s.timeouts.EXEC)
        write_sections(dest, snap.sections)
        files = sorted(p.name for p in dest.iterdir()) if dest.is_dir() else []
        summary = f"saved under {dest}: {len(files)} files ({', '.join(files[:6])}{', ...' if len(files) > 6 else ''})"
        pods = snap.pods
        lines = [summary, *_drop_lines(s, snap.drops),
                 *(["pods:", *pods[:10]] + ([f"[{len(pods) - 10} more in pods.txt]"] if len(pods) > 10 else []) if pods else [])]
    except Exception as e:  # noqa: BLE001 - never hide the test's own failure
        lines = [f"saved under {dest}", f"could not collect the failure bundle: {e}"]
    text = "\n".join(lines)
    if key is not None:
        s.bundles[key] = (dest, text)
    return dest, text


def _require_outside_view(report: pytest.TestReport, call: pytest.CallInfo[None], s: KprSession) -> None:
    """A skip for want of the outside view (fixtures.no_outside_view) is a failure when the outside view is required."""
    from .outcomes import NoOutsideView

    if report.skipped and call.excinfo is not None and call.excinfo.errisinstance(NoOutsideView) and s.settings.outside_required():
        report.outcome = "failed"
        report.longrepr = (f"{call.excinfo.value.msg} -- the outside view is required here (--kpr-require-outside="
                           f"{s.settings.require_outside}; auto requires it under CI on a cluster this run creates): give the "
                           "runner a route to the nodes and CAP_NET_RAW (kpr with-net-raw), or pass --kpr-require-outside=no")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    s = kpr_session(config)
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and not config.option.markexpr and not config.option.collectonly \
            and config.args_source is not pytest.Config.ArgsSource.ARGS and getattr(config, "workerinput", None) is None:
        # plain pytest where there are no tests at all (a user directory): its "collected 0 items" says nothing of the suites
        terminalreporter.write_line("pytest-kpr: no tests here; the conformance suites that come with the plugin run with: pytest -m kpr")
    if s.sums.outcomes:
        terminalreporter.write_sep("=", "kpr properties")
        figures = s.sums.figures
        for prop, outcomes in s.sums.outcomes.items():
            verdict = {"fail": "FAIL", "xfail": "skip"}.get(results.verdict(outcomes), results.verdict(outcomes))
            counts = ", ".join(f"{outcomes.count(o)} {o}" for o in ("passed", "failed", "xfailed", "skipped") if outcomes.count(o))
            fig = figures.get(prop, "")
            terminalreporter.write_line(f"{verdict:<5} {prop:<15} {fig}{'  ' if fig else ''}({counts})", red=verdict == "FAIL", green=verdict == "pass")
        virtual = " (durations on the fake cluster's virtual clock)" if s.clock_kind == "virtual" else ""
        terminalreporter.write_line(f"evidence: {s.merged_evidence_dir or s.evidence_dir}{virtual}")
        if s.handle is not None or s.merged_evidence_dir is not None:
            worst = max(s.sums.cost_per_test.items(), key=lambda kv: kv[1].commands, default=None)
            terminalreporter.write_line(f"cluster cost: {s.cost.line()} ({s.cost.commands} commands)"
                                        + (f"; most: {worst[1].commands} in {worst[0]}" if worst else ""))
    if s.deselected_kpr:
        terminalreporter.write_line(
            f"pytest-kpr: {s.deselected_kpr} kpr conformance tests not selected; run them with: pytest -m kpr"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    s = session.config.stash.get(KPR_SESSION, None)
    if s is None:
        return
    if getattr(session.config, "workeroutput", None) is not None:
        session.config.workeroutput["kpr_deselected"] = s.deselected_kpr  # type: ignore[attr-defined]
    s.exit_status = int(exitstatus)
    # the status the run ends with is settled once every outcome is in, just before results.json is written with it
    # (results.json is written once: never read back and patched)
    s.settle_exit = lambda: _refused(session, s) or _nothing_judged(session, s)
    s.stop()
    if session.config.pluginmanager.getplugin("dsession") is not None and getattr(session.config.option, "testrunuid", None):
        s.end_on_controller(session.config.option.testrunuid)  # the xdist controller: after every worker finished
    settle_exit_status(s)  # a run that wrote no results.json


def _refused(session: pytest.Session, s: KprSession) -> bool:
    """A run that met a set-up problem (core.errors.SetupRefused: an object of its own name that is not its own, a missing
    namespace or pull Secret, a permission its user lacks; or the API server's 403) stopped there: one red line, exit 3
    (EXIT_PROVISIONING), whatever the tests before it found -- a set-up problem the gate must not read as a regression."""
    if s.refused is None or getattr(session.config, "workerinput", None) is not None:
        return False
    session.config.get_terminal_writer().line(f"pytest-kpr: stopped: {s.refused} (exit status {EXIT_PROVISIONING})", red=True)
    session.exitstatus = EXIT_PROVISIONING
    s.exit_status = EXIT_PROVISIONING
    return True


#: the exit status of a kpr run that judged no property (pytest's own "no tests ran")
EXIT_NOTHING_JUDGED = 5


def _nothing_judged(session: pytest.Session, s: KprSession) -> None:
    """A kpr run in which no property was judged -- every kpr test skipped or deselected -- is not a pass: it exits 5
    with one line, unless --kpr-allow-all-skipped. (A worker leaves it to the controller, which has every outcome.) Listing
    the tests (--collect-only) is not a run: pytest's own status stands (0 when tests were collected, 5 when none)."""
    if (getattr(session.config, "workerinput", None) is not None or not _selects_kpr(session.config) or session.exitstatus != 0
            or session.config.option.collectonly):
        return
    judged = sum(1 for outs in s.sums.outcomes.values() for o in outs if o in ("passed", "failed", "xfailed"))
    if judged or s.settings.allow_all_skipped:
        return
    skipped = sum(len(outs) for outs in s.sums.outcomes.values())
    session.config.get_terminal_writer().line(
        f"pytest-kpr: no property was judged ({skipped} kpr tests skipped, {s.deselected_kpr} deselected): that is not a pass; "
        "exit status 5 (--kpr-allow-all-skipped accepts it)", red=True)
    session.exitstatus = EXIT_NOTHING_JUDGED
    s.exit_status = EXIT_NOTHING_JUDGED
