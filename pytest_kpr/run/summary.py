"""The run summed up in its evidence: results.json and report.txt (once, at the end), cluster.json's cost, the recording,
and a pytest-xdist worker's part for the controller.

It is the run's writing side, split from its lifecycle (pytest_kpr.run.run.KprRun: provider, cluster, facts, stop): it
reads what the lifecycle knows (:class:`RunState`: the facts, the settings, the exit status, ...) and what the test
reports came to (the run's :class:`~pytest_kpr.run.sums.Sums`, filled by pytest_kpr.plugin.reporter), and writes through
the one evidence sink. It changes nothing of the run's: what it finds (the merged directory, the workers' costs) it
returns, and the lifecycle keeps it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..core import clock
from ..core.errors import KprError, Unavailable
from .shared_run import by_worker

if TYPE_CHECKING:
    from ..cluster.facts import ClusterFacts
    from ..cluster.provider import ClusterHandle
    from ..evidence.runrecord import RunRecord
    from .cost import Cost
    from .settings import Settings
    from .shared_run import SharedRun
    from .sums import Sums


class RunState(Protocol):
    """What the summary reads of the run's lifecycle (pytest_kpr.run.run.KprRun), and nothing else of it."""

    settings: "Settings"
    run_id: str
    provider: Any
    handle: "ClusterHandle | None"
    facts: "ClusterFacts | None"
    record: "RunRecord"
    cost: "Cost"
    sums: "Sums"
    shared: "SharedRun | None"
    joined: str | None
    clock_kind: str
    exit_status: int | None
    interrupted_by: str | None
    recorder: Any
    host: Any
    _evidence: Any
    _stopped: bool

    @property
    def evidence_dir(self) -> Path: ...

    def progress(self, line: str) -> None: ...


class RunSummary:
    """The writing side of one run (``run.summary``)."""

    def __init__(self, run: RunState):
        #: the run's lifecycle, read only
        self.run = run
        #: the figures and report.txt values the reports carried so far (:meth:`new_figures`, :meth:`new_report_values`)
        self._carried_figures: dict[str, str] = {}
        self._carried_report: dict[str, str] = {}

    # -- what each test's report carries --------------------------------------------------------------------------

    def new_figures(self) -> dict[str, str]:
        """The figures this process's evidence gained or changed since the last call: what the next report carries
        (pytest_kpr.plugin.reporter)."""
        return self._since_last("figures", self._carried_figures)

    def new_report_values(self) -> dict[str, str]:
        """report.txt's values this process's suites gave since the last call: what the next report carries."""
        return self._since_last("report", self._carried_report)

    def _since_last(self, field: str, carried: dict[str, str]) -> dict[str, str]:
        """What the evidence's ``field`` (a name -> text dict) holds that ``carried`` does not yet, recorded as carried."""
        ev = self.run._evidence
        if ev is None:
            return {}
        new = {k: v for k, v in getattr(ev, field).items() if carried.get(k) != v}
        carried.update(new)
        return new

    # -- the files ------------------------------------------------------------------------------------------------

    def sink(self, d: Path) -> Any:
        """The one writer of the run's evidence files (pytest_kpr.evidence.Evidence.write): the run's own for its
        evidence directory, a new one for the xdist controller's merged directory."""
        from ..evidence import Evidence

        ev = self.run._evidence
        return ev if ev is not None and ev.dir == d else Evidence(d)

    def write_record(self) -> None:
        """cluster.json before the facts are known: the run record, the provider and the requested versions (kpr matrix
        shows such a column by what was asked for). Never raises: the record must not break the run it records."""
        run = self.run
        if run.facts is not None:
            return self.write_cluster_json()
        if run.shared is not None and run.joined == "attached":
            return  # the worker that provisions writes it
        try:
            d = run.evidence_dir
            s = run.settings
            self.sink(d).write("cluster.json", {"provider": getattr(run.provider, "name", str(s.provider)),
                                                 "cilium_version": s.cilium_version, "profile": s.profile, "nodes": [],
                                                 **run.record.to_json()})
        except (OSError, KprError) as e:  # (an EvidencePathError: refused at preflight, said there)
            run.progress(f"could not write cluster.json: {e}")
        return None

    def write_cluster_json(self) -> None:
        """The cluster's facts and the run record; at the end of the run also what the run cost (written again then)."""
        run = self.run
        assert run.facts is not None
        d = run.evidence_dir
        data = {**run.facts.to_json(), "profile": run.settings.profile, **run.record.to_json(),
                "clock": run.clock_kind}  # "virtual": the durations in the evidence are the fake's time, not the machine's
        if run._stopped:
            data["cost"] = self.cost_record()
        self.sink(d).write("cluster.json", data)

    def refuse_an_unsafe_evidence_dir(self) -> None:
        """Unavailable (one line, exit 4) when the evidence directory cannot be written safely: a symlink from the
        artifacts directory down to it (evidence never follows one), before anything is asked of any cluster."""
        from ..evidence.store import EvidencePathError, writable_here

        try:
            writable_here(self.run.evidence_dir / "cluster.json")
        except EvidencePathError as e:
            raise Unavailable(f"--kpr-artifacts: {e}") from None

    def cost_record(self) -> dict[str, Any]:
        """cluster.json's ``cost``: the run's, how many tests, and the five tests with the most commands."""
        per_test = self.run.sums.cost_per_test
        worst = sorted(per_test.items(), key=lambda kv: -kv[1].commands)[:5]
        return {"run": self.run.cost.to_json(), "tests": len(per_test),
                "most_commands": [{"test": k, **v.to_json()} for k, v in worst]}

    def write_report(self, d: Path, facts: dict[str, Any]) -> None:
        """report.txt: the facts' values and the ones the suites gave (summed from the test reports)."""
        from ..evidence.store import report_from_facts

        self.sink(d).write_report({**report_from_facts(facts), **self.run.sums.report})

    def results_run(self, facts: dict[str, Any] | None = None) -> dict[str, Any]:
        """results.json's ``run``: what the results are about, and how the run ended."""
        from datetime import datetime, timezone

        from .. import __version__

        run = self.run
        f = facts if facts is not None else (run.facts.to_json() if run.facts is not None else {})
        kernels = sorted({n.get("kernel", "") for n in f.get("nodes", []) if n.get("kernel")})
        return {"finished": datetime.now(timezone.utc).isoformat(timespec="seconds"), "plugin_version": __version__, "id": run.run_id,
                "cilium_version": f.get("cilium_version") or run.settings.cilium_version, "kernels": kernels,
                "profile": run.settings.profile, "ip_families": list(run.settings.ip_families), "exit_status": run.exit_status,
                "clock": run.clock_kind,
                # pytest's 0 (passed), 1 (a test failed) and 5 (nothing judged) are runs that ended on their own
                "complete": run.exit_status in (0, 1, 5) and run.interrupted_by is None,
                "interrupted_by": run.interrupted_by or ("Ctrl-C" if run.exit_status == 2 else None)}

    def write_results(self, d: Path, facts: dict[str, Any] | None = None) -> Path | None:
        """results.json, written once, with the status the run ends with (the lifecycle settles it first: KprRun.
        settle_exit_status): the run it is about, the verdict, counts and figure of every property, and every test's
        outcome (kpr matrix reads it). None when no test reported."""
        from ..evidence.results import results_json

        sums = self.run.sums
        if not sums.outcomes:
            return None
        return self.sink(d).write("results.json", results_json(sums.outcomes, sums.figures, sums.tests, self.results_run(facts)))

    # -- the recording ----------------------------------------------------------------------------------------------

    def recording_meta(self, handle: "ClusterHandle") -> dict[str, Any]:
        """The recording's first line: what a replay needs to ask the same requests (pytest_kpr.run.replay)."""
        run, s = self.run, self.run.settings
        provider = getattr(run.provider, "name", str(getattr(s.provider, "value", s.provider)))
        return {"run_id": run.run_id, "seed": s.seed, "provider": provider, "t0": clock.monotonic(),
                "wall_offset": clock.time() - clock.monotonic(), "cluster": handle.name, "created": handle.created,
                "profile": s.profile, "ip_families": list(s.ip_families), "clock": run.clock_kind,
                "worker": run.shared.worker if run.shared is not None else None}

    def write_recording(self) -> None:
        """recording.jsonl.gz (a pytest-xdist worker's: recording-<worker>.jsonl.gz) beside the evidence, once, at the end."""
        run = self.run
        if run.recorder is None or run.handle is None:
            return
        from ..evidence.store import put_bytes

        name = f"recording-{run.shared.worker}.jsonl.gz" if run.shared is not None else "recording.jsonl.gz"
        try:
            put_bytes(run.evidence_dir / name, run.recorder.dump())
        except OSError as e:
            run.progress(f"could not write the recording: {e}")

    # -- pytest-xdist ---------------------------------------------------------------------------------------------

    def hand_over(self) -> None:
        """A pytest-xdist worker's part, handed to the controller as the worker ends (its tests' outcomes, figures and
        costs went on their reports): what is the worker's and no test's."""
        run = self.run
        assert run.shared is not None
        run.host.hand_over({
            "worker": run.shared.worker, "joined": run.joined, "evidence_dir": str(run.evidence_dir), "record": run.record.to_json(),
            "facts": run.facts.to_json() if run.facts is not None else None, "cost": run.cost.to_json(),
        })

    def on_controller(self, state: dict[str, Any], settle: Callable[[], None]) -> Path | None:
        """On the xdist controller, after the workers finished (their costs already summed into the run's: KprRun.
        end_on_controller): one report.txt, one cluster.json and one results.json (after ``settle`` decided the exit
        status) from the parts the workers handed over and the reports (``state``: the shared run's, who provisioned and
        tore down). The workers' evidence directory, or None when no worker read the facts."""
        run = self.run
        parts = by_worker(run.sums.parts)
        with_facts = [p for p in parts if p["facts"] is not None]
        if not with_facts:
            return None
        d = Path(with_facts[0]["evidence_dir"])
        facts = with_facts[0]["facts"]
        self.write_report(d, facts)
        provisioner = next((p for p in parts if p.get("joined") == "provisioned"), with_facts[0])
        data = {**facts, "profile": run.settings.profile, **(provisioner.get("record") or {}), "cost": {
            **self.cost_record(), "workers": {p["worker"]: p["cost"] for p in parts}},
            "xdist": {"workers": [p["worker"] for p in parts], "provisioned_by": state.get("provisioned_by"),
                      "torn_down_by": state.get("torn_down_by")}}
        self.sink(d).write("cluster.json", data)
        settle()
        self.write_results(d, facts)
        return d
