"""The headless judgement (pytest_kpr.judge.headless) as a table: no root, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.headless import HeadlessObservation, headless_problems

SVC, CONTROL = "kpr-suite-headless-1/hl-clusterip", "kpr-suite-headless-1/hl-control"


def obs(listed: dict[str, tuple[str, ...]], control: dict[str, int], asks_for: str = "ClusterIP") -> HeadlessObservation:
    return HeadlessObservation(SVC, asks_for, listed, CONTROL, control)


@pytest.mark.parametrize(("observation", "want"), [
    (obs({"w1": (), "w2": ()}, {"w1": 1, "w2": 1}), []),
    (obs({"w1": ("10.96.0.9:80/TCP ClusterIP",), "w2": ()}, {"w1": 1, "w2": 1}),
     [f"w1 lists 1 frontend for {SVC}, a ClusterIP Service labelled service.kubernetes.io/headless: 10.96.0.9:80/TCP ClusterIP"]),
    (obs({"w1": ("0.0.0.0:30001/TCP NodePort", "[::]:30001/TCP NodePort"), "w2": ("0.0.0.0:30001/TCP NodePort",)},
         {"w1": 3, "w2": 3}, "NodePort"),
     [f"w1 lists 2 frontends for {SVC}, a NodePort Service labelled service.kubernetes.io/headless: 0.0.0.0:30001/TCP NodePort, "
      "[::]:30001/TCP NodePort",
      f"w2 lists 1 frontend for {SVC}, a NodePort Service labelled service.kubernetes.io/headless: 0.0.0.0:30001/TCP NodePort"]),
    # the control unread on one agent: nothing is judged there, and that is a problem, not a pass
    (obs({"w1": (), "w2": ()}, {"w1": 1, "w2": 0}),
     [f"the control Service {CONTROL} (the same ClusterIP Service without the label) is not listed on w2, so the agents' "
      f"frontends tell nothing about {SVC}"]),
    (obs({}, {}),
     [f"the control Service {CONTROL} (the same ClusterIP Service without the label) is not listed on any agent, so the "
      f"agents' frontends tell nothing about {SVC}"]),
])
def test_headless_problems(observation: HeadlessObservation, want: list[str]) -> None:
    assert headless_problems(observation) == want
