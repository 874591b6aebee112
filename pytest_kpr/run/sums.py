"""What a run's tests came to, summed where the run is summed up: the xdist controller, or the one process of a run
without ``-n``. The plugin's reporter (pytest_kpr.plugin.reporter) fills it from the test reports; results.json,
cluster.json's cost and the ``kpr properties`` table are written from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .cost import Cost


@dataclass
class Sums:
    """Outcomes per property, every kpr test's result, each property's figure, each test's cost; and the parts the
    pytest-xdist workers handed over as they ended (their facts, cost and report.txt values)."""

    outcomes: dict[str, list[str]] = field(default_factory=dict)
    tests: list[dict[str, str]] = field(default_factory=list)
    figures: dict[str, str] = field(default_factory=dict)
    #: report.txt's values the suites gave (each key by the suite that observes it)
    report: dict[str, str] = field(default_factory=dict)
    cost_per_test: dict[str, Cost] = field(default_factory=dict)
    parts: list[dict[str, Any]] = field(default_factory=list)

    def add_result(self, result: dict[str, str]) -> None:
        self.outcomes.setdefault(result["property"], []).append(result["outcome"])
        self.tests.append(dict(result))

    def add_evidence(self, test: str, evidence: str) -> None:
        """A failure's bundle, on the test's latest result (a teardown failure's on its call's)."""
        mine = next((t for t in reversed(self.tests) if t["test"] == test), None)
        if mine is not None:
            mine["evidence"] = evidence
