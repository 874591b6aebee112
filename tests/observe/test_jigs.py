"""Workloads as jigs (template + tweak callback + sanity check on create + a wait until ready), against the fake
cluster; and the rule that suites use only the library's public face."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.test_wait import lab_on

from pytest_kpr.observe.lab import Lab, LabError
from pytest_kpr.testing import FakeCluster, FakeConfig

SUITES = Path(__file__).resolve().parents[2] / "suites"


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


# -- the sanity check of what the API server returned (Lab._jig, observe.lab.sanity_problems) ------------------------

def _svc(type_: str = "ClusterIP", **spec: object) -> dict:
    return {"kind": "Service", "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"type": type_, "ports": [{"port": 80, "protocol": "TCP"}], **spec}}


def _answer(asked: dict, **spec: object) -> dict:
    import copy

    got = copy.deepcopy(asked)
    got["spec"].update(spec)
    return got


NP = [{"port": 80, "protocol": "TCP", "nodePort": 30001}]


@pytest.mark.parametrize(("asked", "got", "want"), [
    (_svc(), _answer(_svc(), clusterIP="10.96.0.9"), []),
    (_svc(), _answer(_svc(), clusterIP=""), ["no ClusterIP allocated"]),
    (_svc(clusterIP="None"), _answer(_svc(clusterIP="None")), []),
    (_svc(clusterIP="None"), _answer(_svc(), clusterIP="10.96.0.9"), ["clusterIP 10.96.0.9, asked None (headless)"]),
    (_svc("NodePort"), _answer(_svc("NodePort"), clusterIP="10.96.0.9", ports=NP), []),
    (_svc("NodePort"), _answer(_svc("NodePort"), clusterIP="10.96.0.9"), ["no NodePort allocated for port 80"]),
    (_svc("NodePort", ports=NP), _answer(_svc("NodePort"), clusterIP="10.96.0.9", ports=[{"port": 80, "protocol": "TCP", "nodePort": 30002}]),
     ["NodePort 30002 for port 80, asked 30001"]),
    (_svc(), _answer(_svc(), clusterIP="10.96.0.9", ports=NP), ["a NodePort 30001 on port 80 of a ClusterIP Service"]),
    (_svc("LoadBalancer", allocateLoadBalancerNodePorts=False), _answer(_svc("LoadBalancer", allocateLoadBalancerNodePorts=False), clusterIP="10.96.0.9"), []),
    (_svc("LoadBalancer", externalTrafficPolicy="Local"), _answer(_svc("LoadBalancer", externalTrafficPolicy="Local"), clusterIP="10.96.0.9", ports=NP),
     ["no healthCheckNodePort allocated for a LoadBalancer with externalTrafficPolicy Local"]),
    (_svc("NodePort"), _answer(_svc("NodePort"), type="ClusterIP", clusterIP="10.96.0.9"), ["type ClusterIP, asked NodePort", "no NodePort allocated for port 80"]),
    (_svc(), _answer(_svc(), clusterIP="10.96.0.9", ports=[{"port": 81, "protocol": "TCP"}]), ["ports [(81, 'TCP')], asked [(80, 'TCP')]"]),
    (_svc(), {"kind": "Service", "metadata": {"name": "t", "namespace": "ns"}, "spec": {}}, ["the answer is Service ns/t"]),
    ({"kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": {"replicas": 2}},
     {"kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}, "spec": {"replicas": 1}}, ["replicas 1, asked 2"]),
])
def test_the_sanity_check_of_an_answer(asked: dict, got: dict, want: list[str]) -> None:
    from pytest_kpr.observe.lab import sanity_problems

    assert sanity_problems(asked, got) == want


def test_a_jig_refuses_an_answer_that_is_not_what_was_asked(lab: Lab) -> None:
    """An API server (or an admission webhook) that returns a NodePort Service without its NodePort: the jig says so,
    naming the object, instead of a suite failing later on a missing port."""
    inner = lab.kube

    class DropsNodePorts:
        def __getattr__(self, name: str) -> object:
            return getattr(inner, name)

        def create(self, obj: dict) -> dict:
            out = inner.create(obj)
            for p in out.get("spec", {}).get("ports", []):
                p.pop("nodePort", None)
            return out

    lab.kube = DropsNodePorts()  # type: ignore[assignment]
    with pytest.raises(LabError, match=r"the API server's answer to creating Service .*/np is not what was asked: no NodePort allocated for port 80"):
        lab.create_service("np", {"app": "x"}, "NodePort")
