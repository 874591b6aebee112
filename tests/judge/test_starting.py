"""The starting judgement (pytest_kpr.judge.starting) as a table: no root, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.starting import StartingObservation, starting_problems

SVC, READY, START = "kpr-suite-starting-1/st", "10.244.1.5:8080", "10.244.1.6:8080"


@pytest.mark.parametrize(("slots", "want"), [
    ({"w1": ((READY,), ()), "w2": ((READY,), ())}, []),
    ({"w1": ((READY,), ()), "w2": None}, [f"w2 has no slots for {SVC}'s ClusterIP"]),
    ({"w1": ((READY, START), ())}, [f"w1 gives the starting endpoint {START} (ready, serving, terminating false) a slot of {SVC}: "
                                    f"picked ['{READY}', '{START}'], kept []"]),
    ({"w1": ((READY,), (START,))}, [f"w1 gives the starting endpoint {START} (ready, serving, terminating false) a slot of {SVC}: "
                                    f"picked ['{READY}'], kept ['{START}']"]),
    ({"w1": ((), ())}, [f"w1 picks no backend for {SVC}; its ready endpoint is {READY}"]),
])
def test_starting_problems(slots: dict, want: list[str]) -> None:
    assert starting_problems(StartingObservation("IPv4", SVC, READY, START, slots)) == want
