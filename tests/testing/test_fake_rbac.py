"""The fake's RBAC authorizer (pytest_kpr.testing.rbac): the rule matching of kubernetes/kubernetes' evaluation helpers,
bindings by user, group and ServiceAccount, namespaced and cluster-wide, and the bind check on creating a binding."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.core.errors import ApiError
from pytest_kpr.testing import FakeCluster, FakeConfig
from pytest_kpr.testing.rbac import Request, User, allowed, escalation, plural, rule_covers


@pytest.mark.parametrize(("rule", "req", "covers"), [
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, Request("get", "", "pods"), True),
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, Request("list", "", "pods"), False),
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}, Request("delete", "", "pods"), True),
    ({"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"]}, Request("get", "", "pods"), False),
    ({"apiGroups": ["*"], "resources": ["pods"], "verbs": ["get"]}, Request("get", "apps", "pods"), True),
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}, Request("create", "", "pods/exec"), False),
    ({"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}, Request("create", "", "pods/exec"), True),
    ({"apiGroups": [""], "resources": ["*/exec"], "verbs": ["create"]}, Request("create", "", "pods/exec"), True),
    ({"apiGroups": [""], "resources": ["*/exec"], "verbs": ["create"]}, Request("create", "", "pods"), False),
    ({"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}, Request("get", "", "secrets"), True),
    ({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]}, Request("get", "", "secrets", name="a"), True),
    ({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]}, Request("get", "", "secrets", name="b"), False),
    ({"nonResourceURLs": ["/version"], "verbs": ["get"]}, Request("get", url="/version"), True),
    ({"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]}, Request("get", url="/healthz/etcd"), True),
    ({"nonResourceURLs": ["/version"], "verbs": ["get"]}, Request("get", url="/metrics"), False),
])
def test_a_rule_covers_a_request_as_the_api_server_decides(rule: dict[str, Any], req: Request, covers: bool) -> None:
    assert rule_covers(rule, req) is covers


ROLE = {"kind": "ClusterRole", "metadata": {"name": "work"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]}


def _store(*objs: dict[str, Any]) -> dict[str, dict[tuple[str | None, str], dict[str, Any]]]:
    out: dict[str, dict[tuple[str | None, str], dict[str, Any]]] = {}
    for o in objs:
        out.setdefault(o["kind"], {})[(o["metadata"].get("namespace"), o["metadata"]["name"])] = o
    return out


def _binding(kind: str, subject: dict[str, Any], ns: str | None = None, role: str = "work") -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": "b", **({"namespace": ns} if ns else {})},
            "roleRef": {"kind": "ClusterRole", "name": role}, "subjects": [subject]}


@pytest.mark.parametrize(("binding", "req", "ok"), [
    (_binding("ClusterRoleBinding", {"kind": "User", "name": "bob"}), Request("create", "", "pods", "any"), True),
    (_binding("ClusterRoleBinding", {"kind": "Group", "name": "ci"}), Request("create", "", "pods", "any"), True),
    (_binding("ClusterRoleBinding", {"kind": "Group", "name": "other"}), Request("create", "", "pods", "any"), False),
    (_binding("RoleBinding", {"kind": "User", "name": "bob"}, "team"), Request("create", "", "pods", "team"), True),
    (_binding("RoleBinding", {"kind": "User", "name": "bob"}, "team"), Request("create", "", "pods", "elsewhere"), False),
    (_binding("RoleBinding", {"kind": "User", "name": "bob"}, "team"), Request("create", "", "pods", ""), False),
    (_binding("RoleBinding", {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"}, "team"), Request("create", "", "pods", "team"), False),
])
def test_a_binding_grants_its_role_to_its_subjects_where_it_is(binding: dict[str, Any], req: Request, ok: bool) -> None:
    assert allowed(req, User("bob", ("ci",)), _store(ROLE, binding)) is ok


def test_a_serviceaccount_subject_is_the_accounts_user_name() -> None:
    b = _binding("RoleBinding", {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"}, "team")
    assert allowed(Request("create", "", "pods", "team"), User("system:serviceaccount:ci:bot"), _store(ROLE, b))


def test_binding_a_role_needs_bind_on_it() -> None:
    may_bind = {"kind": "ClusterRole", "metadata": {"name": "binder"}, "rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["work"], "verbs": ["bind"]}]}
    store = _store(ROLE, may_bind, _binding("ClusterRoleBinding", {"kind": "User", "name": "bob"}, role="binder"))
    bob = User("bob")
    assert escalation(_binding("RoleBinding", {"kind": "User", "name": "bob"}, "team", role="work"), bob, store) is None
    why = escalation(_binding("RoleBinding", {"kind": "User", "name": "bob"}, "team", role="cluster-admin"), bob, store)
    assert why is not None and "no bind on ClusterRole cluster-admin" in why


def test_the_fake_refuses_what_its_user_may_not_do_and_allows_everything_without_one() -> None:
    fake = FakeCluster(FakeConfig())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    fake.create(ROLE)
    fake.create({**_binding("RoleBinding", {"kind": "User", "name": "bob"}, "team"), "apiVersion": "rbac.authorization.k8s.io/v1"})
    fake.rbac.act_as(User("bob"))
    fake.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}, "spec": {"containers": []}})
    with pytest.raises(ApiError, match=r'403 Forbidden: user "bob" cannot get pods p in team'):
        fake.get("Pod", "p", "team")
    with pytest.raises(ApiError, match="403"):
        fake.server_version()
    review = fake.create({"kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {"verb": "create", "resource": "pods",
                                                                                             "namespace": "team"}}})
    assert review["status"]["allowed"] is True
    assert fake.create({"kind": "SelfSubjectReview"})["status"]["userInfo"]["username"] == "bob"
    fake.rbac.act_as(None)
    assert fake.get("Pod", "p", "team") is not None


@pytest.mark.parametrize(("kind", "resource"), [("Pod", "pods"), ("NetworkPolicy", "networkpolicies"),
                                                 ("CiliumLoadBalancerIPPool", "ciliumloadbalancerippools")])
def test_plural(kind: str, resource: str) -> None:
    assert plural(kind) == resource
