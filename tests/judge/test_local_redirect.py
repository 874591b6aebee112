"""The Local Redirect Policy judgement (pytest_kpr.judge.local_redirect) and its rule (rules.datapath.lrp_backends),
branch by branch: no root, no pytester, no cluster."""

from __future__ import annotations

from types import SimpleNamespace as P

import pytest

from pytest_kpr.judge.local_redirect import RedirectObservation, redirect_problems
from pytest_kpr.rules.datapath import lrp_backends

LOCAL = {"10.244.0.9:8080": "lrp-local"}
OWN = {"10.244.1.4:8080": "lrp-far-1", "10.244.1.5:8080": "lrp-far-2"}


def obs(*peers: str | None, local: dict[str, str] = LOCAL) -> RedirectObservation:
    return RedirectObservation("10.96.0.10:80", "kind-worker", local, OWN, peers)


@pytest.mark.parametrize(("o", "problems"), [
    (obs("10.244.0.9:8080", "10.244.0.9:8080"), []),
    (obs("10.244.0.9:8080", "10.244.1.4:8080", "10.244.1.5:8080", "10.244.1.4:8080"),
     ["3 of 4 connections from kind-worker to 10.96.0.10:80 reached lrp-far-1 x2, lrp-far-2 x1, not the policy's local lrp-local: "
      "the Local Redirect Policy did not redirect them"]),
    (obs("10.244.0.9:8080", None),
     ["1 of 2 connections from kind-worker to 10.96.0.10:80 did not connect"]),
    (obs("10.244.2.7:8080"),  # neither the policy's pod nor the Service's: named by its address
     ["1 of 1 connections from kind-worker to 10.96.0.10:80 reached 10.244.2.7:8080 x1, not the policy's local lrp-local: "
      "the Local Redirect Policy did not redirect them"]),
    (obs("10.244.1.4:8080", local={}),
     ["the policy selects no pod on kind-worker, so the redirect cannot be judged"]),
])
def test_the_redirect_judgement(o: RedirectObservation, problems: list[str]) -> None:
    assert redirect_problems(o) == problems


def test_the_policys_backends_on_a_node_are_its_pods_on_that_node_only() -> None:
    pods = [P(name="a", node="w1"), P(name="b", node="w2"), P(name="c", node="w1")]
    assert [p.name for p in lrp_backends(pods, "w1")] == ["a", "c"]
    assert lrp_backends(pods, "w3") == []
