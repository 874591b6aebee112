"""The reporter (pytest_kpr.plugin.reporter): what the test reports carry, summed. Table-driven, no cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_kpr.plugin.reporter import Reporter, carry
from pytest_kpr.run.cost import Cost
from pytest_kpr.run.sums import Sums


def report(nodeid: str, when: str = "call", **carried: Any) -> Any:
    r = pytest.TestReport(nodeid, ("f.py", 1, nodeid), {}, "passed", None, when)
    carry(r, **carried)
    return r


def summed(*reports: Any) -> Sums:
    sums = Sums()
    reporter = Reporter(sums)
    for r in reports:
        reporter.pytest_runtest_logreport(r)
    return sums


A = {"test": "s.py::a", "property": "nodeport", "outcome": "passed"}
B = {"test": "s.py::b", "property": "nodeport", "outcome": "failed", "message": "no answer"}


@pytest.mark.parametrize(("reports", "outcomes", "tests", "figures", "costs"), [
    ([report("s.py::a", "setup"), report("s.py::a", result=A), report("s.py::a", "teardown")],
     {"nodeport": ["passed"]}, [A], {}, {}),
    ([report("s.py::a", result=A, figures={"nodeport": "HTTP 200"}), report("s.py::b", result=B, figures={"nodeport": "HTTP 000"})],
     {"nodeport": ["passed", "failed"]}, [A, B], {"nodeport": "HTTP 000"}, {}),  # the figure as it was last
    # a teardown failure's bundle goes on the test's own result, not on another test's
    ([report("s.py::b", result=B), report("s.py::a", result=A), report("s.py::b", "teardown", evidence="failures/b")],
     {"nodeport": ["failed", "passed"]}, [{**B, "evidence": "failures/b"}, A], {}, {}),
    ([report("s.py::a", result=A), report("s.py::a", "teardown", cost=Cost(agent_execs=3, api_calls=2))],
     {"nodeport": ["passed"]}, [A], {}, {"s.py::a": 3}),
    ([report("s.py::x", "call")], {}, [], {}, {}),  # not a kpr test: nothing carried, nothing summed
])
def test_the_reports_sum_to_the_runs_results(reports: list[Any], outcomes: dict, tests: list, figures: dict, costs: dict) -> None:
    sums = summed(*reports)
    assert sums.outcomes == outcomes and sums.tests == tests and sums.figures == figures
    assert {t: c.commands for t, c in sums.cost_per_test.items()} == costs


def test_what_a_report_carries_survives_xdists_serialisation() -> None:
    """pytest-xdist sends a report to the controller as pytest_report_to_serializable makes it: the carried attributes
    are plain data and come back."""
    from _pytest.reports import _report_kwargs_from_json, _report_to_json

    r = report("s.py::b", "teardown", result=B, figures={"nodeport": "x"}, evidence="failures/b", cost=Cost(pod_execs=1))
    back = pytest.TestReport(**_report_kwargs_from_json(_report_to_json(r)))
    sums = summed(back)
    assert sums.tests == [{**B, "evidence": "failures/b"}] and sums.figures == {"nodeport": "x"}
    assert sums.cost_per_test["s.py::b"].pod_execs == 1


def test_report_txt_values_come_from_the_suites_reports_the_first_given_kept() -> None:
    from pytest_kpr.evidence.store import report_text

    sums = summed(report("s.py::a", report_values={"web_backends": "2"}), report("s.py::b", report_values={"web_backends": "4"}),
                  report("s.py::c", report_values={"holder_program": "cil_from_container"}))
    assert sums.report == {"web_backends": "2", "holder_program": "cil_from_container"}
    text = report_text({"kube_proxy_replacement": "True", **sums.report})
    assert "web_backends=2\n" in text and "kube_proxy_replacement=True\n" in text
    assert "nodeport_iptables_lines=n/a (NodePort did not run)\n" in text
    assert "socket_lb_coverage=n/a (not in the cluster's facts)\n" in text


@pytest.mark.parametrize(("output", "parts"), [
    ({"kpr_part": {"worker": "gw1"}}, [{"worker": "gw1"}]),
    ({}, []),  # a worker that handed nothing over (it never ran a kpr test, or it died)
])
def test_each_worker_hands_over_its_part_as_it_ends(output: dict, parts: list) -> None:
    sums = Sums()
    Reporter(sums).pytest_testnodedown(SimpleNamespace(workeroutput=output), None)
    assert sums.parts == parts
