"""The node-exposure judgement (pytest_kpr.judge.node_exposure) and the rule it applies (rules.datapath.service_exposed_on,
label_selector_matches), branch by branch: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.node_exposure import ExposureObservation, exposure_problems
from pytest_kpr.rules.datapath import label_selector_matches, service_exposed_on

W1 = {"kubernetes.io/hostname": "w1", "topology.kubernetes.io/zone": "zone-a", "service.cilium.io/node": "beefy"}


@pytest.mark.parametrize(("selector", "matches"), [
    ("kubernetes.io/hostname=w1", True), ("kubernetes.io/hostname==w1", True), ("kubernetes.io/hostname=w2", False),
    ("kubernetes.io/hostname!=w2", True), ("kubernetes.io/hostname!=w1", False),
    ("topology.kubernetes.io/zone", True), ("!topology.kubernetes.io/zone", False), ("!gpu", True), ("gpu", False),
    ("kubernetes.io/hostname in (w1, w2)", True), ("kubernetes.io/hostname notin (w1,w2)", False), ("gpu notin (yes)", True),
    ("kubernetes.io/hostname=w1,topology.kubernetes.io/zone=zone-b", False),  # every term must hold
    ("kubernetes.io/hostname in (w1,w2),topology.kubernetes.io/zone=zone-a", True),
    ("", True),  # the empty selector selects everything
])
def test_a_label_selector_as_kubernetes_reads_it(selector: str, matches: bool) -> None:
    assert label_selector_matches(selector, W1) is matches


def test_a_selector_this_reader_does_not_know_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="not a label selector term"):
        label_selector_matches("a=b=c", W1)


@pytest.mark.parametrize(("annotations", "exposed"), [
    ({}, True),  # no annotation: every node
    ({"service.cilium.io/node": "beefy"}, True), ({"service.cilium.io/node": "tiny"}, False),
    ({"service.cilium.io/node-selector": "kubernetes.io/hostname=w1"}, True),
    ({"service.cilium.io/node-selector": "kubernetes.io/hostname=w2"}, False),
    # the node-selector decides alone (SRC_NODE_EXPOSURE: "prioritize any existing node-selector annotation")
    ({"service.cilium.io/node-selector": "kubernetes.io/hostname=w1", "service.cilium.io/node": "tiny"}, True),
    ({"service.cilium.io/node-selector": "kubernetes.io/hostname=w2", "service.cilium.io/node": "beefy"}, False),
])
def test_the_exposure_rule(annotations: dict[str, str], exposed: bool) -> None:
    assert service_exposed_on(annotations, W1) is exposed


def obs(listed: dict[str, int], exposed_on: tuple[str, ...] = ("w1",), control: dict[str, int] | None = None) -> ExposureObservation:
    return ExposureObservation("ns/nx", {"service.cilium.io/node-selector": "kubernetes.io/hostname=w1"}, exposed_on, listed, "ns/ctl",
                               control if control is not None else {"w1": 1, "w2": 1})


@pytest.mark.parametrize(("o", "problems"), [
    (obs({"w1": 1, "w2": 0}), []),
    (obs({"w1": 0, "w2": 0}, ()), []),  # exposed nowhere, listed nowhere
    (obs({"w1": 1, "w2": 1}), ["ns/nx (service.cilium.io/node-selector: kubernetes.io/hostname=w1) selects w1, yet w2 lists its "
                               "frontends: the agent installed a Service not exposed on its node"]),
    (obs({"w1": 0, "w2": 0}), ["ns/nx (service.cilium.io/node-selector: kubernetes.io/hostname=w1) is exposed on w1, yet the agent "
                               "there lists no frontend of it"]),
    (obs({"w1": 0, "w2": 2}, ()), ["selects no node, yet w2 lists its frontends"]),
    (obs({"w1": 1, "w2": 0}, control={"w1": 1, "w2": 0}), ["the control Service ns/ctl (no exposure annotation) is not listed on w2, so "
                                                           "the agents' frontends tell nothing about ns/nx"]),
    (obs({}, control={}), ["is not listed on any agent"]),
])
def test_the_exposure_judgement(o: ExposureObservation, problems: list[str]) -> None:
    got = exposure_problems(o)
    assert len(got) == len(problems) and all(w in g for w, g in zip(problems, got, strict=True)), got
