"""The session affinity judgement (pytest_kpr.judge.affinity), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

from typing import Sequence

import pytest

from pytest_kpr.judge.affinity import (affinity_map_problems, outside_spread_problems, outside_sticky_problems, spread_problems, sticky_problems,
                                       timeout_problems)
from pytest_kpr.judge.affinity import AffinityObservation, OutsideAffinity

B4 = ("10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080", "10.0.0.4:8080")


def seen(sticky: "Sequence[str | None]" = (B4[0],) * 20, plain: "Sequence[str | None]" = B4 * 5,
         timeout: "Sequence[str | None]" = B4[:3], backends: "Sequence[str]" = B4) -> AffinityObservation:
    return AffinityObservation("IPv4", tuple(backends), tuple(sticky), tuple(plain), tuple(timeout), 1, 2.5)


@pytest.mark.parametrize(("sticky", "plain", "problems"), [
    ([B4[0]] * 20, B4 * 5, {"sticky": [], "spread": []}),
    ([B4[0]] * 19 + [B4[1]], B4 * 5, {"sticky": ["20 connections from one client reached 2 backends"], "spread": []}),
    ([B4[0]] * 20, [B4[2]] * 20, {"sticky": [], "spread": ["all 20 connections without affinity reached 10.0.0.3:8080 of 4 backends (chance: 3.6e-12)"]}),
    ([B4[0]] * 19 + [None], B4 * 5, {"sticky": ["1 of 20 connections did not connect or show a backend"], "spread": []}),
    ([B4[0]] * 20, ["10.9.9.9:80"] + list(B4 * 4), {"sticky": [], "spread": ["connections reached ['10.9.9.9:80'], which are not the Service's backends"]}),
    (["10.9.9.9:80"] * 20, B4 * 5, {"sticky": ["connections reached ['10.9.9.9:80'], which are not the Service's backends"], "spread": []}),
    ([B4[0]] * 20, [None] + list(B4 * 4), {"sticky": [], "spread": ["1 of 17 connections did not connect or show a backend"]}),
])
def test_affinity_verdicts(sticky: list[str | None], plain: list[str | None], problems: dict[str, list[str]]) -> None:
    got = {"sticky": sticky_problems(seen(sticky, plain)), "spread": spread_problems(seen(sticky, plain))}
    assert {k: [g[:len(w)] for g, w in zip(v, problems[k], strict=False)] for k, v in got.items()} == problems
    assert {k: len(v) for k, v in got.items()} == {k: len(v) for k, v in problems.items()}


@pytest.mark.parametrize(("plain", "backends", "spread_problem"), [
    (["x:1", "x:1"], ["x:1", "x:2"], True),  # two connections, two backends, one reached: judged
    (["x:1"], ["x:1", "x:2"], False),  # one connection proves nothing
    (["x:1", "x:1"], ["x:1"], False),  # one backend: nothing to spread over
    (["x:1", "x:1", "x:1"], ["x:1", "x:2", "x:3"], True),
])
def test_the_spread_verdict_needs_two_connections_and_two_backends(plain: list[str], backends: list[str], spread_problem: bool) -> None:
    assert bool(spread_problems(seen(["x:1"], plain, backends=backends))) is spread_problem


@pytest.mark.parametrize(("peers", "fragment"), [
    (["a", "b", "a", "c"], None),
    (["a", "a", "a", "a"], "all 4 connections, 2.5 s apart (past the 1 s timeout), reached a: the affinity never expired (chance if it does: 1.6e-02)"),
    (["a", None, "a", "a"], "1 of 4 connections did not connect"),
    (["a"], None),  # one connection proves nothing
])
def test_affinity_timeout_judgement(peers: list, fragment: str | None) -> None:
    problems = timeout_problems(seen(timeout=peers, backends=["a", "b", "c", "d"]))
    assert (fragment is None and not problems) or (fragment is not None and fragment in problems[0]), problems
    assert timeout_problems(seen(timeout=["a", "a"], backends=["a"])) == [], "one backend: no spread to expect"


def test_the_observation_is_the_evidence_files_shape() -> None:
    assert seen(sticky=[B4[0], None], plain=[B4[1]], timeout=[B4[2]]).to_json() == {
        "family": "IPv4", "backends": list(B4), "connections": 2, "sticky": [B4[0], None], "plain": [B4[1]],
        "timeout": {"timeout_s": 1, "idle_s": 2.5, "peers": [B4[2]]}, "outside": None}
    o = OutsideAffinity("n2", "172.18.0.1", ("aff-a", "aff-b"), ("aff-a", None), ("aff-b", "aff-a"))
    assert AffinityObservation("IPv4", B4, (), (), (), 1, 2.5, o).to_json()["outside"] == {
        "node": "n2", "source": "172.18.0.1", "backends": ["aff-a", "aff-b"], "requests": 2, "sticky": ["aff-a", None], "plain": ["aff-b", "aff-a"],
        "affinity_map": None, "affinity_map_unread": None, "rev_nat_id": None, "backend_ids": {}}
    assert mapped((("172.18.0.1", 5, False, 11),)).to_json()["affinity_map"] == [
        {"client": "172.18.0.1", "rev_nat_id": 5, "netns_cookie": False, "backend_id": 11}]


PODS = ("aff-a", "aff-b", "aff-c", "aff-d")


def outside(sticky: list[str | None], plain: list[str | None], backends: tuple[str, ...] = PODS) -> OutsideAffinity:
    return OutsideAffinity("n2", "172.18.0.1", backends, tuple(sticky), tuple(plain))


@pytest.mark.parametrize(("sticky", "plain", "problems"), [
    (["aff-b"] * 12, ["aff-a", "aff-c"] * 6, {"sticky": [], "spread": []}),
    (["aff-b", "aff-c"] * 6, ["aff-a", "aff-c"] * 6,
     {"sticky": ["12 requests from outside (172.18.0.1) to n2's NodePort reached 2 backends ['aff-b', 'aff-c'] despite sessionAffinity ClientIP"],
      "spread": []}),
    (["aff-b"] * 12, ["aff-d"] * 12,
     {"sticky": [], "spread": ["all 12 requests from outside to n2's NodePort without affinity reached aff-d of 4 backends (chance: 2.4e-07)"]}),
    (["aff-b", None] * 6, ["aff-a", "aff-c"] * 6,
     {"sticky": ["6 of 12 requests were not served by a backend (no backend logged them)"], "spread": []}),
    (["aff-b"] * 12, ["aff-a", "web-x"] * 6,
     {"sticky": [], "spread": ["requests reached ['web-x'], which are not the Service's backends"]}),
])
def test_outside_affinity_verdicts(sticky: list[str | None], plain: list[str | None], problems: dict[str, list[str]]) -> None:
    got = {"sticky": outside_sticky_problems(outside(sticky, plain)), "spread": outside_spread_problems(outside(sticky, plain))}
    assert {k: len(v) for k, v in got.items()} == {k: len(v) for k, v in problems.items()}, got
    assert all(w in g for k, v in got.items() for g, w in zip(v, problems[k], strict=True)), got


def mapped(entries: tuple | None, sticky: tuple = ("aff-a",) * 3, rev_nat: int | None = 5, unread: str | None = None) -> OutsideAffinity:
    return OutsideAffinity("n2", "172.18.0.1", ("aff-a", "aff-b"), sticky, ("aff-a", "aff-b"), entries, unread, rev_nat,
                           {"aff-a": 11, "aff-b": 12})


@pytest.mark.parametrize(("o", "fragments"), [
    (mapped((("172.18.0.1", 5, False, 11),)), []),
    (mapped((("0102030405060708", 5, True, 12), ("172.18.0.1", 5, False, 11))), []),  # the socket plane's entries beside it
    (mapped(()), ["n2's affinity map holds no entry for 172.18.0.1 and the NodePort frontend (rev NAT ID 5) after the requests (entries: none)"]),
    (mapped((("172.18.0.9", 5, False, 11), ("172.18.0.1", 6, False, 11))), ["holds no entry for 172.18.0.1 * (entries: 172.18.0.9 rev_nat 5 "
                                                                            "backend 11, 172.18.0.1 rev_nat 6 backend 11)"]),
    # the frontend's ID 5 read back as 1280: the bytes were written in the other order (SRC_REV_NAT_ORDER)
    (mapped((("172.18.0.1", 1280, False, 11),)), ["holds no entry for 172.18.0.1 * (entries: 172.18.0.1 rev_nat 1280 backend 11); the "
                                                  "client's entry carries rev NAT ID 1280, the frontend's ID with its two bytes swapped"]),
    (mapped((("172.18.0.1", 5, True, 11),)), ["holds no entry"]),  # a netns-cookie entry is the socket plane's, not this
    (mapped((("172.18.0.1", 5, False, 12),)), ["n2's affinity entry for 172.18.0.1 names backend 12, but aff-a (backend 11) served every request"]),
    (mapped(None, unread="bpftool: exit 255"), ["the affinity map of n2 was not read: bpftool: exit 255"]),
    (mapped(((),), sticky=("aff-a", "aff-b")), ["no single backend served the sticky requests (aff-a, aff-b)"]),
    (mapped((("172.18.0.1", 5, False, 11),), rev_nat=None), ["or the frontend's rev NAT ID is unknown"]),
])
def test_affinity_map_judgement(o: OutsideAffinity, fragments: list[str]) -> None:
    import fnmatch

    problems = affinity_map_problems(o)
    assert len(problems) == len(fragments) and all(fnmatch.fnmatch(p, f"*{f}*") for f, p in zip(fragments, problems, strict=True)), problems
