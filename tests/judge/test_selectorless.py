"""The selectorless judgement (pytest_kpr.judge.selectorless) as a table: no root, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.selectorless import SelectorlessObservation, selectorless_problems

SVC, BE = "kpr-suite-selectorless-1/sl", "10.244.1.5:8080/TCP"


@pytest.mark.parametrize(("listed", "want"), [
    ({"w1": (BE,), "w2": (BE,)}, []),
    ({"w1": (BE,), "w2": None}, [f"w2 lists no frontend for {SVC}, a Service without a selector"]),
    ({"w1": ()}, [f"w1 lists no backend for {SVC}; its EndpointSlice names {BE}"]),
    ({"w1": (BE, "10.244.2.9:8080/TCP")}, [f"w1 lists ['{BE}', '10.244.2.9:8080/TCP'] for {SVC}; its EndpointSlice names {BE}"]),
])
def test_selectorless_problems(listed: dict, want: list[str]) -> None:
    assert selectorless_problems(SelectorlessObservation("IPv4", SVC, BE, listed)) == want
