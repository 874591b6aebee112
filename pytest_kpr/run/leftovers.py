"""What runs left in a cluster (``kpr cleanup``): the objects that carry pytest-kpr's labels, by run and age.

A run labels everything it creates (run.ownership: ``app.kubernetes.io/managed-by=pytest-kpr`` and
``kpr.cilium.io/run=<run id>``) and removes it at its end; a run killed outright (SIGKILL, a cancelled CI job, a lost
runner) leaves it: its namespaces, its LB-IPAM pools, kube-proxy's ClusterRoleBinding of the disruptive suite, and, in a
named --kpr-namespace, the objects it made there. Only what carries both labels is listed, and removed only while it
still does (read again just before the delete); nothing is chosen by its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from ..core.errors import KprError
from ..k8s.api import KubeAPI
from .ownership import OWNER_LABEL, OWNER_VALUE, RUN_LABEL, carries_run

#: cluster-scoped kinds a run creates
CLUSTER_KINDS = ("Namespace", "CiliumLoadBalancerIPPool", "ClusterRoleBinding")
#: kinds a run creates in a namespace (listed only in a named --kpr-namespace: a namespace of the run's own goes whole)
NAMESPACED_KINDS = ("Service", "Deployment", "DaemonSet", "Pod", "ServiceAccount", "Secret", "RoleBinding", "CiliumLocalRedirectPolicy")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")


def parse_duration(text: str) -> float:
    """``90s``, ``30m``, ``2h``, ``1d`` in seconds (ValueError otherwise)."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration (like 30m, 2h, 1d)")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@dataclass(frozen=True)
class Leftover:
    kind: str
    name: str
    namespace: str
    run_id: str
    age_s: float | None  # None: the object has no creationTimestamp

    def what(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


def _age(obj: dict[str, Any], now: datetime) -> float | None:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return None
    try:
        return (now - datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))).total_seconds()
    except ValueError:
        return None


def find(kube: KubeAPI, *, run: str | None = None, older_than: float | None = None, namespace: str | None = None,
         now: datetime | None = None) -> list[Leftover]:
    """The objects of run ``run`` (or of any run at least ``older_than`` seconds old): cluster-scoped ones, and in
    ``namespace`` (a named --kpr-namespace) the namespaced ones. An object without a creationTimestamp is never taken
    for old."""
    if (run is None) == (older_than is None):
        raise ValueError("name one run (--run ID) or an age (--older-than DURATION)")
    now = now or datetime.now(timezone.utc)
    selector = f"{OWNER_LABEL}={OWNER_VALUE},{RUN_LABEL}" + (f"={run}" if run else "")
    places = [(k, None) for k in CLUSTER_KINDS] + ([(k, namespace) for k in NAMESPACED_KINDS] if namespace else [])
    out = []
    for kind, ns in places:
        for obj in kube.list(kind, ns, selector):
            md = obj.get("metadata") or {}
            age = _age(obj, now)
            if older_than is not None and (age is None or age < older_than):
                continue
            out.append(Leftover(kind, str(md.get("name")), str(md.get("namespace") or ""), str((md.get("labels") or {}).get(RUN_LABEL)), age))
    return out


def remove(kube: KubeAPI, items: list[Leftover], say: Callable[[str], None]) -> int:
    """Delete each of ``items`` that still carries pytest-kpr's labels and the same run's (read again first); how many
    could not be removed (each said in one line)."""
    failed = 0
    for item in items:
        try:
            cur = kube.get(item.kind, item.name, item.namespace or None)
            if cur is None:
                say(f"gone already: {item.what()}")
                continue
            if not carries_run(cur, item.run_id):
                say(f"not deleting {item.what()}: its labels changed since it was listed")
                continue
            kube.delete(item.kind, item.name, item.namespace or None)
            say(f"deleted {item.what()}")
        except KprError as e:
            failed += 1
            say(f"could not delete {item.what()}: {e}")
    return failed
