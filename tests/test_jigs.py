"""Workloads as jigs (template + tweak callback + sanity check on create + a wait until ready), against the fake
cluster; and the rule that suites use only the library's public face."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from test_wait import lab_on

from pytest_kpr.observe.lab import Lab, LabError
from pytest_kpr.testing import FakeCluster, FakeConfig

SUITES = Path(__file__).resolve().parent.parent / "suites"


@pytest.fixture()
def lab() -> Lab:
    return lab_on(FakeCluster(FakeConfig(pod_ready_ticks=0)))


def test_a_tweak_changes_the_spec_and_the_jig_creates_it(lab: Lab) -> None:
    made = lab.create_service("etp-local", {"app": "x"}, "LoadBalancer", tweak=lambda s: s["spec"].update(externalTrafficPolicy="Local"))
    got = lab.kube.get("Service", "etp-local", lab.ns)
    assert got is not None and got["spec"]["externalTrafficPolicy"] == "Local" and got["spec"]["type"] == "LoadBalancer"
    assert made["metadata"]["name"] == "etp-local" and "Service/etp-local" in lab.created


def test_a_deployment_jig_labels_everything_with_its_own_name(lab: Lab) -> None:
    lab.create_deployment("aff", 4)
    dep = lab.kube.get("Deployment", "aff", lab.ns)
    assert dep is not None
    labels = {"app": "aff"}
    spec = dep["spec"]
    assert (dep["metadata"]["labels"], spec["selector"]["matchLabels"], spec["template"]["metadata"]["labels"],
            spec["template"]["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]) == (labels,) * 4
    assert spec["replicas"] == 4


@pytest.mark.parametrize(("tweak", "words"), [
    (lambda s: s["metadata"].update(name="other"), "a tweak changed Service t/svc into Service t/other: tweak the spec, not what the object is"),
    (lambda s: s["metadata"].update(namespace="kube-system"), "a tweak changed Service t/svc into Service kube-system/svc"),
    (lambda s: s.update(kind="Pod"), "a tweak changed Service t/svc into Pod t/svc"),
])
def test_a_tweak_that_changes_what_the_object_is_is_refused_before_create(lab: Lab, tweak, words: str) -> None:
    with pytest.raises(LabError) as e:
        lab.create_service("svc", {"app": "x"}, tweak=tweak)
    assert str(e.value).startswith(words)
    assert lab.kube.get("Service", "svc", lab.ns) is None and lab.kube.get("Service", "other", lab.ns) is None


def test_suites_use_only_the_public_face_of_the_library() -> None:
    """No suite reaches into a private name (``lab._create`` was the habit): what a suite needs is a public jig."""
    private = [f"{p.name}:{n.lineno} {ast.unparse(n)}" for p in sorted(SUITES.glob("test_*.py")) for n in ast.walk(ast.parse(p.read_text()))
               if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")]
    assert private == [], f"suites calling private names: {private}"
