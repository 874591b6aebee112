"""The map pressure judgement (pytest_kpr.judge.maps), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.maps import MapsObservation, map_visibility_problems, service_map_problems, which_map_filled, wildcard_problems
from pytest_kpr.rules.datapath import MAP_FULL_ERROR, MAP_FULL_ERRORS, REV_NAT_FULL_ERROR, wildcard_entry

from .tables import _h


def test_service_map_judgement_names_how_full_the_map_is_and_which_map_filled() -> None:
    assert service_map_problems([], 20, 20, 65536) == []
    assert service_map_problems(["a", "b", "c", "d"], 528, 512, 512) == [
        "service map full (512 of 512 service entries): 4 of the run's 528 Services are in Kubernetes but not in the BPF maps (a, b, c, ...); "
        "raise bpf.lbMapMax (bpf-lb-map-max) or remove Services"]
    assert service_map_problems(["a"], 301, 290, 300, "reverse-NAT map")[0].startswith("reverse-NAT map full (290 of 300 service entries)")
    assert which_map_filled([None, "upsert reverse nat: Unable to update reverse NAT {Key:5}"], MAP_FULL_ERRORS) == "reverse-NAT map"
    assert which_map_filled([f"upsert service master: x: {MAP_FULL_ERROR}: y"], MAP_FULL_ERRORS) == "service map"
    assert which_map_filled([None, "other"], MAP_FULL_ERRORS) == "service map"


RECONCILER = "agent.controlplane.loadbalancer-reconciler"


@pytest.mark.parametrize(("shown", "health", "fragments"), [
    ({"a": ("Error", f"x: {MAP_FULL_ERROR}: y")}, [_h(RECONCILER, "Degraded")], []),
    ({"a": ("Error", f"upsert reverse nat: {REV_NAT_FULL_ERROR} {{Key:5}}")}, [_h(RECONCILER, "Degraded", f"incremental: {REV_NAT_FULL_ERROR}")], []),
    # Degraded once during the fill, OK after a clean round: visible (datapath.SRC_MAP_HEALTH)
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h(RECONCILER, "Degraded"), _h(RECONCILER, "OK", "")], []),
    ({"a": ("Done", None)}, [_h(RECONCILER, "Degraded")],
     ["1 of 1 Services missing from the map show no error for it (e.g. a: status Done, error None; expected Error with 'Unable to update "
      "element for LB bpf map' (service map full) or 'Unable to update reverse NAT' (reverse-NAT map full))"]),
    ({"a": ("Error", "some other error")}, [_h(RECONCILER, "Degraded")], ["show no error for it"]),
    ({"a": (None, None)}, [_h(RECONCILER, "Degraded")], ["status None"]),
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h(RECONCILER, "OK", ""), _h(RECONCILER, "OK", "")],
     ["the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (2 readings: OK)"]),
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h(RECONCILER, "Degraded", "incremental: something else")], ["was never Degraded with a full map's error"]),
    ({"a": ("Error", MAP_FULL_ERROR)}, [_h("agent.controlplane.loadbalancer-reflectors", "Degraded")],
     ["the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (0 readings: no row)"]),
])
def test_map_visibility_judgement(shown: dict, health: list, fragments: list[str]) -> None:
    problems = map_visibility_problems(shown, health, MAP_FULL_ERRORS)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(
    ("cilium", "fe_type", "lb_class", "ipam", "enabled", "local", "want"),
    [
        ("1.19.1", "ClusterIP", None, None, None, False, True),  # the agent's defaults: lbipam, on
        ("1.20.5", "LoadBalancer", None, "lbipam", "true", False, True),
        ("1.18.14", "ClusterIP", None, None, None, False, False),  # before #40684
        ("1.20.5", "NodePort", None, None, None, False, False),
        ("1.20.5", "ExternalIPs", None, None, None, False, False),
        ("1.20.5", "ClusterIP", None, "nodeipam", None, False, False),  # class-less, but LB-IPAM is not the default class
        ("1.20.5", "ClusterIP", None, "none", None, False, False),
        ("1.20.5", "ClusterIP", None, None, "false", False, False),  # bpf-lb-enable-wildcard-entries off
        ("1.20.5", "LoadBalancer", "io.cilium/bgp-control-plane", "none", None, False, True),
        ("1.20.5", "LoadBalancer", "io.cilium/l2-announcer", None, None, False, True),
        ("1.20.5", "LoadBalancer", "io.cilium/node", None, None, False, False),
        ("1.20.5", "LoadBalancer", "other", None, None, False, False),
        ("1.20.5", "LoadBalancer", None, None, None, True, False),  # a local node address
        ((1, 19), "ClusterIP", None, " lbipam\n", "True\n", False, True),  # as read from the config map
    ],
)
def test_wildcard_entry_rule(cilium: Any, fe_type: str, lb_class: str | None, ipam: str | None, enabled: str | None, local: bool, want: bool) -> None:
    assert wildcard_entry(cilium, fe_type, lb_class, ipam, enabled, local) is want


@pytest.mark.parametrize(
    ("expected", "served", "wildcards", "fragments"),
    [
        (True, {"a": "10.96.0.1", "b": "10.96.0.2"}, {"10.96.0.1", "10.96.0.2", "10.96.0.9"}, []),
        (True, {"a": "10.96.0.1", "b": "10.96.0.2"}, {"10.96.0.1"}, ["1 of 2 Services in the map have no wildcard entry", "b (10.96.0.2)"]),
        (False, {"a": "fd00::1"}, set(), []),
        (False, {"a": "fd00::1", "b": "fd00::2"}, {"fd00::1", "fd00::2"}, ["2 of 2 Services in the map have a wildcard entry", "a (fd00::1)"]),
        (True, {}, set(), []),
    ],
)
def test_wildcard_judgement(expected: bool, served: dict, wildcards: set, fragments: list[str]) -> None:
    problems = wildcard_problems(expected, served, wildcards, "the rule's inputs")
    assert len(problems) == (1 if fragments else 0) and all(f in problems[0] for f in fragments), problems


def _maps(left_k8s: int = 0, left_map: tuple[str, ...] = (), **kw: object) -> MapsObservation:
    args: dict = dict(family="IPv4", map_max=512, map_max_source="bpf-lb-map-max", service_map_max=512, rev_nat_map_max=512,
                      rev_nat_map_max_source="default", filled_on_purpose=True, services=528, entries=512, rev_nat_entries=300,
                      missing=("mp-1",), shown={"mp-1": ("Error", "service map is full")}, full="service map", health_seen=(),
                      wildcard_expected=True, wildcard_why="the rule says one", served={"mp-2": "10.96.0.2"},
                      wildcard_addresses=frozenset({"10.96.0.2"}), left_in_kubernetes=left_k8s, left_in_map=left_map)
    args.update(kw)
    return MapsObservation(**args)


@pytest.mark.parametrize(("k8s", "in_map", "want"), [
    (0, (), []),
    (0, ("10.96.0.5:80",), ["0 of the suite's Services still in Kubernetes, 1 frontends still in the service map (10.96.0.5:80)"]),
    (2, ("a", "b", "c", "d"), ["2 of the suite's Services still in Kubernetes, 4 frontends still in the service map (a, b, c, ...)"]),
    (1, (), ["1 of the suite's Services still in Kubernetes, 0 frontends still in the service map ()"]),
])
def test_the_cleanup_judgement(k8s: int, in_map: tuple[str, ...], want: list[str]) -> None:
    from pytest_kpr.judge.maps import cleanup_problems

    assert cleanup_problems(_maps(k8s, in_map)) == want


def test_the_observation_is_maps_json() -> None:
    data = _maps(0, ("x",)).to_json()
    assert data["wildcard"] == {"expected": True, "why": "the rule says one", "served": 1, "with_entry": 1, "problems": []}
    assert data["shown"] == {"mp-1": {"status": "Error", "error": "service map is full"}} and data["after_cleanup"] == {"kubernetes": 0, "in_map": ["x"]}
    assert data["reconciler_health"] == {"readings": 0, "degraded": 0, "sample": []} and data["missing"] == ["mp-1"]
    assert _maps(wildcard_addresses=frozenset()).wildcard_problems() != []  # the rule says one and none is there


def test_the_maps_observation_is_maps_json_in_full() -> None:
    from pytest_kpr.rules.datapath import MAP_FULL_ERROR, REV_NAT_FULL_ERROR

    long = "x" * 600
    health = (_h("agent.controlplane.loadbalancer-reconciler", "Degraded", long), _h("agent.controlplane.loadbalancer-reconciler", "OK", ""),
              _h("agent.other", "Degraded"))
    shown = {"mp-1": ("Error", f"a: {MAP_FULL_ERROR}"), "mp-2": ("Error", REV_NAT_FULL_ERROR), "mp-3": ("Pending", None),
             "mp-4": (None, None)} | {f"mp-{i}": ("Error", MAP_FULL_ERROR) for i in range(5, 30)}
    m = _maps(2, ("10.96.0.9:80",), missing=tuple(shown), shown=shown, health_seen=health, filled_on_purpose=False,
              served={"mp-40": "10.96.0.40", "mp-41": "10.96.0.41"}, wildcard_addresses=frozenset({"10.96.0.40", "10.0.0.1"}),
              wildcard_expected=False)
    data = m.to_json()
    assert data == {
        "family": "IPv4", "map_max": 512, "map_max_source": "bpf-lb-map-max", "service_map_max": 512, "rev_nat_map_max": 512,
        "rev_nat_map_max_source": "default", "filled_on_purpose": False, "services": 528, "entries": 512, "rev_nat_entries": 300,
        "missing": list(shown), "shown": {n: {"status": s, "error": e} for n, (s, e) in list(shown.items())[:20]}, "full": "service map",
        "frontend_errors": {"service map": 26, "reverse-NAT map": 1},
        "reconciler_health": {"readings": 2, "degraded": 1,
                              "sample": [{"level": "Degraded", "message": "Reconciliation failed", "error": "x" * 500}]},
        "wildcard": {"expected": False, "why": "the rule says one", "served": 2, "with_entry": 1, "problems": m.wildcard_problems()},
        "not_judged": {"log": "'Updating frontend failed' (pkg/loadbalancer/reconciler/bpf_reconciler.go Update)",
                       "metrics": "cilium_bpf_map_pressure, every lb-pressure-metrics-interval (pkg/loadbalancer/maps/pressure_metrics.go)"},
        "after_cleanup": {"kubernetes": 2, "in_map": ["10.96.0.9:80"]}}
    assert len(data["shown"]) == 20 and data["wildcard"]["problems"]  # expected none, one found
