"""The run's one reporter: what results.json, cluster.json and the ``kpr properties`` table say comes from test reports.

Each kpr test's report carries what the process that ran it saw (:func:`carry`, in ``pytest_runtest_makereport``): the
test's outcome with its property, address family and reason (``kpr_result``), the figures its property gained
(``kpr_figures``) and report.txt's values its suite gave (``kpr_report``), the path of its failure bundle
(``kpr_evidence``) and, on its teardown report, what it cost the cluster (``kpr_cost``). pytest-xdist sends every
report from its worker to the controller as it is, and pytest-bdd carries its scenario the same way. :class:`Reporter` is registered only where the run is summed up -- the controller, or the one
process of a run without ``-n`` -- and reads them in ``pytest_runtest_logreport``: so a run with and without ``-n``
sums up the same reports. What is a worker's and no test's (its cluster's facts, its cost) comes with
``workeroutput`` when the worker ends (``pytest_testnodedown``).
"""

from __future__ import annotations

from typing import Any

import pytest

from ..run.cost import Cost
from ..run.sums import Sums

#: the report attributes a kpr test's report carries (plain data: pytest-xdist serialises a report's attributes)
RESULT, FIGURES, EVIDENCE, COST, REPORT = "kpr_result", "kpr_figures", "kpr_evidence", "kpr_cost", "kpr_report"


def carry(report: pytest.TestReport, *, result: dict[str, str] | None = None, figures: dict[str, str] | None = None,
          evidence: str | None = None, cost: Cost | None = None, report_values: dict[str, str] | None = None) -> None:
    """Put what this process saw of a test on its report, for the reporter wherever it runs."""
    if result is not None:
        setattr(report, RESULT, result)
    if figures:
        setattr(report, FIGURES, figures)
    if evidence is not None:
        setattr(report, EVIDENCE, evidence)
    if cost is not None:
        setattr(report, COST, cost.to_json())
    if report_values:
        setattr(report, REPORT, report_values)


class Reporter:
    """Reads every kpr test report into the run's sums (pytest_kpr.run.sums), and each pytest-xdist worker's part as
    it ends."""

    def __init__(self, sums: Sums) -> None:
        self.sums = sums

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = getattr(report, RESULT, None)
        if result is not None:
            self.sums.add_result(result)
        self.sums.figures.update(getattr(report, FIGURES, None) or {})
        for key, value in (getattr(report, REPORT, None) or {}).items():
            self.sums.report.setdefault(key, value)
        evidence = getattr(report, EVIDENCE, None)
        if evidence is not None:
            self.sums.add_evidence(report.nodeid, evidence)
        cost = getattr(report, COST, None)
        if cost is not None:
            self.sums.cost_per_test[report.nodeid] = Cost(**{k: v for k, v in cost.items() if k != "commands"})

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A pytest-xdist worker ended: its part, if it handed one over (a worker that died did not)."""
        part = getattr(node, "workeroutput", {}).get("kpr_part")
        if part is not None:
            self.sums.parts.append(part)
