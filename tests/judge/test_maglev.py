"""The Maglev judgement (pytest_kpr.judge.maglev), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.maglev import maglev_flow_problems, maglev_remap_problems, maglev_scope_problems, maglev_seed_problems, maglev_table, maglev_table_problems
from pytest_kpr.parse.statedb import parse_lb_maps_dump


DUMP = parse_lb_maps_dump("""BE: ID=7 ADDR=10.244.1.10:8080/TCP STATE=active
BE: ID=9 ADDR=10.244.2.10:8080/TCP STATE=active
MAGLEV: ID=4 INNER=[9(8191), 7(8190)]
REV: ID=4 ADDR=172.18.0.3:30000
SVC: ID=3 ADDR=10.96.0.5:80/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=2 QCOUNT=0 FLAGS=ClusterIP+non-routable
SVC: ID=4 ADDR=172.18.0.3:30000/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=2 QCOUNT=0 FLAGS=NodePort
SVC: ID=4 ADDR=172.18.0.3:30000/TCP SLOT=1 BEID=7 COUNT=0 QCOUNT=0 FLAGS=NodePort
""")


def test_a_maglev_table_is_read_by_frontend_with_backend_addresses() -> None:
    assert maglev_table(DUMP, "172.18.0.3:30000/TCP") == {"10.244.2.10:8080": 8191, "10.244.1.10:8080": 8190}
    assert maglev_table(DUMP, "10.96.0.5:80/TCP") is None and maglev_table(DUMP, "1.2.3.4:1/TCP") is None


@pytest.mark.parametrize(("seeds", "fragment"), [
    ({"a": "s", "b": "s"}, None),
    ({"a": None, "b": "D"}, None),  # unset is the built-in default
    ({"a": None, "b": None}, None),
    ({"a": "s", "b": "t", "c": "s"}, "the agents use 2 different hash seeds: 's' on a, c; 't' on b"),
    ({"a": None, "b": "s"}, "'D' on a; 's' on b"),
])
def test_maglev_seed_judgement(seeds: dict, fragment: str | None) -> None:
    problems = maglev_seed_problems(seeds, "D")
    assert (fragment is None and not problems) or (fragment is not None and fragment in problems[0]), problems


@pytest.mark.parametrize(("tables", "fragment"), [
    ({"a": {"x": 3, "y": 2}, "b": {"x": 2, "y": 3}}, None),
    ({"a": None}, "a has no Maglev table for its NodePort frontend"),
    ({"a": {"x": 5}}, "a's table holds ['x'], not the backends ['x', 'y']"),
    ({"a": {"x": 4, "y": 1}}, "a's table is unbalanced: {'x': 4, 'y': 1}"),
])
def test_maglev_table_judgement(tables: dict, fragment: str | None) -> None:
    problems = maglev_table_problems(tables, ["x", "y"])
    assert (fragment is None and not problems) or (fragment is not None and problems == [fragment]), problems


def test_maglev_scope_and_flow_judgements() -> None:
    assert maglev_scope_problems({"a": False, "b": False}) == []
    assert maglev_scope_problems({"a": False, "b": True})[0].startswith("the ClusterIP frontend has a Maglev table on b:")
    same = {"n1": {1: "p", 2: "q"}, "n2": {1: "p", 2: "q"}}
    assert maglev_flow_problems(same) == [] and maglev_flow_problems({"n1": {1: "p"}}) == []
    differ = maglev_flow_problems({"n1": {1: "p", 2: "q"}, "n2": {1: "p", 2: "p"}})
    assert differ == ["1 of 2 flows did not reach one backend through n1 and n2: flow from :2 reached q through n1, p through n2"]
    unserved = maglev_flow_problems({"n1": {1: "p"}, "n2": {1: None}})
    assert "flow from :1 was not served through n2" in unserved[0]


@pytest.mark.parametrize(("after", "fragments"), [
    ({1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "b"}, []),  # only the removed backend's flow (7) moved
    ({1: "a", 2: "b", 3: "c", 4: "b", 5: "b", 6: "c", 7: "b"}, []),  # one survivor moved: within max(1, 10%)
    ({1: "b", 2: "c", 3: "a", 4: "a", 5: "b", 6: "c", 7: "b"}, ["3 of 6 flows on the surviving backends moved (50%; allowed 1)"]),
    ({1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "d"}, ["1 flows still reached the removed backend d"]),
    ({1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}, ["1 flows got no answer after the removal"]),
])
def test_maglev_remap_judgement(after: dict, fragments: list[str]) -> None:
    before = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "d"}
    problems = maglev_remap_problems(before, after, "d", 4)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


def test_the_fakes_maglev_tables_have_the_properties_the_suite_checks() -> None:
    """One seed and backend set make one table (whatever order the backends come in), balanced; a different seed another;
    removing one of four backends moves few of the other flows, and flows do not depend on the destination."""
    from pytest_kpr.testing import maglev

    s, t = "JLfvgnHc2kaSUFaI", "a3ByLW1hZ2xldnNk"  # the agent's default seed and another (base64 of 12 bytes)
    bes = tuple((f"10.244.{i}.10", 8080) for i in range(4))
    assert maglev.table(s, bes) == maglev.table(s, tuple(reversed(bes))) != maglev.table(t, bes)
    counts = maglev.slot_counts(s, bes)
    assert max(counts.values()) - min(counts.values()) <= 1 and sum(counts.values()) == maglev.TABLE_SIZE
    flows = [maglev.pick(s, bes, "172.18.0.1", p, 30000) for p in range(42000, 42400)]
    after = [maglev.pick(s, bes[:3], "172.18.0.1", p, 30000) for p in range(42000, 42400)]
    moved = sum(1 for a, b in zip(flows, after, strict=True) if a != bes[3] and a != b)
    assert moved <= 0.02 * sum(1 for a in flows if a != bes[3])


def test_the_observation_is_maglev_json() -> None:
    from pytest_kpr.judge.maglev import MaglevObservation, MaglevRemap

    m = MaglevObservation("IPv4", 30100, ("10.244.1.5:8080",), ("mag-0", "mag-1"), {"w1": None}, {"w1": {"mag-0": 3}}, {"w1": False},
                          {"w1": {40000: "mag-0", 40001: None}}, MaglevRemap("mag-1", "w3", {40000: "mag-0"}, {40000: "mag-0"}))
    assert m.to_json() == {
        "family": "IPv4", "node_port": 30100, "backends": ["10.244.1.5:8080"], "seeds": {"w1": None}, "tables": {"w1": {"mag-0": 3}},
        "cluster_ip_tables": {"w1": False}, "flows": {"w1": {"40000": "mag-0", "40001": None}},
        "remap": {"removed": "mag-1", "through": "w3", "before": {"40000": "mag-0"}, "after": {"40000": "mag-0"}}}
    assert MaglevObservation("IPv6", 1, (), (), {}, {}, {}).to_json()["flows"] is None
