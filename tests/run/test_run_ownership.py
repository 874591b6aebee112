"""pytest_kpr.run.ownership without pytest's session: the run's namespaces and objects carry its labels, and at a suite's
end or the run's only what still carries them is deleted. A dict-backed API stands in for the cluster."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.core.errors import ApiError
from pytest_kpr.core.wait import Timeouts
from pytest_kpr.run.ownership import OWNER_LABEL, OWNER_VALUE, RUN_LABEL, ForeignObject, Ownership
from pytest_kpr.run.settings import Settings


class DictKube:
    """get/list/create/delete over a dict of (kind, name, namespace) -> object; deleting a Namespace drops its objects."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.deleted: list[tuple[str, str, str]] = []
        self.patched: list[tuple[str, str, str]] = []

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.objects.get((kind, name, namespace or ""))

    def list(self, kind: str, namespace: str | None = None, selector: str | None = None) -> list[dict[str, Any]]:
        return [o for (k, _, ns), o in self.objects.items() if k == kind and (namespace is None or ns == namespace)]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "SelfSubjectAccessReview":  # kind's admin: may do anything, stores nothing
            return {**obj, "status": {"allowed": True}}
        md = obj["metadata"]
        if (obj["kind"], md["name"], md.get("namespace") or "") in self.objects:
            raise ApiError(409, "AlreadyExists", f'{obj["kind"]} "{md["name"]}" already exists')
        self.objects[(obj["kind"], md["name"], md.get("namespace") or "")] = obj
        return obj

    def patch(self, kind: str, name: str, namespace: str | None, patch: dict[str, Any]) -> dict[str, Any]:
        self.patched.append((kind, name, namespace or ""))
        obj = self.objects[(kind, name, namespace or "")]
        obj.setdefault("spec", {}).update(patch.get("spec") or {})
        return obj

    def delete(self, kind: str, name: str, namespace: str = "", grace_period_seconds: int | None = None) -> None:
        self.deleted.append((kind, name, namespace or ""))
        self.objects.pop((kind, name, namespace or ""), None)
        if kind == "Namespace":
            for key in [k for k in self.objects if k[2] == name]:
                del self.objects[key]


def ownership(**settings: Any) -> tuple[Ownership, DictKube, list[str]]:
    said: list[str] = []
    own = Ownership(Settings(**settings), "r1", Timeouts(), said.append)
    kube = DictKube()
    own.bind(kube)  # type: ignore[arg-type]
    return own, kube, said


def test_nothing_is_created_or_deleted_before_the_cluster_is_bound() -> None:
    own = Ownership(Settings(), "r1", Timeouts(), lambda line: None)
    with pytest.raises(AssertionError, match="no cluster yet"):
        own.create_namespace("datapath")
    own.end_namespace("kpr-x-r1", [])
    own.end()  # no cluster: nothing to do, no error


@pytest.mark.parametrize(("purpose", "privileged", "name", "level"), [
    ("datapath", False, "kpr-datapath-r1", "privileged"),  # the probes' namespace
    ("suite-maps", False, "kpr-suite-maps-r1", "baseline"),
    ("suite-maps", True, "kpr-suite-maps-r1", "privileged"),
    ("Suite-X-", False, "kpr-suite-x-r1", "baseline"),
])
def test_a_namespace_carries_the_runs_labels_and_its_pod_security_level(purpose: str, privileged: bool, name: str, level: str) -> None:
    own, kube, _ = ownership()
    assert own.create_namespace(purpose, privileged) == name and own.owns_namespace(name)
    labels = kube.get("Namespace", name)["metadata"]["labels"]  # type: ignore[index]
    assert labels == {"pod-security.kubernetes.io/enforce": level, OWNER_LABEL: OWNER_VALUE, RUN_LABEL: "r1"}


def test_objects_made_in_the_runs_namespace_are_labelled_and_recorded() -> None:
    own, kube, _ = ownership()
    ns = own.create_namespace("suite-a")
    own.kube.create({"kind": "Service", "metadata": {"name": "web", "namespace": ns}})
    own.kube.create({"kind": "ConfigMap", "metadata": {"name": "theirs", "namespace": "default"}})
    assert own.run_objects is not None and own.run_objects.created == [("Service", "web", ns)]
    assert kube.get("Service", "web", ns)["metadata"]["labels"][RUN_LABEL] == "r1"  # type: ignore[index]
    # made elsewhere: labelled (the gate lets the run delete it again), not recorded (no fixed-namespace clean-up)
    assert kube.get("ConfigMap", "theirs", "default")["metadata"]["labels"][RUN_LABEL] == "r1"  # type: ignore[index]


def test_a_suites_end_deletes_its_namespace_and_the_runs_end_waits_for_it() -> None:
    own, kube, _ = ownership()
    ns = own.create_namespace("suite-a")
    own.end_namespace(ns, [])
    assert ("Namespace", ns, "") in kube.deleted and ns not in own.namespaces and own.ending == [ns]
    own.end()
    assert kube.get("Namespace", ns) is None


def test_a_namespace_without_the_runs_labels_is_never_deleted() -> None:
    own, kube, said = ownership()
    ns = own.create_namespace("suite-a")
    kube.objects[("Namespace", ns, "")]["metadata"]["labels"][RUN_LABEL] = "another-run"
    own.end()
    assert kube.get("Namespace", ns) is not None and kube.deleted == []
    assert f"not deleting namespace {ns}: it does not carry this run's labels" in said


def test_in_a_fixed_namespace_only_the_runs_own_labelled_objects_go() -> None:
    own, kube, said = ownership(namespace="team-a")
    kube.create({"kind": "Namespace", "metadata": {"name": "team-a"}})
    assert own.create_namespace("suite-a") == "team-a" and own.create_namespace("datapath") == "team-a"
    own.kube.create({"kind": "Service", "metadata": {"name": "web", "namespace": "team-a"}})
    own.kube.create({"kind": "Pod", "metadata": {"name": "probe", "namespace": "team-a"}})
    kube.create({"kind": "Service", "metadata": {"name": "users", "namespace": "team-a"}})  # the user's, unlabelled
    kube.objects[("Pod", "probe-r1", "team-a")]["metadata"]["labels"][RUN_LABEL] = "another-run"  # relabelled since
    own.end_namespace("team-a", [("Service", "web", "team-a")])
    assert kube.deleted == [("Service", "web", "team-a")]
    own.end()
    assert kube.deleted == [("Service", "web", "team-a")] and kube.get("Namespace", "team-a") is not None
    assert kube.get("Service", "users", "team-a") is not None and kube.get("Pod", "probe-r1", "team-a") is not None


def test_a_missing_fixed_namespace_is_one_line() -> None:
    own, _, _ = ownership(namespace="team-a")
    with pytest.raises(Exception, match=r"^--kpr-namespace team-a: no such namespace \(a named namespace is used, never created"):
        own.create_namespace("suite-a")


def test_tracked_cluster_objects_go_at_the_end_while_they_carry_the_runs_label() -> None:
    own, kube, said = ownership()
    for name, run in (("pool-a", "r1"), ("pool-b", "another-run")):
        kube.create({"kind": "CiliumLoadBalancerIPPool", "metadata": {"name": name, "labels": {RUN_LABEL: run}}})
        own.track_cluster_object({"kind": "CiliumLoadBalancerIPPool", "metadata": {"name": name}})
    own.end()
    assert kube.deleted == [("CiliumLoadBalancerIPPool", "pool-a", "")] and "deleted CiliumLoadBalancerIPPool pool-a" in said


@pytest.mark.parametrize("labels", [None, {}, {RUN_LABEL: "another-run"}, {OWNER_LABEL: OWNER_VALUE}],
                         ids=["unlabelled", "no-labels", "another-run", "ours-without-run"])
def test_a_foreign_object_named_like_a_suites_is_never_deleted_changed_or_created_over(labels: dict[str, str] | None) -> None:
    """A user's Service in the fixed namespace, named as a suite names its own (a Service keeps its name there: the agents
    report it by name): creating over it, deleting it (a suite's clean-up in a finally) and patching it are each one
    line, and it stays as it was."""
    own, kube, _ = ownership(namespace="team-a")
    kube.create({"kind": "Namespace", "metadata": {"name": "team-a"}})
    own.create_namespace("terminating")
    theirs = {"kind": "Service", "metadata": {"name": "web", "namespace": "team-a", **({"labels": labels} if labels is not None else {})},
              "spec": {"type": "users"}}
    kube.create(theirs)
    with pytest.raises(ForeignObject, match=r"^not creating Service team-a/web: it is not this run's \(.*this run is r1\); rename"):
        own.kube.create({"kind": "Service", "metadata": {"name": "web", "namespace": "team-a"}, "spec": {"type": "probe"}})
    with pytest.raises(ForeignObject, match=r"^not deleting Service team-a/web: it is not this run's"):
        own.kube.delete("Service", "web", "team-a", grace_period_seconds=0)
    with pytest.raises(ForeignObject, match=r"^not changing Service team-a/web: it is not this run's"):
        own.kube.patch("Service", "web", "team-a", {"spec": {"type": "probe"}})
    own.end_namespace("team-a", [("Service", "web", "team-a")])
    own.end()
    assert kube.deleted == [] and kube.patched == [] and kube.get("Service", "web", "team-a") is theirs
    assert theirs["spec"] == {"type": "users"} and "\n" not in str(ForeignObject("x"))


def test_in_a_shared_namespace_the_pods_the_run_names_carry_its_run_id() -> None:
    """A user's pod `term-a` in the named namespace and the terminating suite's `term-a`: the run's is `term-a-r1` in the
    API, `term-a` to the suite (get, exec, logs, patch and delete map the name; answers show it back), so the two never
    meet -- the user's is neither read, changed nor deleted, and the run's goes at the suite's end."""
    own, kube, _ = ownership(namespace="team-a")
    kube.create({"kind": "Namespace", "metadata": {"name": "team-a"}})
    own.create_namespace("terminating")
    theirs = {"kind": "Pod", "metadata": {"name": "term-a", "namespace": "team-a"}, "spec": {"image": "users"}}
    kube.create(theirs)
    made = own.kube.create({"kind": "Pod", "metadata": {"name": "term-a", "namespace": "team-a"}, "spec": {"image": "probe"}})
    assert made["metadata"]["name"] == "term-a" and kube.get("Pod", "term-a-r1", "team-a")["spec"] == {"image": "probe"}
    assert own.kube.get("Pod", "term-a", "team-a")["spec"] == {"image": "probe"}
    assert [p["metadata"]["name"] for p in own.kube.list("Pod", "team-a")] == ["term-a", "term-a"]  # the user's, and ours as named
    own.kube.patch("Pod", "term-a", "team-a", {"spec": {"image": "x"}})
    own.kube.delete("Pod", "term-a", "team-a", grace_period_seconds=0)
    assert kube.patched == [("Pod", "term-a-r1", "team-a")] and kube.deleted == [("Pod", "term-a-r1", "team-a")]
    own.kube.create({"kind": "Pod", "metadata": {"name": "term-a", "namespace": "team-a"}, "spec": {}})
    own.end_namespace("team-a", [("Pod", "term-a", "team-a")])
    own.end()
    assert kube.deleted[-1] == ("Pod", "term-a-r1", "team-a") and kube.get("Pod", "term-a", "team-a") is theirs
    assert theirs["spec"] == {"image": "users"}


def test_the_runs_own_objects_pass_the_gate_and_an_absent_one_is_the_apis_answer() -> None:
    own, kube, _ = ownership()
    ns = own.create_namespace("suite-a")
    own.kube.create({"kind": "Pod", "metadata": {"name": "term-a", "namespace": ns}, "spec": {}})
    own.kube.patch("Pod", "term-a", ns, {"spec": {"image": "x"}})
    own.kube.delete("Pod", "term-a", ns)
    own.kube.delete("Pod", "never-made", ns)  # DictKube ignores it, as the client ignores a 404
    own.kube.create({"kind": "ClusterRoleBinding", "metadata": {"name": "kpr-kube-proxy-r1"}})
    own.kube.delete("ClusterRoleBinding", "kpr-kube-proxy-r1")
    assert kube.patched == [("Pod", "term-a", ns)]
    assert kube.deleted == [("Pod", "term-a", ns), ("Pod", "never-made", ns), ("ClusterRoleBinding", "kpr-kube-proxy-r1", "")]
    kube.create({"kind": "ClusterRoleBinding", "metadata": {"name": "cluster-admin"}})
    with pytest.raises(ForeignObject, match=r"^not deleting ClusterRoleBinding cluster-admin: it is not this run's \(not made by pytest-kpr"):
        own.kube.delete("ClusterRoleBinding", "cluster-admin")


def test_in_a_shared_namespace_the_runs_service_selects_only_the_runs_pods() -> None:
    """A user's pod in the named --kpr-namespace carrying the suites' app label is never a backend of the run's Service
    (the selector gets the run's label; every pod the run makes carries it); in the run's own namespaces selectors are
    left as written."""
    from pytest_kpr.testing import FakeCluster, FakeConfig

    fake = FakeCluster(FakeConfig(pod_ready_ticks=1))
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    own = Ownership(Settings(namespace="team-a"), "r1", Timeouts(), lambda line: None)
    own.bind(fake)  # type: ignore[arg-type]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "", "namespace": "team-a", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8080}]}]}}
    fake.create({**pod, "metadata": {**pod["metadata"], "name": "users-web"}})  # the user's, not through the run
    own.kube.create({**pod, "metadata": {**pod["metadata"], "name": "runs-web", "labels": {"app": "web"}}})
    svc = own.kube.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team-a"},
                           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    assert svc["spec"]["selector"] == {"app": "web", RUN_LABEL: "r1"}
    for _ in range(3):
        fake.list("Pod", "team-a")  # the fake's pods become ready as its clock ticks
    backends = {ep["targetRef"]["name"] for s in fake.list("EndpointSlice", "team-a") for ep in s.get("endpoints") or []}
    assert backends == {"runs-web-r1"}  # the API's name; the suite sees the name it gave
    assert {ep["targetRef"]["name"] for s in own.kube.list("EndpointSlice", "team-a") for ep in s.get("endpoints") or []} == {"runs-web"}
    own2, _, _ = ownership()
    ns = own2.create_namespace("suite-x")
    made = own2.kube.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
                             "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    assert made["spec"]["selector"] == {"app": "web"}
