"""loadBalancerSourceRanges: from outside, a VIP serves a source in its ranges and drops one outside them, counted as
``Denied by LB src range check`` in the agent's BPF metrics; with the annotation ``service.cilium.io/src-ranges-policy:
deny`` the ranges are a deny list, the reverse; from inside the cluster the field is ignored. On the Service's other
frontends (rules.datapath.SRC_SOURCE_RANGES_TYPES): on 1.18 every frontend type is checked (its NodePort too: issue
#42334); from 1.19 its NodePort only with ``bpf-lb-source-range-all-types`` (read back from the agent), its externalIPs
addresses like the VIP from Cilium 1.20 (PR #44747); on 1.19, where the externalIPs behaviour is not known, the request
is recorded, not judged.

Four LoadBalancer Services over two backends (``sr-web``), their VIPs from the suite's own LB-IPAM pool (scenarios.vips):
``sr-allow-in`` (ranges: the runner's own address), ``sr-allow-out`` (ranges the runner is not in: the documentation
blocks 192.0.2.0/24 and 2001:db8::/64; it also has an externalIPs address per family, asked like its NodePort),
``sr-deny-in`` and ``sr-deny-out`` (the same ranges, with the deny annotation).
The runner sends one HTTP request to each VIP through the client node (a route through it: SRC_VIA_NODE), and the node's
``bpf metrics list`` is read before and after each. The check is made where a packet from outside arrives, in nodeport_lb4
(rules.datapath.SRC_SOURCE_RANGES, SRC_SOURCE_RANGES_DENY); a pod's connection to ``sr-allow-out``'s VIP is served
(SRC_SOURCE_RANGES_INSIDE).

Each family has its own VIPs and source-range map (lb4_src_range_ok, lb6_src_range_ok): the requests run once per family
of --kpr-ip-families (evidence ``source-ranges-ipv6.json``). Without a route from the runner to the nodes, or without
CAP_NET_ADMIN, the outside tests are skipped (a failure where the outside view is required).
"""

from __future__ import annotations

from typing import Iterator

import pytest

from pytest_kpr.suite import ClusterFacts, ClusterHandle, Evidence, family_file, holds, hp, L3n4, Lab, no_outside_view, Settings
from pytest_kpr.judge.source_ranges import drop_reason_problems, inside_problems, range_problems
from pytest_kpr.judge.source_ranges import RangeCase, SourceRangesObservation
from pytest_kpr.rules.datapath import SOURCE_RANGE_ALL_TYPES_FILE, SRC_RANGES_POLICY, source_ranges_checked
from pytest_kpr.scenarios.vips import Vips, drops_during, request, suite_blocks

pytestmark = [
    pytest.mark.kpr(property="source ranges", evidence="source-ranges.json", plane=["per-packet", "socket"],
                    sources=["SRC_SOURCE_RANGES", "SRC_SOURCE_RANGES_DENY", "SRC_SOURCE_RANGES_INSIDE", "SRC_DROP_SRC_RANGE",
                             "SRC_SOURCE_RANGES_TYPES", "SRC_VIA_NODE"]),
    pytest.mark.kpr_requires("nodeport"),
]
#: this suite's addresses: the second of --kpr-outside-vip-base's blocks (scenarios.vips.suite_blocks)
BLOCK_INDEX = 1
#: ranges the runner is never in (the documentation blocks)
ELSEWHERE = ("192.0.2.0/24", "2001:db8::/64")
#: Service -> (its ranges hold the runner, deny list)
CASES = {"sr-allow-in": (True, False), "sr-allow-out": (False, False), "sr-deny-in": (True, True), "sr-deny-out": (False, True)}
#: the Service whose NodePort and externalIPs frontends are asked too (its allow list holds no runner)
OTHER_FRONTENDS = "sr-allow-out"
TIMEOUT = 3.0


@pytest.fixture(scope="module")
def runner(lab: Lab, kpr_cluster: ClusterHandle) -> dict[str, str]:
    """The runner's own address toward the client node, per family it can send from (none without an outside view)."""
    outside = kpr_cluster.outside
    out = {}
    for family, view in lab.family_views().items():
        ip = view.node_ip(lab.client_node)
        if outside is not None and outside.reaches(ip):
            out[family] = outside.source_address(ip) or ""
    return {f: a for f, a in out.items() if a}


@pytest.fixture(scope="module")
def sr_workloads(lab: Lab, probe: Lab, kpr_settings: Settings, runner: dict[str, str]) -> Iterator[Vips]:
    """The pool, the backends and the four Services (ranges with the runner's addresses), created once for every family."""
    vips = Vips(lab, lab.run_labels, lab.track_cluster_object,
                suite_blocks(kpr_settings.outside_vip_base, BLOCK_INDEX),
                f"kpr-sr-{lab.run_id}")
    vips.create_pool()
    lab.create_deployment("sr-web", 2)
    mine = [f"{a}/{128 if ':' in a else 32}" for a in runner.values()] or ["192.0.2.1/32"]
    # the ranges on the Service's other frontends: sr-allow-out also answers on an externalIPs address of each family (outside
    # the pool) and, like every LoadBalancer Service, on its NodePort (SRC_SOURCE_RANGES_TYPES)
    spares = [vips.blocks.spare(f) for f in lab.ip_families if f in ("IPv4", "IPv6")]
    for name, (holds_runner, deny) in CASES.items():
        ranges = mine if holds_runner else list(ELSEWHERE)

        def tweak(svc: dict, name: str = name, ranges: list[str] = ranges, deny: bool = deny) -> None:
            svc["spec"]["loadBalancerSourceRanges"] = ranges
            if deny:
                svc["metadata"].setdefault("annotations", {})[SRC_RANGES_POLICY] = "deny"
            if name == OTHER_FRONTENDS:
                svc["spec"]["externalIPs"] = spares

        lab.create_service(name, {"app": "sr-web"}, "LoadBalancer", tweak=tweak)
    lab.wait_ready_endpoints("sr-allow-in", 2)
    yield vips


@pytest.fixture(scope="module")
def seen(sr_workloads: Vips, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str, kpr_cluster: ClusterHandle,
         runner: dict[str, str], kpr_facts: ClusterFacts) -> SourceRangesObservation:
    lab, node = family_lab, family_lab.client_node
    vips = {name: sr_workloads.vip(lab, name) for name in CASES}
    for i, (name, vip) in enumerate(vips.items()):
        lab.wait_programmed(node, L3n4(vip, 80, "TCP"), f"the agent on {node} to program {name}'s VIP {vip}:80", first_look=i == 0)
    pods = sorted(p["metadata"]["name"] for p in lab.kube.list("Pod", lab.ns, "app=sr-web"))
    inside = lab.probe("connect", hp(vips["sr-allow-out"], 80), TIMEOUT).verdict
    outside, client = kpr_cluster.outside, runner.get(kpr_family, "")
    no_view = None if outside is not None and client else f"the runner has no route to {node} over {kpr_family}"
    cases: list[RangeCase] = []
    other = lab.kube.get("Service", OTHER_FRONTENDS, lab.ns) or {}
    eip = sr_workloads.blocks.spare(kpr_family)
    node_port = int(other["spec"]["ports"][0]["nodePort"])
    all_types = lab.agent(node).config_file(SOURCE_RANGE_ALL_TYPES_FILE) == "true"
    if no_view is None:
        assert outside is not None
        with outside.via(lab.node_ip(node), [*vips.values(), eip]) as why:
            no_view = why
            asks = [(name, "LoadBalancer", vip, 80) for name, vip in vips.items()]
            asks += [(OTHER_FRONTENDS, "NodePort", lab.node_ip(node), node_port), (OTHER_FRONTENDS, "ExternalIP", eip, 80)]
            for name, frontend, ip, port in asks if why is None else []:
                svc = lab.kube.get("Service", name, lab.ns) or {}
                ranges = tuple(svc["spec"].get("loadBalancerSourceRanges") or ())
                deny = ((svc["metadata"].get("annotations") or {}).get(SRC_RANGES_POLICY) or "").lower() == "deny"
                r, drops = drops_during(lab, node, lambda ip=ip, port=port: request(lab, outside, ip, port, node, pods, TIMEOUT))
                cases.append(RangeCase(name, ranges, deny, r, drops, frontend,
                                       source_ranges_checked(frontend, kpr_facts.cilium_version, all_types)))
    obs = SourceRangesObservation(kpr_family, client, node, tuple(cases), "sr-allow-out", str(getattr(inside, "value", inside)), no_view)
    evidence.write(family_file("source-ranges.json", kpr_family), {**obs.to_json(), "problems": {
        "inside": inside_problems(obs.inside, obs.inside_service),
        **{f"{c.service}{'' if c.frontend == 'LoadBalancer' else ' ' + c.frontend}":
           range_problems(c, client) + drop_reason_problems(c, client) if c.checked is not None else ["not judged on this release"]
           for c in obs.cases}}})
    evidence.figure(kpr_property, f"no outside view: {no_view}" if no_view else
                    "; ".join(f"{c.service}{'' if c.frontend == 'LoadBalancer' else ' ' + c.frontend} {'served' if c.served else 'dropped'}"
                              for c in obs.cases), kpr_family)
    return obs


def _case(seen: SourceRangesObservation, service: str, frontend: str = "LoadBalancer") -> RangeCase:
    if seen.no_view:
        no_outside_view(seen.no_view)
    case = seen.case(service, frontend)
    if case.checked is None:
        pytest.skip(f"recorded, not judged: whether this release checks a LoadBalancer Service's ranges on its {frontend} frontend is "
                    f"not known (rules.datapath.SRC_SOURCE_RANGES_TYPES; source-ranges.json has what happened)")
    return case


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_source_in_the_ranges_is_served(seen: SourceRangesObservation) -> None:
    case = _case(seen, "sr-allow-in")
    holds(range_problems(case, seen.client), "source ranges (allow list, the client in it)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_source_outside_the_ranges_is_dropped(seen: SourceRangesObservation) -> None:
    case = _case(seen, "sr-allow-out")
    holds(range_problems(case, seen.client), "source ranges (allow list, the client outside it)")


def test_the_drop_is_counted_as_denied_by_the_source_range_check(seen: SourceRangesObservation) -> None:
    for service in ("sr-allow-out", "sr-deny-in"):
        _case(seen, service)
    holds([p for s in ("sr-allow-out", "sr-deny-in") for p in drop_reason_problems(seen.case(s), seen.client)],
          "source ranges (the drop reason in the agent's metrics)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_with_the_deny_annotation_a_source_in_the_ranges_is_dropped(seen: SourceRangesObservation) -> None:
    case = _case(seen, "sr-deny-in")
    holds(range_problems(case, seen.client), "source ranges (deny list, the client in it)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_with_the_deny_annotation_a_source_outside_the_ranges_is_served(seen: SourceRangesObservation) -> None:
    case = _case(seen, "sr-deny-out")
    holds(range_problems(case, seen.client), "source ranges (deny list, the client outside it)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_the_nodeport_answers_as_the_source_range_setting_says(seen: SourceRangesObservation) -> None:
    """A LoadBalancer Service's NodePort is no frontend of its ranges by default: a source outside them is served there; with
    bpf-lb-source-range-all-types it is checked like the VIP (SRC_SOURCE_RANGES_TYPES)."""
    case = _case(seen, OTHER_FRONTENDS, "NodePort")
    holds(range_problems(case, seen.client) + (drop_reason_problems(case, seen.client) if case.checked else []),
          "source ranges (the Service's NodePort)")


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_the_ranges_hold_on_the_services_external_ips(seen: SourceRangesObservation) -> None:
    """From 1.20 an externalIPs address of a LoadBalancer Service is checked like its VIP (PR #44747): a source outside the
    ranges is dropped there, and counted as the source-range check's drop."""
    case = _case(seen, OTHER_FRONTENDS, "ExternalIP")
    holds(range_problems(case, seen.client) + drop_reason_problems(case, seen.client), "source ranges (the Service's externalIPs)")


def test_in_cluster_access_ignores_the_ranges(seen: SourceRangesObservation) -> None:
    holds(inside_problems(seen.inside, seen.inside_service), "source ranges (in-cluster access)")
