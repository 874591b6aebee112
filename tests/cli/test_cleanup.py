"""``kpr cleanup``: what a killed run left in the cluster (the fake's), listed, then removed with --yes; another run's
objects and a user's stay. (Routes: tests/test_netns_cleanup_routes.py.)"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from pytest_kpr.cli.cleanup import run
from pytest_kpr.core.inputs import BadInput
from pytest_kpr.core.wait import Timeouts
from pytest_kpr.run.leftovers import parse_duration
from pytest_kpr.run.ownership import OWNER_LABEL, OWNER_VALUE, RUN_LABEL, Ownership
from pytest_kpr.run.settings import Settings
from pytest_kpr.testing import FakeCluster, FakeConfig


def _args(**kw: Any) -> argparse.Namespace:
    base = {"run": None, "older_than": None, "yes": False, "routes": False, "no_cluster": False, "namespace": None,
            "kubeconfig": None, "context": None, "timeout": 15.0}
    return argparse.Namespace(**{**base, **kw})


def _killed_run(fake: FakeCluster, run_id: str, **settings: Any) -> Ownership:
    """A run's objects as it leaves them when killed: its namespaces, a pool, kube-proxy's binding; no end."""
    own = Ownership(Settings(**settings), run_id, Timeouts(), lambda line: None)
    own.bind(fake)  # type: ignore[arg-type]
    ns = own.create_namespace("suite-nodeport")
    own.kube.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns}, "spec": {"ports": [{"port": 80}]}})
    labels = {OWNER_LABEL: OWNER_VALUE, RUN_LABEL: run_id}
    own.kube.create({"apiVersion": "cilium.io/v2", "kind": "CiliumLoadBalancerIPPool", "metadata": {"name": f"kpr-ns-{run_id}", "labels": labels},
                     "spec": {"blocks": [{"start": "198.18.21.10", "stop": "198.18.21.19"}]}})
    own.kube.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": f"kpr-kube-proxy-{run_id}", "labels": labels},
                     "roleRef": {"kind": "ClusterRole", "name": "system:node-proxier"}, "subjects": []})
    return own


def _names(fake: FakeCluster, kind: str) -> set[str]:
    return {n for (_, n) in fake._objects.get(kind, {})}


def test_a_killed_runs_objects_are_listed_then_removed_and_nothing_else(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeCluster(FakeConfig())
    _killed_run(fake, "r1")
    _killed_run(fake, "r2")  # another run, maybe still going
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kpr-suite-nodeport-r1x"}})  # a user's, named alike
    before = {k: _names(fake, k) for k in ("Namespace", "CiliumLoadBalancerIPPool", "ClusterRoleBinding")}
    rc = run(_args(run="r1"), kube_factory=lambda a: fake)
    out, err = capsys.readouterr()
    assert rc == 1 and err.strip() == "kpr cleanup: 3 objects listed; run again with --yes to remove them"
    assert [ln.split()[1:3] for ln in out.splitlines()] == [["Namespace", "kpr-suite-nodeport-r1"],
                                                            ["CiliumLoadBalancerIPPool", "kpr-ns-r1"],
                                                            ["ClusterRoleBinding", "kpr-kube-proxy-r1"]]
    assert {k: _names(fake, k) for k in before} == before  # listing removes nothing
    assert run(_args(run="r1", yes=True), kube_factory=lambda a: fake) == 0
    assert _names(fake, "Namespace") == before["Namespace"] - {"kpr-suite-nodeport-r1"}
    assert _names(fake, "CiliumLoadBalancerIPPool") == {"kpr-ns-r2"} and _names(fake, "ClusterRoleBinding") == {"kpr-kube-proxy-r2"}
    assert "kpr-suite-nodeport-r1x" in _names(fake, "Namespace")
    capsys.readouterr()
    assert run(_args(run="r1"), kube_factory=lambda a: fake) == 0
    assert "no object of run r1" in capsys.readouterr().err


def test_older_than_takes_only_runs_that_old(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeCluster(FakeConfig())
    _killed_run(fake, "old")
    _killed_run(fake, "new")
    for (ns, name), obj in [(k, o) for kind in ("Namespace", "CiliumLoadBalancerIPPool", "ClusterRoleBinding")
                            for k, o in fake._objects[kind].items()]:
        if name.endswith("-old"):
            obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    assert run(_args(older_than="2h", yes=True), kube_factory=lambda a: fake) == 0
    left = _names(fake, "Namespace") | _names(fake, "CiliumLoadBalancerIPPool") | _names(fake, "ClusterRoleBinding")
    assert not [n for n in left if n.endswith("-old")] and {"kpr-suite-nodeport-new", "kpr-ns-new", "kpr-kube-proxy-new"} <= left


def test_in_a_named_namespace_the_runs_objects_there_go_and_the_namespace_and_a_users_stay(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeCluster(FakeConfig())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    fake.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "users", "namespace": "team-a"}, "spec": {"ports": [{"port": 80}]}})
    own = _killed_run(fake, "r1", namespace="team-a")
    assert own.fixed_namespace == "team-a"
    assert run(_args(run="r1", namespace="team-a", yes=True), kube_factory=lambda a: fake) == 0
    assert {n for (ns, n) in fake._objects["Service"] if ns == "team-a"} == {"users"}
    assert "team-a" in _names(fake, "Namespace")


@pytest.mark.parametrize(("kw", "words"), [
    ({}, "name one run (--run ID) or an age (--older-than DURATION)"),
    ({"older_than": "soon"}, "--older-than: 'soon' is not a duration"),
    ({"no_cluster": True}, "--no-cluster without --routes"),
])
def test_bad_input_is_one_line(kw: dict[str, Any], words: str) -> None:
    with pytest.raises(BadInput, match=words.replace("(", r"\(").replace(")", r"\)")):
        run(_args(**kw), kube_factory=lambda a: FakeCluster(FakeConfig()))


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86400), ("1.5h", 5400)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
