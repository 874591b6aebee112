"""Whose cluster objects are this run's, and their removal: the namespaces it creates (labelled with the run), the objects
it makes in them (labelled and recorded by :class:`RunObjectsKube`), the cluster-scoped ones it tracks; at a suite's end
and the run's, only what still carries this run's labels is deleted (another run's, or a user's, never). No pytest:
the plugin's session holds one (:attr:`pytest_kpr.plugin.session.KprSession.ownership`)."""

from __future__ import annotations

from typing import Any, Callable

from ..core.errors import ApiError, ForeignObject, InfraError, KprError, SetupRefused
from ..core.wait import Timeouts, WaitTimeout, eventually
from ..k8s.api import KubeAPI
from .settings import Settings

OWNER_LABEL = "app.kubernetes.io/managed-by"
OWNER_VALUE = "pytest-kpr"
RUN_LABEL = "kpr.cilium.io/run"
NAMESPACE_PREFIX = "kpr-"
#: the test namespaces whose pods need Pod Security level privileged: the datapath probes (CAP_NET_RAW, a host-network
#: probe) and the node shells (privileged, host network and PID); every other namespace of a run is baseline
PRIVILEGED_NAMESPACES = frozenset({"datapath", "nodeshell"})
#: the ClusterRoles of clusters/rbac.yaml a run binds itself to in each namespace it creates, when its user may not
#: already work there (the manifest's "creates namespaces" mode: no cluster-wide binding grants pods, exec or Secrets)
WORKLOADS_ROLE = "pytest-kpr-workloads"
DISRUPTIVE_ROLE = "pytest-kpr-disruptive"


def carries_run(obj: dict[str, Any] | None, run_id: str) -> bool:
    """Whether ``obj`` carries pytest-kpr's owner label and run ``run_id``'s label (the test before any delete)."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(OWNER_LABEL) == OWNER_VALUE and labels.get(RUN_LABEL) == run_id


class Ownership:
    """One run's objects in one cluster. :meth:`bind` hands it the cluster's API (wrapped so that what the run creates
    in its namespaces is labelled and recorded); before that nothing can be created and nothing is deleted."""

    def __init__(self, settings: Settings, run_id: str, timeouts: Timeouts, progress: Callable[[str], None]):
        self.settings = settings
        self.run_id = run_id
        self.timeouts = timeouts
        self.progress = progress
        #: the cluster's API, wrapped (:meth:`bind`); None before the cluster exists
        self.kube: Any = None
        #: the objects the run created in its namespaces (RunObjectsKube), once bound
        self.run_objects: RunObjectsKube | None = None
        self._fixed_checked = False
        self.namespaces: list[str] = []
        #: namespaces whose deletion a suite's end began: the run's end waits until they are gone
        self.ending: list[str] = []
        #: cluster-scoped objects the run created (LB-IPAM pools), deleted at the end
        self.cluster_objects: list[dict[str, Any]] = []

    def bind(self, kube: KubeAPI) -> KubeAPI:
        """The cluster's API, wrapped: what the run creates in its namespaces carries its labels (and the pods its pull
        secret, tolerations and node selector). Returned for the handle to use."""
        s = self.settings
        self.run_objects = RunObjectsKube(kube, self.owns_namespace, {OWNER_LABEL: OWNER_VALUE, RUN_LABEL: self.run_id},
                                          s.image_pull_secret.split("/", 1)[1] if s.image_pull_secret else None,
                                          s.pod_tolerations or (), s.pod_node_selector or (), shared=self.fixed_namespace)
        self.kube = self.run_objects
        return self.run_objects  # type: ignore[return-value]

    @property
    def _raw(self) -> Any:
        """The API under the gate: the clean-up below reads each object's labels itself before deleting it."""
        return self.run_objects.inner if self.run_objects is not None else self.kube

    @property
    def fixed_namespace(self) -> str | None:
        """--kpr-namespace=NAME: the existing namespace every purpose uses (None: the run creates its namespaces)."""
        ns = self.settings.namespace
        return ns if ns and not ns.endswith("-") else None

    def owns_namespace(self, name: str) -> bool:
        """A namespace this run puts its objects in: one it created, or the fixed --kpr-namespace."""
        return name in self.namespaces or name == self.fixed_namespace

    def create_namespace(self, purpose: str, privileged: bool = False) -> str:
        """A namespace ``<prefix><purpose>-<run id>`` labelled as ours (prefix: --kpr-namespace=PREFIX-, else ``kpr-``);
        deleted by :meth:`end_namespace`, or at session end. Pod Security level privileged with ``privileged`` or for the
        session's own (datapath, nodeshell), else baseline. With --kpr-namespace=NAME no namespace is created: NAME must
        exist, and every purpose uses it."""
        assert self.kube is not None, "no cluster yet"
        fixed = self.fixed_namespace
        if fixed is not None:
            if not self._fixed_checked:
                if self.kube.get("Namespace", fixed) is None:
                    raise SetupRefused(f"--kpr-namespace {fixed}: no such namespace (a named namespace is used, never created: create it "
                                   "with the Pod Security level the suites need, see docs/guides/existing-cluster.md)")
                self._fixed_checked = True
                if self.settings.image_pull_secret:
                    self._copy_pull_secret(fixed)
            return fixed
        prefix = self.settings.namespace or NAMESPACE_PREFIX
        stem = purpose.lower().strip("-")[: 63 - len(prefix) - len(self.run_id) - 1].rstrip("-")
        name = f"{prefix}{stem}-{self.run_id}"
        # Pod Security Admission: privileged only where a pod needs it (the datapath probes take NET_RAW and a host-network
        # probe; the node shells are privileged host pods), baseline elsewhere; --kpr-namespace-labels can say otherwise
        level = "privileged" if privileged or stem in PRIVILEGED_NAMESPACES else "baseline"
        labels = {"pod-security.kubernetes.io/enforce": level, **dict(self.settings.namespace_labels or ()), OWNER_LABEL: OWNER_VALUE,
                  RUN_LABEL: self.run_id}
        self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
        self.namespaces.append(name)
        self._bind_self(name)
        if self.settings.image_pull_secret:
            self._copy_pull_secret(name)
        return name

    def _may_create_pods(self, namespace: str) -> bool:
        review = self.kube.create({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {
            "resourceAttributes": {"verb": "create", "group": "", "resource": "pods", "namespace": namespace}}})
        return bool(((review or {}).get("status") or {}).get("allowed"))

    def _bind_self(self, namespace: str) -> None:
        """In a namespace the run just created: when its user may not create pods there (clusters/rbac.yaml's "creates
        namespaces" mode), a RoleBinding there of :data:`WORKLOADS_ROLE` (and :data:`DISRUPTIVE_ROLE` with
        --kpr-allow-disruptive) to the user the API server says it is (SelfSubjectReview), labelled as the run's and
        gone with the namespace. The API server admits it only with ``bind`` on that ClusterRole; a user who still may
        not create pods there is one line."""
        if self._may_create_pods(namespace):
            return
        who = self.kube.create({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        user = str((((who or {}).get("status") or {}).get("userInfo") or {}).get("username") or "")
        if not user:
            raise SetupRefused(f"namespace {namespace}: the run may not create pods there, and the API server did not say who it is "
                           "(SelfSubjectReview)")
        roles = [WORKLOADS_ROLE, *([DISRUPTIVE_ROLE] if self.settings.allow_disruptive else [])]
        for role in roles:
            try:
                self.kube.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                  "metadata": {"name": f"{role}-{self.run_id}", "namespace": namespace},
                                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                                  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
            except ApiError as e:
                if e.status != 403:
                    raise
                raise SetupRefused(f"namespace {namespace}: {user} may not create pods there, nor bind {role} there (clusters/rbac.yaml: "
                               "pytest-kpr-namespaces grants that bind; `kpr check-access` says what is missing)") from None
        try:  # RBAC reads bindings through a cache: a moment may pass before the server authorizes by the new one
            eventually(lambda: self._may_create_pods(namespace), until=bool, timeout=self.timeouts.API_CALL,
                       what=f"the RoleBinding of {WORKLOADS_ROLE} in {namespace} to take effect")
        except WaitTimeout:
            raise SetupRefused(f"namespace {namespace}: {user} may not create pods there even after binding {WORKLOADS_ROLE} "
                           "(is clusters/rbac.yaml applied? `kpr check-access` says what is missing)") from None

    def _copy_pull_secret(self, namespace: str) -> None:
        """--kpr-image-pull-secret: the Secret, copied into a namespace of this run (pods name it: :class:`PullSecretKube`)."""
        assert self.kube is not None and self.settings.image_pull_secret
        src_ns, src = self.settings.image_pull_secret.split("/", 1)
        if src_ns == namespace or self.kube.get("Secret", src, namespace) is not None:
            return  # already there (a fixed --kpr-namespace that holds it): never overwritten, never deleted
        secret = self.kube.get("Secret", src, src_ns)
        if secret is None:
            raise SetupRefused(f"--kpr-image-pull-secret: no Secret {src_ns}/{src}")
        self.kube.create({"apiVersion": "v1", "kind": "Secret", "type": secret.get("type", "kubernetes.io/dockerconfigjson"),
                                 "metadata": {"name": src, "namespace": namespace, "labels": {OWNER_LABEL: OWNER_VALUE, RUN_LABEL: self.run_id}},
                                 "data": secret.get("data") or {}})

    def track_cluster_object(self, obj: dict[str, Any]) -> None:
        """Delete this cluster-scoped object at the end (it must carry this run's labels)."""
        self.cluster_objects.append(obj)

    def _delete_cluster_objects(self, kube: KubeAPI) -> None:
        for obj in self.cluster_objects:
            kind, name = obj["kind"], obj["metadata"]["name"]
            try:
                cur = kube.get(kind, name)
                labels = (cur or {}).get("metadata", {}).get("labels") or {}
                if cur is not None and labels.get(RUN_LABEL) == self.run_id:
                    kube.delete(kind, name)
                    self.progress(f"deleted {kind} {name}")
            except KprError as e:
                self.progress(f"could not delete {kind} {name}: {e}")

    def end_namespace(self, namespace: str, made: list[tuple[str, str, str]]) -> None:
        """A module (a suite) that had ``namespace`` ended: what it made goes now, so no later suite sees it. A namespace of
        this run is deleted, and waited for; in a fixed --kpr-namespace, the objects in ``made`` that carry this run's label."""
        if self.kube is None:
            return
        if namespace in self.namespaces:
            self.namespaces.remove(namespace)
            kube = self._raw
            if self._ours(kube, namespace):
                # what another suite could see is the namespace's Services (their frontends): those are deleted and waited
                # for first, while the run may still read them (its RoleBinding in the namespace goes with the namespace,
                # in no particular order); the namespace itself (pods ending their grace periods) finishes meanwhile, and
                # the run's end waits for it
                try:
                    for svc in kube.list("Service", namespace):
                        kube.delete("Service", svc["metadata"]["name"], namespace)
                    eventually(lambda: kube.list("Service", namespace), until=lambda left: not left,
                               timeout=self.timeouts.NAMESPACE_DELETE, what=f"the Services of namespace {namespace} to be deleted",
                               describe=lambda left: f"{len(left)} left", progress=self.progress)
                except WaitTimeout as e:
                    self.progress(str(e))
                except KprError as e:
                    self.progress(f"could not delete the Services of namespace {namespace}: {e}")
            if self._start_deleting(kube, [namespace]):
                self.ending.append(namespace)
        elif self.fixed_namespace is not None and self.run_objects is not None:
            objs = self.run_objects
            self._delete_run_objects(self._raw, [(k, objs.real_name(k, n, ns), ns) for k, n, ns in made if ns == self.fixed_namespace])

    def _delete_run_objects(self, kube: KubeAPI, objects: list[tuple[str, str, str]] | None = None) -> None:
        """--kpr-namespace=NAME: the namespace is not ours; the objects this run created in it are (or ``objects`` of
        them), newest first, each only while it still carries this run's label."""
        assert self.run_objects is not None
        gone = 0
        for kind, name, ns in reversed(self.run_objects.created if objects is None else objects):
            try:
                cur = kube.get(kind, name, ns)
                if cur is None or (cur.get("metadata", {}).get("labels") or {}).get(RUN_LABEL) != self.run_id:
                    continue
                kube.delete(kind, name, ns)
                gone += 1
            except KprError as e:
                self.progress(f"could not delete {kind} {ns}/{name}: {e}")
        if gone:
            self.progress(f"deleted this run's {gone} objects in namespace {self.fixed_namespace}")

    def _delete_namespaces(self, kube: KubeAPI) -> None:
        """The run's namespaces: deleted (each only while it carries this run's labels), and waited for, together with
        those whose deletion a suite's end began (:meth:`end_namespace`)."""
        mine = self._start_deleting(kube, self.namespaces) + [n for n in self.ending if n not in self.namespaces]
        if not mine:
            return
        self.progress(f"deleting namespaces {', '.join(mine)}")
        try:
            eventually(
                lambda: [n for n in mine if kube.get("Namespace", n) is not None],
                until=lambda left: not left,
                timeout=self.timeouts.NAMESPACE_DELETE,
                what="the run's namespaces to be deleted",
                progress=self.progress,
            )
        except WaitTimeout as e:
            self.progress(str(e))

    def _ours(self, kube: KubeAPI, name: str) -> bool:
        """Whether namespace ``name`` exists and carries this run's labels (an unreadable one is not taken for ours)."""
        try:
            return carries_run(kube.get("Namespace", name), self.run_id)
        except KprError:
            return False

    def _start_deleting(self, kube: KubeAPI, names: list[str]) -> list[str]:
        """Delete each of ``names`` that carries this run's labels; those deleted (an absent one is skipped)."""
        mine = []
        for name in names:
            try:
                ns = kube.get("Namespace", name)
            except InfraError as e:
                self.progress(f"cannot check namespace {name} before deleting it: {e}")
                continue
            if ns is None:
                continue
            if not carries_run(ns, self.run_id):
                self.progress(f"not deleting namespace {name}: it does not carry this run's labels")
                continue
            kube.delete("Namespace", name)
            mine.append(name)
        return mine

    def end(self) -> None:
        """The run's end: its cluster-scoped objects, its namespaces (waited for), and in a fixed --kpr-namespace the
        objects it created there; each only while it carries this run's labels."""
        if self.kube is None:
            return
        if self.cluster_objects:
            self._delete_cluster_objects(self._raw)
        if self.namespaces or self.ending:
            self._delete_namespaces(self._raw)
        if self.fixed_namespace is not None and self.run_objects is not None:
            self._delete_run_objects(self._raw)


class RunObjectsKube:
    """Every object the run creates in one of its namespaces (``ours(namespace)``) carries the run's labels and is recorded
    (:attr:`created`: what a fixed --kpr-namespace's cleanup deletes); every pod spec in it, directly or through a
    Deployment, DaemonSet or Job, gets --kpr-image-pull-secret, --kpr-pod-tolerations and, except the node shells (they
    run on each node the suites look at), --kpr-pod-node-selector."""

    POD_TEMPLATES = {"Pod": ("spec",), "Deployment": ("spec", "template", "spec"), "DaemonSet": ("spec", "template", "spec"),
                     "Job": ("spec", "template", "spec")}

    def __init__(self, inner: Any, ours: Callable[[str], bool], labels: dict[str, str], secret: str | None = None,
                 tolerations: tuple[tuple[str, str, str], ...] = (), node_selector: tuple[tuple[str, str], ...] = (),
                 shared: str | None = None):
        """``shared``: a named --kpr-namespace, which the run shares with whatever the user keeps there."""
        self._inner = inner
        self._ours = ours
        self._shared = shared
        self._labels = labels
        self._secret = secret
        self._tolerations = [{"key": k, "operator": "Equal", "value": v, "effect": e} if v else {"key": k, "operator": "Exists", "effect": e}
                             for k, v, e in tolerations]
        self._node_selector = dict(node_selector)
        #: the names the suites gave the pods the run made in the shared namespace (their real names carry the run id)
        self._pods: set[str] = set()
        #: (kind, name, namespace) of each object created in the run's namespaces, in order
        self.created: list[tuple[str, str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    # -- in a namespace the run shares, the pods it names carry its run id: `term-a` is `term-a-<run>` there -----------
    # (the suites keep asking for `term-a`: the name is mapped on the way in and back on the way out, so a user's pod of
    # that name is never touched, and never even collides; objects a suite names that other components name too --
    # Services, whose names the agents report -- keep their names, and a collision is refused: ForeignObject)

    def _pod(self, name: str, namespace: str | None) -> str:
        """The real name of a pod the run named ``name`` in the shared namespace; ``name`` otherwise."""
        return f"{name}-{self._labels[RUN_LABEL]}" if self._shared and namespace == self._shared and name in self._pods else name

    def _shown(self, obj: Any) -> Any:
        """An answer with the run's pod names in the shared namespace as the suites wrote them."""
        if not self._pods or not isinstance(obj, dict):
            return obj
        suffix = f"-{self._labels[RUN_LABEL]}"

        def back(name: Any) -> Any:
            return name[: -len(suffix)] if isinstance(name, str) and name.endswith(suffix) and name[: -len(suffix)] in self._pods else name

        md = obj.get("metadata") or {}
        if md.get("namespace") == self._shared and obj.get("kind") in ("Pod", "CiliumEndpoint") and "name" in md:
            obj = {**obj, "metadata": {**md, "name": back(md["name"])}}
        if obj.get("kind") == "EndpointSlice" and md.get("namespace") == self._shared:
            obj = {**obj, "endpoints": [{**ep, "targetRef": {**ep["targetRef"], "name": back(ep["targetRef"].get("name"))}}
                                        if isinstance(ep.get("targetRef"), dict) else ep for ep in obj.get("endpoints") or []]}
        return obj

    def real_name(self, kind: str, name: str, namespace: str | None) -> str:
        """The name the API knows an object by that the suites call ``name`` (a pod's CiliumEndpoint is named as the pod)."""
        return self._pod(name, namespace) if kind in ("Pod", "CiliumEndpoint") else name

    # (each call is passed on as it was made, arguments and all: a recording holds the calls as the suites make them)

    def get(self, kind: str, name: str, *args: Any, **kwargs: Any) -> Any:
        namespace = args[0] if args else kwargs.get("namespace")
        return self._shown(self._inner.get(kind, self.real_name(kind, name, namespace), *args, **kwargs))

    def list(self, kind: str, *args: Any, **kwargs: Any) -> Any:
        items = self._inner.list(kind, *args, **kwargs)
        return [self._shown(o) for o in items] if self._pods else items

    def exec(self, namespace: str, pod: str, argv: Any, *args: Any, **kwargs: Any) -> Any:
        return self._inner.exec(namespace, self._pod(pod, namespace), argv, *args, **kwargs)

    def logs(self, namespace: str, pod: str, *args: Any, **kwargs: Any) -> Any:
        return self._inner.logs(namespace, self._pod(pod, namespace), *args, **kwargs)

    @property
    def inner(self) -> Any:
        """The API without the gate (the ownership's own clean-up, which checks the labels itself)."""
        return self._inner

    def _foreign(self, kind: str, name: str, namespace: str | None) -> dict[str, Any] | None:
        """The live object when it exists and is not this run's (its run label is missing or another's), else None."""
        cur = self._inner.get(kind, name, namespace) if namespace else self._inner.get(kind, name)
        if cur is None or ((cur.get("metadata") or {}).get("labels") or {}).get(RUN_LABEL) == self._labels[RUN_LABEL]:
            return None
        return cur

    def _refuse(self, verb: str, kind: str, name: str, namespace: str | None, cur: dict[str, Any]) -> ForeignObject:
        other = ((cur.get("metadata") or {}).get("labels") or {}).get(RUN_LABEL)
        whose = f"run {other}'s" if other else "not made by pytest-kpr"
        where = f"{namespace}/{name}" if namespace else name
        return ForeignObject(f"not {verb} {kind} {where}: it is not this run's ({whose}; this run is {self._labels[RUN_LABEL]}); "
                             "rename or remove it, or give the run a namespace of its own (--kpr-namespace=PREFIX-)")

    def delete(self, kind: str, name: str, namespace: str | None = None, grace_period_seconds: int | None = None) -> None:
        """Deletes only an object that carries this run's label (checked on the live object first); another's is a
        ForeignObject, and stays. An absent one is the API's answer, as before."""
        name = self.real_name(kind, name, namespace)
        cur = self._foreign(kind, name, namespace)
        if cur is not None:
            raise self._refuse("deleting", kind, name, namespace, cur)
        if grace_period_seconds is None:
            return self._inner.delete(kind, name, namespace)
        return self._inner.delete(kind, name, namespace, grace_period_seconds=grace_period_seconds)

    def patch(self, kind: str, name: str, namespace: str | None, patch: dict[str, Any]) -> Any:
        """Patches only an object that carries this run's label, as :meth:`delete`."""
        name = self.real_name(kind, name, namespace)
        cur = self._foreign(kind, name, namespace)
        if cur is not None:
            raise self._refuse("changing", kind, name, namespace, cur)
        return self._shown(self._inner.patch(kind, name, namespace, patch))

    def create(self, obj: dict[str, Any]) -> Any:
        """Every object the run creates carries its labels (so that the gate lets the run change and delete it); in the
        run's namespaces it is also recorded and its pods get the run's pull secret, tolerations and node selector. A name
        already taken by an object that is not this run's is a ForeignObject (the object is left as it is)."""
        meta = obj.setdefault("metadata", {})
        ns = str(meta.get("namespace") or "")
        meta.setdefault("labels", {}).update(self._labels)
        if not ns or not self._ours(ns):
            return self._create(obj, ns)
        if ns == self._shared and obj.get("kind") == "Pod" and meta.get("name"):
            self._pods.add(str(meta["name"]))
            obj = {**obj, "metadata": {**meta, "name": self._pod(str(meta["name"]), ns)}}
            meta = obj["metadata"]
        if ns == self._shared and obj.get("kind") == "Service" and (obj.get("spec") or {}).get("selector"):
            # in a namespace it shares, a Service of the run selects the run's pods only (every pod it makes carries its
            # labels), never a user's that happens to carry the same app label
            obj["spec"]["selector"][RUN_LABEL] = self._labels[RUN_LABEL]
        path = self.POD_TEMPLATES.get(obj.get("kind", ""))
        if path and len(path) > 1:  # the pods a controller makes carry the run's labels too (a selector is a subset: unchanged)
            obj.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {}).setdefault("labels", {}).update(self._labels)
        if path:
            spec = obj
            for key in path:
                spec = spec.setdefault(key, {})
            if self._secret:
                secrets_ = spec.setdefault("imagePullSecrets", [])
                if {"name": self._secret} not in secrets_:
                    secrets_.append({"name": self._secret})
            for t in self._tolerations:
                if t not in spec.setdefault("tolerations", []):
                    spec["tolerations"].append(t)
            from ..cluster.nodeshell import NODE_SHELL_LABEL

            if self._node_selector and NODE_SHELL_LABEL not in (meta.get("labels") or {}):
                spec.setdefault("nodeSelector", {}).update(self._node_selector)
        out = self._create(obj, ns)
        self.created.append((str(obj.get("kind")), str(meta.get("name")), ns))
        return self._shown(out)

    def _create(self, obj: dict[str, Any], ns: str) -> Any:
        try:
            return self._inner.create(obj)
        except ApiError as e:
            if e.status != 409:
                raise
            kind, name = str(obj.get("kind")), str(obj["metadata"].get("name"))
            cur = self._foreign(kind, name, ns or None)
            if cur is not None:
                raise self._refuse("creating", kind, name, ns or None, cur) from None
            raise
