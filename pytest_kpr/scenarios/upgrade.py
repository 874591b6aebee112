"""Upgrade gating: refuse what Cilium does not support, watch the roll, judge the flows and the datapath.

The procedure follows Cilium's ``Documentation/operations/upgrade.rst``:
one minor at a time ("The only tested upgrade and rollback path is between consecutive minor releases"),
a pre-flight DaemonSet that pre-pulls the images, ``helm upgrade`` with the saved values (never
``--reuse-values``) plus ``upgradeCompatibility=<from minor>``. The helm side is
:func:`pytest_kpr.cluster.cilium.helm_upgrade`; this module holds what is judged, as pure functions with
table tests, and the watch of the roll (:class:`RollWatch`).

Why measure: Cilium's own gate (cilium-cli's conn-disrupt test) only compares pod restart counts; a stall
under 5 s, lost packets or a renumbered backend go unseen (provisioning.md §3.1, with the regressions a
gate must be able to see: IDs not restored (PR #18119), CT entries deleted at startup (#29667), resets
(#24191)).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence


from ..rules.kernels import KernelFloor, _minor, floor_problems
from ..rules.upgrade import version_refusal
from ..core.versions import Version
from ..core import clock as _clock

# -- what is refused before anything changes --------------------------------------------------------------


@dataclass(frozen=True)
class RemovedOption:
    since: tuple[int, int]
    helm: str | None
    values: tuple[str, ...]
    agent: tuple[str, ...]
    instead: str
    source: str
    #: a notice, not a refusal: only the deprecation is cited (its removal's own commit was not found), so an upgrade
    #: with the value set goes on, told of it (removed-options.yaml ``kind: notice``)
    notice: bool = False


def load_removed(path: Path) -> list[RemovedOption]:
    from ..core import yamlfile as y

    data = y.mapping(y.load(path, "the removed options"), str(path))
    out = []
    for i, r in enumerate(y.sequence(data.get("removed"), f"{path}: removed")):
        r = y.mapping(r, f"{path}: removed[{i}]")
        helm = r.get("helm")
        agent = y.sequence(r.get("agent"), f"{path}: removed[{i}].agent")
        if (helm is None) == (not agent) or (helm is not None and not isinstance(helm, str)):
            raise y.YamlFileError(f"{path}: removed[{i}]: give either helm (a value path) or agent (flags)")
        kind = r.get("kind", "refusal")
        if kind not in ("refusal", "notice"):
            raise y.YamlFileError(f"{path}: removed[{i}].kind: refusal or notice, not {kind!r}")
        out.append(RemovedOption(_minor(y.version(r.get("since"), f"{path}: removed[{i}].since")), helm,
                                 tuple(str(v) for v in y.sequence(r.get("value"), f"{path}: removed[{i}].value")),
                                 tuple(str(a) for a in agent), str(r.get("instead", "")), y.text(r.get("source"), f"{path}: removed[{i}].source"),
                                 kind == "notice"))
    return out


def _lookup(values: dict[str, Any], path: str) -> tuple[bool, Any]:
    cur: Any = values
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur


def preflight_refusals(from_version: str, to_version: str, node_kernels: dict[str, str], values: dict[str, Any],
                       floors: Sequence[KernelFloor], removed: Sequence[RemovedOption]) -> list[str]:
    """Every reason to refuse the upgrade, one line each, before anything changes."""
    out: list[str] = []
    why = version_refusal(from_version, to_version)
    if why:
        out.append(why)
    to = Version.parse(to_version)
    target = (to.major, to.minor)
    out += floor_problems(floors, target, node_kernels, report_unreadable=True)
    return out + [line for r, line in _removed_in_values(to_version, values, removed) if not r.notice]


def preflight_notices(to_version: str, values: dict[str, Any], removed: Sequence[RemovedOption]) -> list[str]:
    """The removed options the values set whose removal only a deprecation and the next minor's values file show
    (``notice``): told, one line each, never a reason to refuse a healthy upgrade."""
    return [line for r, line in _removed_in_values(to_version, values, removed) if r.notice]


def _removed_in_values(to_version: str, values: dict[str, Any], removed: Sequence[RemovedOption]) -> list[tuple[RemovedOption, str]]:
    """Each option removed by ``to_version``'s minor (or before) that ``values`` still set, with its line."""
    to = Version.parse(to_version)
    target = (to.major, to.minor)
    extra = values.get("extraConfig") or {}
    out: list[tuple[RemovedOption, str]] = []
    for r in removed:
        if r.since > target:
            continue
        minor = f"{r.since[0]}.{r.since[1]}"
        if r.helm:
            present, value = _lookup(values, r.helm)
            if present and (not r.values or str(value).lower() in r.values):
                shown = f"{r.helm}={value}" if r.values else r.helm
                out.append((r, f"the Helm values set {shown}; removed in Cilium {minor} per {r.source}; instead: {r.instead}" if r.notice
                            else f"the Helm values set {shown}, which Cilium {minor} removed; instead: {r.instead} ({r.source})"))
        for flag in r.agent:
            if isinstance(extra, dict) and flag in extra:
                out.append((r, f"the Helm values set extraConfig.{flag}, an agent option Cilium {minor} removed; {r.instead} ({r.source})"))
    return out


# -- the roll ------------------------------------------------------------------------------------------------


@dataclass
class RollStep:
    """One node's agent being replaced: when its old pod went away (or stopped being Ready) and when a new
    one was Ready, as wall-clock epoch seconds (flows record their gaps in the same clock)."""

    node: str
    old_pod: str
    new_pod: str | None = None
    down_at: float | None = None
    ready_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "old_pod": self.old_pod, "new_pod": self.new_pod, "down_at": self.down_at, "ready_at": self.ready_at,
                "seconds": round(self.ready_at - self.down_at, 3) if self.ready_at and self.down_at else None}


@dataclass
class RollWatch:
    """Polls the agent pods (an API list each time): a node's step starts when its agent pod is no longer the
    one seen first, or stops being Ready, and ends when a different pod is Ready there."""

    before: dict[str, str]  # node -> agent pod before the roll
    steps: dict[str, RollStep] = field(default_factory=dict)
    clock: Callable[[], float] = _clock.time

    def observe(self, pods: list[dict[str, Any]]) -> bool:
        """Update from a list of agent pods; True once every node has a new Ready agent pod."""
        now = round(self.clock(), 3)
        by_node: dict[str, list[dict[str, Any]]] = {}
        for p in pods:
            node = p.get("spec", {}).get("nodeName")
            if node:
                by_node.setdefault(node, []).append(p)
        for node, old in self.before.items():
            here = by_node.get(node, [])
            old_ready = any(p["metadata"]["name"] == old and _ready(p) for p in here)
            others = [p for p in here if p["metadata"]["name"] != old]
            step = self.steps.get(node)
            if step is None and (not old_ready or others):
                step = self.steps[node] = RollStep(node, old, down_at=now)
            new_ready = [p for p in others if _ready(p)]
            if step is not None and step.ready_at is None and new_ready:
                step.new_pod, step.ready_at = new_ready[0]["metadata"]["name"], now
        return all(s.ready_at is not None for s in self.steps.values()) and set(self.steps) == set(self.before)

    def timeline(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in sorted(self.steps.values(), key=lambda s: s.down_at or 0.0)]


def _ready(pod: dict[str, Any]) -> bool:
    from ..k8s.api import pod_ready

    return bool(pod_ready(pod))


# -- flows ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlowPath:
    """One flow that lives through the upgrade: who sends, to what, and which nodes' agents it depends on."""

    name: str  # pod->ClusterIP, hostnet->ClusterIP, pod->NodePort, hostnet->NodePort, udp pod->ClusterIP
    proto: str
    client_pod: str
    host_network: bool
    target: str
    nodes: tuple[str, ...]  # the client's node, the node it enters, the backends' nodes
    family: str = "IPv4"  # the address family of its target (and of the client's address)


def in_family(name: str, family: str) -> str:
    """A flow's (or a transition's) name in ``family``: as it is for IPv4, as in a run of IPv4 only; ``pod->ClusterIP (IPv6)``
    for IPv6."""
    return name if family == "IPv4" else f"{name} ({family})"


def key_family(key: str) -> str:
    """The family of a frontend or backend as the agents print it: IPv6 in brackets (``[fd00::1]:80/TCP``; L3n4Addr.String(),
    pytest_kpr.parse.addr), IPv4 bare."""
    return "IPv6" if key.startswith("[") else "IPv4"


def attribute(gap: dict[str, Any], timeline: Sequence[dict[str, Any]], nodes: Sequence[str], slack: float = 1.0) -> str | None:
    """The agent pod that was restarting on one of the path's nodes while the gap lasted (its step widened by
    ``slack`` seconds: a restart's effect can start just before the pod is seen to go and outlast its Ready)."""
    start, end = gap["start"], gap["start"] + gap["ms"] / 1000.0
    best: tuple[float, str] | None = None
    for step in timeline:
        if step["node"] not in nodes or step["down_at"] is None:
            continue
        s, e = step["down_at"] - slack, (step["ready_at"] or end) + slack
        overlap = min(e, end) - max(s, start)
        if overlap > 0 and (best is None or overlap > best[0]):
            best = (overlap, step["old_pod"])
    return best[1] if best else None


#: the gap bound is this project's policy: Cilium's upgrade guide promises no bound ("Upgrades are designed to have minimal
#: impact on your running deployment", Documentation/operations/upgrade.rst, Upgrade Impact)
GAP_POLICY = "pytest-kpr policy (--kpr-upgrade-max-gap), not a Cilium promise"


def flow_problems(name: str, report: dict[str, Any], max_gap_s: float) -> dict[str, list[str]]:
    """What a flow did wrong, by verdict: ``broken`` (a reset, a close, a stall) and ``gap`` (longer than allowed)."""
    broken = [f"{n} {w}" for n, w in ((report.get("resets", 0), "resets"), (report.get("closed", 0), "closed"),
                                      (report.get("stalls", 0), "stalls")) if n]
    gap = []
    if report.get("max_gap_ms", 0.0) > max_gap_s * 1000.0:
        gap.append(f"{name}: longest gap {report['max_gap_ms'] / 1000.0:.2f} s > {max_gap_s:g} s ({GAP_POLICY})")
    if report.get("sent", 0) == 0:
        broken.append("sent nothing (the flow never connected)")
    return {"broken": [f"{name}: {'; '.join(broken)}"] if broken else [], "gap": gap}


# -- the datapath before and after -----------------------------------------------------------------------------


def id_problems(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], what: str) -> dict[str, list[str]]:
    """Per node, ``key -> ID`` before and after (service frontends, or backend addresses): an ID that changed
    for a key present both times, and an ID that now names a different key (reused, also by the other family's key: the
    IDs of both families are compared), by the family of the key that changed or took the ID (only families with a
    problem are present)."""
    out: dict[str, list[str]] = {}
    for node in sorted(set(before) & set(after)):
        b, a = before[node], after[node]
        for key in sorted(set(b) & set(a)):
            if b[key] != a[key]:
                out.setdefault(key_family(key), []).append(f"{node}: {what} {key} had ID {b[key]}, now {a[key]}")
        owner = {v: k for k, v in b.items()}
        for key, ident in sorted(a.items()):
            if ident in owner and owner[ident] != key and key not in b:
                out.setdefault(key_family(key), []).append(f"{node}: {what} ID {ident} was {owner[ident]}, now reused for {key}")
    return out


def regression_problems(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Datapath properties that held before and not after: KubeProxyReplacement, socket-LB coverage,
    ServiceNoBackendResponse, backend slots equal to the EndpointSlice (per family: ``{"IPv4": True, "IPv6": True}``), the
    attach mode (tc -> tcx is an improvement), no kube-proxy rules."""
    out = []
    for key in ("kube_proxy_replacement", "socket_lb_coverage", "no_backend_response"):
        if before.get(key) != after.get(key):
            out.append(f"{key} was {before.get(key)!r}, now {after.get(key)!r}")
    slots_before, slots_after = before.get("backend_slots_match") or {}, after.get("backend_slots_match") or {}
    for family in sorted(set(slots_before) | set(slots_after)):
        if slots_before.get(family) != slots_after.get(family):
            out.append(f"backend_slots_match ({family}) was {slots_before.get(family)!r}, now {slots_after.get(family)!r}")
    if before.get("attach_mode") != after.get("attach_mode") and (before.get("attach_mode"), after.get("attach_mode")) != ("tc", "tcx"):
        out.append(f"attach mode was {before.get('attach_mode')!r}, now {after.get('attach_mode')!r}")
    if after.get("kube_proxy_rules", 0) > before.get("kube_proxy_rules", 0):
        out.append(f"kube-proxy rules on the nodes: {before.get('kube_proxy_rules', 0)} before, {after.get('kube_proxy_rules')} after")
    return out


def summary_line(transition: dict[str, Any], max_gap_s: float) -> str:
    """``upgrade 1.19.8 -> 1.20.2: 0/5 flows broken, longest gap 0.41 s (pod->NodePort, during cilium-abcde restart),
    service IDs stable, 0 backend IDs changed``."""
    flows = transition["flows"]
    broken = sum(1 for f in flows.values() if f["problems"]["broken"])
    longest = max(flows.items(), key=lambda kv: kv[1]["report"].get("max_gap_ms", 0.0), default=None)
    if longest is None:
        gap = "no flows"
    else:
        name, f = longest
        during = f.get("longest_gap_during")
        gap = f"longest gap {f['report'].get('max_gap_ms', 0.0) / 1000.0:.2f} s ({name}{f', during {during} restart' if during else ''})"
    families = transition["diff"]["families"].values()
    services, backends = (sum(len(f[k]) for f in families) for k in ("service_ids", "backend_ids"))
    svc = "service IDs stable" if not services else f"{services} service ID changes"
    return (f"{transition['kind']} {transition['from']} -> {transition['to']}: {broken}/{len(flows)} flows broken, {gap} of {max_gap_s:g} s "
            f"allowed (pytest-kpr policy), {svc}, {backends} backend IDs changed")
