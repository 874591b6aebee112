"""The fake's authorizer: Kubernetes RBAC over the Roles, ClusterRoles and bindings the fake holds, for a user it acts as.

What the API server's RBAC authorizer decides, reduced to what a run meets: a request is allowed when a
ClusterRoleBinding binds the user (by name, one of its groups, or its ServiceAccount) to a ClusterRole with a rule that
covers it, or a RoleBinding in the request's namespace binds it to a Role there or to a ClusterRole; a non-resource URL
only through a ClusterRoleBinding. A rule covers a request as kubernetes/kubernetes
pkg/apis/rbac/v1/evaluation_helpers.go@6732d913 decides: ``if ruleResource == combinedRequestedResource`` (``pods/exec``),
or ``*``, or ``*/<subresource>``; ``if len(rule.ResourceNames) == 0 { return true }``; a URL rule ending in ``*`` covers
its prefix. Creating a binding is escalation-checked (pkg/registry/rbac/escalation_check.go@31b6ba4e BindingAuthorized:
``Verb: "bind"`` on ``clusterroles``/``roles`` named by the roleRef, ``Namespace: bindingNamespace``). The server also
admits a binding whose user already holds every permission of the role; the fake does not model that path, so what
the fake admits, the server admits too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

Obj = dict[str, Any]


@dataclass(frozen=True)
class Request:
    """One request's attributes, as the authorizer sees them."""
    verb: str
    group: str = ""
    resource: str = ""  # "pods", "pods/exec"
    namespace: str = ""  # "" for a cluster-scoped object or "every namespace"
    name: str = ""
    url: str = ""  # a non-resource URL ("/version")

    def says(self) -> str:
        what = self.url or (f"{self.resource}{'.' + self.group if self.group else ''}{' ' + self.name if self.name else ''}")
        return f"{self.verb} {what}{' in ' + self.namespace if self.namespace else ''}"


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()


def plural(kind: str) -> str:
    """The resource of a kind (``Pod`` -> ``pods``, ``NetworkPolicy`` -> ``networkpolicies``)."""
    low = kind.lower()
    return low[:-1] + "ies" if low.endswith("y") else low + "s"


def _has(values: Iterable[Any], want: str) -> bool:
    vals = [str(v) for v in values or ()]
    return "*" in vals or want in vals


def rule_covers(rule: Obj, req: Request) -> bool:
    """Whether one PolicyRule covers the request (helpers.go: VerbMatches, APIGroupMatches, ResourceMatches,
    ResourceNameMatches, NonResourceURLMatches; a URL rule ending in ``*`` covers the prefix)."""
    if not _has(rule.get("verbs"), req.verb):
        return False
    if req.url:
        return any(u == req.url or u == "*" or (u.endswith("*") and req.url.startswith(u[:-1])) for u in map(str, rule.get("nonResourceURLs") or ()))
    if not _has(rule.get("apiGroups"), req.group):
        return False
    resources = [str(r) for r in rule.get("resources") or ()]
    sub = req.resource.partition("/")[2]
    if not ("*" in resources or req.resource in resources or (sub and f"*/{sub}" in resources)):
        return False
    names = rule.get("resourceNames") or []
    return not names or req.name in names


def _binds(binding: Obj, user: User) -> bool:
    for s in binding.get("subjects") or []:
        kind, name = s.get("kind"), s.get("name")
        if (kind == "User" and name == user.name) or (kind == "Group" and name in user.groups):
            return True
        if kind == "ServiceAccount" and user.name == f"system:serviceaccount:{s.get('namespace')}:{name}":
            return True
    return False


def allowed(req: Request, user: User, objects: dict[str, dict[tuple[str | None, str], Obj]]) -> bool:
    """Whether ``user`` may make ``req`` given the RBAC objects (the fake's store: kind -> (namespace, name) -> object)."""
    cluster_roles = {n: o for (_, n), o in objects.get("ClusterRole", {}).items()}
    for b in objects.get("ClusterRoleBinding", {}).values():
        ref = b.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole" and _binds(b, user) and any(
                rule_covers(r, req) for r in (cluster_roles.get(ref.get("name")) or {}).get("rules") or []):
            return True
    if req.url or not req.namespace:
        return False
    for (ns, _), b in objects.get("RoleBinding", {}).items():
        if ns != req.namespace or not _binds(b, user):
            continue
        ref = b.get("roleRef") or {}
        role = cluster_roles.get(ref.get("name")) if ref.get("kind") == "ClusterRole" else objects.get("Role", {}).get((ns, ref.get("name")))
        if any(rule_covers(r, req) for r in (role or {}).get("rules") or []):
            return True
    return False


def escalation(obj: Obj, user: User, objects: dict[str, dict[tuple[str | None, str], Obj]]) -> str | None:
    """Why creating the binding ``obj`` is refused (the user may not bind the role it references), or None."""
    if obj.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
        return None
    ref = obj.get("roleRef") or {}
    ns = (obj.get("metadata") or {}).get("namespace") or ""
    resource = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
    req = Request("bind", "rbac.authorization.k8s.io", resource, ns, str(ref.get("name") or ""))
    if allowed(req, user, objects):
        return None
    return (f'{plural(obj["kind"])} "{(obj.get("metadata") or {}).get("name")}" is forbidden: user "{user.name}" is attempting '
            f"to grant RBAC permissions not currently held (no bind on {ref.get('kind')} {ref.get('name')})")


class FakeRbac:
    """The fake API server's authorization: off (everything allowed, as for kind's admin) until :meth:`act_as` names a
    user; then every request of the fake is authorized against the RBAC objects it holds, a denied one raising 403 as the
    API server does, and a SelfSubjectAccessReview answered by the same rules."""

    def __init__(self, objects: dict[str, dict[tuple[str | None, str], Obj]]):
        self.objects = objects
        self.user: User | None = None

    def act_as(self, user: User | None) -> None:
        self.user = user

    def check(self, req: Request) -> None:
        """Raise 403 Forbidden when a user is set and may not make ``req``."""
        from ..core.errors import ApiError

        if self.user is not None and not allowed(req, self.user, self.objects):
            raise ApiError(403, "Forbidden", f'user "{self.user.name}" cannot {req.says()}')

    def check_call(self, verb: str, kind: str, namespace: str | None, name: str = "") -> None:
        """:meth:`check` for a call on an object of ``kind``."""
        from ..k8s.api import api_version_of

        if self.user is not None:
            self.check(Request(verb, api_version_of(kind).rpartition("/")[0], plural(kind), namespace or "", name))

    def admit_binding(self, obj: Obj) -> None:
        from ..core.errors import ApiError

        why = escalation(obj, self.user, self.objects) if self.user is not None else None
        if why:
            raise ApiError(403, "Forbidden", why)

    def review(self, spec: Obj) -> bool | None:
        """A SelfSubjectAccessReview's answer for the user (None when no user is set: the caller decides)."""
        if self.user is None:
            return None
        res, url = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if res:
            what = res.get("resource", "") + (f"/{res['subresource']}" if res.get("subresource") else "")
            req = Request(str(res.get("verb")), str(res.get("group") or ""), what, str(res.get("namespace") or ""), str(res.get("name") or ""))
        else:
            req = Request(str((url or {}).get("verb")), url=str((url or {}).get("path")))
        return allowed(req, self.user, self.objects)

    def who(self) -> Obj:
        """A SelfSubjectReview's userInfo: the user acted as, else kind's admin."""
        if self.user is None:
            return {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]}
        return {"username": self.user.name, "groups": [*self.user.groups, "system:authenticated"]}
