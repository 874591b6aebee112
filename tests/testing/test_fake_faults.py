"""The fake's fault declarations (pytest_kpr.testing.faults): checked values, the family field, and each fault declared
beside the code that implements it, naming a property a suite declares."""

from __future__ import annotations

import copy
import importlib
import pickle
import re
from pathlib import Path

import pytest

import pytest_kpr.testing  # noqa: F401  (imports every module of the fake, so every fault is declared)
from pytest_kpr.testing.faults import DECLARED, FAMILIES, SETUP, Fault, Faults, by_property, check_faults, declare

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("fault", "value", "out"), [
    (Fault("f", "p", "d"), True, True),
    (Fault("f", "p", "d"), False, False),
    (Fault("f", "p", "d"), "IPv6", "fake fault f is True or False, not 'IPv6'"),
    (Fault("f", "p", "d"), 1, "fake fault f is True or False, not 1"),
    (Fault("f", "p", "d", per_family=True), "IPv6", "IPv6"),
    (Fault("f", "p", "d", per_family=True), "IPv4", "IPv4"),
    (Fault("f", "p", "d", per_family=True), True, True),
    (Fault("f", "p", "d", per_family=True), "ipv6", "fake fault f is True or False or one of IPv4, IPv6, not 'ipv6'"),
    (Fault("f", "p", "d", default=None), "fake-worker", "fake-worker"),
    (Fault("f", "p", "d", default=None), 3, 3),
    (Fault("f", "p", "d", default=2.0), 1, 1.0),
    (Fault("f", "p", "d", default=2.0), 0.5, 0.5),
    (Fault("f", "p", "d", default=2.0), "x", "fake fault f is a float, not 'x'"),
    (Fault("f", "p", "d", default=2.0), True, "fake fault f is a float, not True"),
])
def test_a_value_is_checked_against_its_declaration(fault: Fault, value: object, out: object) -> None:
    if isinstance(out, str) and out.startswith("fake fault"):
        with pytest.raises(ValueError, match=re.escape(out)):
            fault.check(value)
    else:
        assert fault.check(value) == out and type(fault.check(value)) is type(out)


@pytest.mark.parametrize(("value", "family", "hit"), [
    (True, "IPv4", True), (True, "IPv6", True), (True, None, True),
    ("IPv6", "IPv6", True), ("IPv6", "IPv4", False), ("IPv6", None, False),
    ("IPv4", "IPv4", True), ("IPv4", "IPv6", False),
    (False, "IPv4", False), (False, "IPv6", False),
])
def test_a_per_family_fault_hits_the_family_it_is_set_for(value: object, family: str | None, hit: bool) -> None:
    assert Faults(affinity_ignored=value).on("affinity_ignored", family) is hit
    assert Faults().on("affinity_ignored", family) is False


def test_a_per_family_fault_set_for_one_family_cannot_be_read_as_a_plain_flag() -> None:
    """Reading it as a flag would break every family: the reader must say which family it asks about."""
    assert Faults(affinity_ignored=True).affinity_ignored is True
    with pytest.raises(TypeError, match=r"fake fault affinity_ignored is set for IPv6 only: read it with Faults.on\('affinity_ignored', family\)"):
        _ = Faults(affinity_ignored="IPv6").affinity_ignored
    with pytest.raises(AttributeError, match="no per-family fake fault 'stale_slots'"):
        Faults().on("stale_slots", "IPv4")


def test_faults_are_checked_immutable_and_compare_by_what_is_set() -> None:
    with pytest.raises(ValueError, match=r"^no fake fault 'nope' \(known: .*affinity_ignored, .*\)$"):
        Faults(nope=True)
    with pytest.raises(AttributeError, match="no fake fault 'nope'"):
        _ = Faults().nope
    f = Faults(slots_cap=3, itp_local_ignored="IPv6", stale_slots=False)
    with pytest.raises(AttributeError, match="immutable"):
        f.slots_cap = 4  # type: ignore[misc]
    assert f == Faults(itp_local_ignored="IPv6", slots_cap=3) != Faults(slots_cap=3)
    assert hash(f) == hash(Faults(itp_local_ignored="IPv6", slots_cap=3))
    assert repr(f) == "Faults(itp_local_ignored='IPv6', slots_cap=3)" and f.given() == {"itp_local_ignored": "IPv6", "slots_cap": 3}
    assert pickle.loads(pickle.dumps(f)) == f == copy.deepcopy(f)
    assert (f.stale_slots, f.slow_agent_s, f.backend_missing_on) == (False, 2.0, None)


@pytest.mark.parametrize(("pairs", "out"), [
    ((("stale_slots", None),), (("stale_slots", True),)),
    ((("affinity_ignored", "IPv6"),), (("affinity_ignored", "IPv6"),)),
    ((("slots_cap", 3),), (("slots_cap", 3),)),
    ((("slots_cap", None),), "fake fault slots_cap needs a value (slots_cap=VALUE)"),
    ((("stale_slots", "IPv6"),), "fake fault stale_slots is True or False, not 'IPv6'"),
    ((("nope", None),), "no fake fault 'nope'"),
])
def test_the_command_lines_faults_are_checked(pairs: tuple, out: object) -> None:
    if isinstance(out, str):
        with pytest.raises(ValueError, match=re.escape(out)):
            check_faults(pairs)
    else:
        assert check_faults(pairs) == out


def test_a_fault_declared_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="fake fault stale_slots declared twice"):
        declare(Fault("stale_slots", "backend slots", "another"))


def test_each_fault_is_declared_beside_the_code_that_implements_it() -> None:
    """The declaration is the only place a fault is added: its module reads it outside the declaration."""
    seen: dict[str, str] = {}
    for path in sorted((ROOT / "pytest_kpr" / "testing").glob("*.py")):
        module = importlib.import_module(f"pytest_kpr.testing.{path.stem}")
        declared = getattr(module, "FAULTS", ())
        if not declared:
            continue
        src = path.read_text()
        start = src.index("FAULTS = declare(")
        body = src[:start] + src[src.index("\n)\n", start):]
        for fault in declared:
            seen[fault.name] = path.name
            # read as faults.NAME, faults.on("NAME", ...), given().get("NAME") or "NAME" in ...given()
            assert re.search(rf"\.{fault.name}\b|[\"']{fault.name}[\"']", body), f"{fault.name} is declared in {path.name} but not read there"
    assert set(seen) == set(DECLARED)


def test_each_fault_names_a_property_a_suite_declares() -> None:
    properties = {m for p in (ROOT / "suites").glob("test_*.py") for m in re.findall(r'property="([^"]+)"', p.read_text())}
    groups = by_property()
    assert set(groups) - {SETUP} <= properties, set(groups) - properties
    assert all(f.doc and f.name.isidentifier() for f in DECLARED.values())
    assert FAMILIES == ("IPv4", "IPv6")


#: the faults that still name a family, each with why it is no per-family flag; a new one must say why here
FAMILY_NAMED = {
    "kube_proxy_rules_v6": "a value (kube-proxy's rule mode) in ip6tables, which kube_proxy_rules's IPv4 views never read",
    "backend6_missing": "its IPv4 counterpart names a node (backend_missing_on); this one hits every agent",
    "service6_map_capacity": "a value: the lb6 map's size, beside the lb4 map's (service_map_capacity)",
    "healthserver_v4_only": "one server listening in one family: the fault is the other family's absence",
    "nodeport_v6_missing": "the IPv6 wildcard frontend alone ([::]:<port>); the IPv4 NodePort's absence is nodeport_wrong_port's row",
}


def test_no_fault_is_an_ipv6_twin() -> None:
    """A fault of one family is a per-family fault set to that family (Faults(affinity_ignored='IPv6')), not a second flag."""
    assert {n for n in DECLARED if re.search(r"6|v4", n)} == set(FAMILY_NAMED)
    assert all(not DECLARED[n].per_family for n in FAMILY_NAMED)
