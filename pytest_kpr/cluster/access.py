"""What a run needs of the API server, read from the RBAC manifest (``clusters/rbac.yaml``), and asked of it.

Each rule of the manifest's Roles and ClusterRoles is expanded into needs (one verb on one resource, or on one
non-resource URL), placed by the role's ``kpr.cilium.io/scope`` annotation; :func:`review` asks the API server with a
SelfSubjectAccessReview, which the server answers and stores nothing (``kpr check-access``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import KprError
from ..k8s.api import KubeAPI

#: the manifest's scopes: where a role's needs are asked
SCOPES = ("cluster", "run-namespaces", "cilium-namespace")
#: the manifest's modes: which way of giving the run its namespaces needs a role (clusters/rbac.yaml's header)
MODES = ("any", "creates-namespaces", "named-namespace")
#: more than any RBAC manifest is
MAX_MANIFEST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Need:
    role: str
    scope: str  # one of SCOPES
    when: str  # always | disruptive
    verb: str
    group: str = ""
    resource: str = ""  # "pods", "pods/exec"
    name: str = ""  # a resourceNames entry, if the rule has one
    url: str = ""  # a non-resource URL ("/version")
    mode: str = "any"  # one of MODES

    def what(self) -> str:
        if self.url:
            return self.url
        group = f".{self.group}" if self.group else ""
        return f"{self.resource}{group}{f' {self.name}' if self.name else ''}"


class ManifestError(KprError):
    """The RBAC manifest cannot be read as the roles check-access needs (one line)."""


def load_needs(path: Path) -> list[Need]:
    """Every need of the Roles and ClusterRoles in ``path``, in the manifest's order."""
    from ..core.yamlfile import YamlFileError, load

    try:
        docs = load(path, "the RBAC manifest", MAX_MANIFEST_BYTES, all_documents=True)
    except YamlFileError as e:
        raise ManifestError(str(e)) from None
    out: list[Need] = []
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") not in ("Role", "ClusterRole"):
            continue
        meta = doc.get("metadata") or {}
        notes = meta.get("annotations") or {}
        name = str(meta.get("name", "?"))
        scope, when = notes.get("kpr.cilium.io/scope"), notes.get("kpr.cilium.io/when", "always")
        mode = notes.get("kpr.cilium.io/mode", "any")
        if scope not in SCOPES or when not in ("always", "disruptive") or mode not in MODES:
            raise ManifestError(f"the RBAC manifest {path}: {doc.get('kind')} {name} needs the annotations kpr.cilium.io/scope "
                                f"({', '.join(SCOPES)}), kpr.cilium.io/when (always, disruptive) and kpr.cilium.io/mode "
                                f"({', '.join(MODES)})")
        for rule in doc.get("rules") or []:
            if not isinstance(rule, dict):
                raise ManifestError(f"the RBAC manifest {path}: a rule of {name} is not a mapping")
            verbs = [str(v) for v in rule.get("verbs") or []]
            for url in rule.get("nonResourceURLs") or []:
                out += [Need(name, scope, when, v, url=str(url), mode=mode) for v in verbs]
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for rname in rule.get("resourceNames") or [""]:
                        out += [Need(name, scope, when, v, str(group), str(resource), str(rname), mode=mode) for v in verbs]
    if not out:
        raise ManifestError(f"the RBAC manifest {path} has no Role or ClusterRole rules")
    return out


def review(kube: KubeAPI, need: Need, namespace: str) -> tuple[bool, str]:
    """Whether the kubeconfig's user may do ``need`` (in ``namespace``; "" = any namespace, or cluster-scoped), and the
    server's reason (SelfSubjectAccessReview: the server answers, stores nothing)."""
    if need.url:
        spec: dict[str, Any] = {"nonResourceAttributes": {"path": need.url, "verb": need.verb}}
    else:
        resource, _, sub = need.resource.partition("/")
        attrs = {"verb": need.verb, "group": need.group, "resource": resource}
        if sub:
            attrs["subresource"] = sub
        if need.name:
            attrs["name"] = need.name
        if namespace and need.scope != "cluster":
            attrs["namespace"] = namespace
        spec = {"resourceAttributes": attrs}
    answer = kube.create({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec})
    status = (answer or {}).get("status") or {}
    return bool(status.get("allowed")), str(status.get("reason") or status.get("evaluationError") or "")


def creates_namespaces(run_namespace: str | None) -> bool:
    """Whether a run with ``run_namespace`` (as --kpr-namespace: NAME, PREFIX- or None) creates its namespaces."""
    return not run_namespace or str(run_namespace).endswith("-")


def needed(need: Need, run_namespace: str | None) -> bool:
    """Whether a run with ``run_namespace`` needs ``need`` of its user up front. With a named namespace the run creates,
    deletes and binds no namespace (run.ownership: "a named namespace is used, never created"): the
    ``creates-namespaces`` roles are not asked, the workloads' are, in that namespace. A run that creates its namespaces
    binds the ``run-namespaces`` roles to itself in each (run.ownership ``_bind_self``): what is asked is that it may
    (``bind`` on them, in pytest-kpr-namespaces), not the workloads' rules, which no namespace grants it before."""
    if creates_namespaces(run_namespace):
        return need.mode in ("any", "creates-namespaces") and need.scope != "run-namespaces"
    return need.mode in ("any", "named-namespace")


def where(need: Need, run_namespace: str | None, cilium_namespace: str) -> str:
    """The namespace a need is asked in: none for cluster scope, the cilium namespace, or the named --kpr-namespace (any
    namespace when the run creates its own)."""
    if need.scope == "cluster":
        return ""
    if need.scope == "cilium-namespace":
        return cilium_namespace
    return "" if creates_namespaces(run_namespace) else str(run_namespace)
