"""The backend slots judgement (pytest_kpr.judge.backend_slots), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.backend_slots import Convergence, SlotView, active_slots, convergence_problems
from pytest_kpr.parse import L3n4
from pytest_kpr.parse.statedb import parse_lb_maps_dump

from .tables import B1, B2


ES = frozenset({B1, B2})


@pytest.mark.parametrize(
    ("conv", "words"),
    [
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2)), SlotView("n2", 7, (B2, B1)))), []),
        (Convergence(2, 1, ES, (SlotView("n1", 7, (B1, B2)),)), ["1/2 pods Ready"]),
        (Convergence(2, 2, frozenset({B1}), (SlotView("n1", 7, (B1,)),)), ["the EndpointSlice has 1 ready addresses, not 2"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1,)),)), ["n1: slots lack ['10.244.2.10:8080']"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2, "10.244.3.3:8080")),)), ["n1: slots still hold ['10.244.3.3:8080']"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2, B2)),)), ["n1: ['10.244.2.10:8080'] fill more than one slot"]),
        (Convergence(2, 2, ES, (SlotView("n1", None, (B1, B2)),)), ["n1: no slot-0 entry"]),
        (Convergence(2, 2, ES, ()), ["no agent's slots were read"]),
        (Convergence(2, 2, ES, (SlotView("n1", 7, (B1, B2)), SlotView("n2", 7, (B1,)))), ["n2: slots lack"]),
    ],
)
def test_convergence_judgement(conv: Convergence, words: list[str]) -> None:
    problems = convergence_problems(conv)
    assert len(problems) == len(words) and all(w in p for w, p in zip(words, problems, strict=True)), problems
    assert conv.converged is (not words)


def _dump(count: int, qcount: int, slots: list[str], fe: str = "10.96.0.20:80/TCP") -> str:
    """A ``lb/maps-dump`` of one frontend (format: tests/data/cilium/statedb-lb/v1.18-lb-maps-dump-from-clusterip-txtar.txt)."""
    lines = [f"BE: ID={i} ADDR={b}/TCP STATE=active" for i, b in enumerate(slots, 1)]
    lines.append(f"SVC: ID=7 ADDR={fe} SLOT=0 LBALG=undef AFFTimeout=0 COUNT={count} QCOUNT={qcount} FLAGS=ClusterIP+non-routable")
    lines += [f"SVC: ID=7 ADDR={fe} SLOT={i} BEID={i} COUNT=0 QCOUNT=0 FLAGS=ClusterIP+non-routable" for i in range(1, len(slots) + 1)]
    lines.append("SVC: ID=9 ADDR=10.96.0.99:80/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=0 QCOUNT=0 FLAGS=ClusterIP+non-routable")
    return "\n".join(lines) + "\n"


T3 = "10.244.3.3:8080"


@pytest.mark.parametrize(
    ("dump", "selectable", "kept", "words"),
    [
        # a scale-down while the removed pod still terminates: its slot stays after the count (SRC_TERMINATING_SLOTS)
        (_dump(2, 1, [B1, B2, T3]), (B1, B2), (T3,), []),
        # the same slots with the terminating backend counted in: new connections could pick it
        (_dump(3, 0, [B1, B2, T3]), (B1, B2, T3), (), ["n1: slots still hold ['10.244.3.3:8080']"]),
        # only terminating backends left: they are the count (KEP-1669)
        (_dump(2, 0, [B1, B2]), (B1, B2), (), []),
        (_dump(1, 0, [B1]), (B1,), (), ["n1: slots lack ['10.244.2.10:8080']"]),
    ],
)
def test_slots_are_the_masters_count_not_every_slot(dump: str, selectable: tuple[str, ...], kept: tuple[str, ...], words: list[str]) -> None:
    """``bpf lb list`` prints every slot; the slots a new connection picks are the master entry's COUNT (lb/maps-dump),
    so a terminating backend kept for its connections is neither an extra backend nor a missing one."""
    view = active_slots("n1", parse_lb_maps_dump(dump), L3n4("10.96.0.20", 80, "TCP"))
    assert (view.service_id, view.backends, view.kept) == (7, selectable, kept)
    problems = convergence_problems(Convergence(2, 2, ES, (view,)))
    assert len(problems) == len(words) and all(w in p for w, p in zip(words, problems, strict=True)), problems


def test_a_frontend_absent_from_the_dump_has_no_master() -> None:
    view = active_slots("n1", parse_lb_maps_dump(_dump(2, 0, [B1, B2])), L3n4("10.96.0.21", 80, "TCP"))
    assert view.service_id is None and view.backends == ()
    assert active_slots("n1", parse_lb_maps_dump(_dump(1, 0, [B1])), L3n4("10.96.0.20", 80, "UDP")).service_id is None


@pytest.mark.parametrize(("es", "agents", "lag", "slowest"), [
    ({"a": 0.5, "b": 0.75}, {"n1": {"a": 0.5, "b": 0.75}, "n2": {"a": 1.0, "b": 1.25}}, {"n1": 0.0, "n2": 0.5}, ("n2", 0.5)),
    ({"a": 0.5}, {"n1": {"a": 0.5}, "n2": {}}, {"n1": 0.0, "n2": None}, ("n2", None)),  # never caught up: slowest
    ({"a": 1.0}, {"n1": {"a": 0.75}}, {"n1": -0.25}, ("n1", -0.25)),  # an agent can be ahead of the API's view
    ({}, {"n1": {}}, {"n1": None}, ("n1", None)),
    ({"a": 0.5}, {}, {}, None),
])
def test_convergence_timing(es: dict[str, float], agents: dict[str, dict[str, float]], lag: dict[str, float | None], slowest: Any) -> None:
    from pytest_kpr.judge.backend_slots import ConvergenceTiming

    t = ConvergenceTiming(es, agents, 0.25)
    assert t.lag() == lag
    assert t.slowest() == slowest
    assert t.to_json()["slowest"] == (None if slowest is None else {"node": slowest[0], "lag_seconds": slowest[1]})


def test_convergence_timing_in_its_evidence_form() -> None:
    from pytest_kpr.judge.backend_slots import ConvergenceTiming

    t = ConvergenceTiming({"a": 0.5, "b": 1.0}, {"w1": {"a": 0.75, "b": 1.12345}, "w2": {"a": 0.6}, "w3": {"a": 0.5, "b": 1.25}}, 0.25)
    assert t.lag() == {"w1": 0.123, "w2": None, "w3": 0.25}
    assert t.slowest() == ("w2", None), "an agent that never caught up is the slowest"
    assert t.to_json() == {"resolution_seconds": 0.25, "endpointslice": {"a": 0.5, "b": 1.0},
                           "agents": {"w1": {"a": 0.75, "b": 1.12345}, "w2": {"a": 0.6}, "w3": {"a": 0.5, "b": 1.25}},
                           "lag_seconds": {"w1": 0.123, "w2": None, "w3": 0.25}, "slowest": {"node": "w2", "lag_seconds": None}}
    done = ConvergenceTiming({"a": 0.5}, {"w1": {"a": 0.7}, "w2": {"a": 0.9}}, 0.25)
    assert done.slowest() == ("w2", 0.4) and done.to_json()["slowest"] == {"node": "w2", "lag_seconds": 0.4}
    assert ConvergenceTiming({}, {}, 0.25).to_json()["slowest"] is None


def _listed(svc_id: int | None, backends: tuple[str, ...], mine_id: int | None = 7, mine: tuple[str, ...] = ("10.244.1.5:8080", "10.244.2.6:8080")) -> list[str]:
    from types import SimpleNamespace as NS

    from pytest_kpr.judge.backend_slots import Convergence, SlotsListed, SlotView, listing_problems
    from pytest_kpr.parse import L3n4
    from pytest_kpr.parse.addr import parse_l3n4

    listed = None if svc_id is None else NS(id=svc_id, backends=[NS(address=parse_l3n4(b)) for b in backends])
    return listing_problems(SlotsListed(Convergence(2, 2, frozenset(mine), ()), L3n4("10.96.0.10", 80, "TCP"), "w1", listed,
                                        SlotView("w1", mine_id, mine)))


@pytest.mark.parametrize(("svc_id", "backends", "mine_id", "want"), [
    (7, ("10.244.2.6:8080", "10.244.1.5:8080"), 7, []),  # the same backends in another order
    (None, (), 7, ["the agent on w1 lists no ClusterIP service 10.96.0.10:80/TCP"]),
    (7, ("10.244.1.5:8080",), 7, ["service list ['10.244.1.5:8080'] vs the BPF slots ['10.244.1.5:8080', '10.244.2.6:8080']"]),
    (7, ("10.244.1.5:8080", "10.244.2.6:8080"), 8, ["slot 0 carries RevNAT 8, service list ID 7"]),
    (7, ("10.244.1.5:8080", "10.244.2.6:8080"), None, ["slot 0 carries RevNAT None, service list ID 7"]),
])
def test_the_service_list_agrees_with_the_bpf_slots(svc_id: int | None, backends: tuple[str, ...], mine_id: int | None, want: list[str]) -> None:
    assert _listed(svc_id, backends, mine_id) == want


@pytest.mark.parametrize(("after", "want"), [
    (("a", "b", "c", "d"), []),
    (("a", "b", "c"), ["expected 2 new backends, got ['c']"]),
    (("a", "b", "c", "d", "e"), ["expected 2 new backends, got ['c', 'd', 'e']"]),
    (("c", "d"), []),  # the two old ones gone: still two new ones (convergence judges the rest)
])
def test_a_scale_up_shows_exactly_the_new_backends(after: tuple[str, ...], want: list[str]) -> None:
    from pytest_kpr.judge.backend_slots import SlotView, new_backend_problems

    assert new_backend_problems(frozenset({"a", "b"}), SlotView("w1", 7, after), 2) == want
