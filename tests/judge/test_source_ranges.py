"""The source-ranges judgement (pytest_kpr.judge.source_ranges) and the rule it applies (rules.datapath.source_range_allows),
branch by branch: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.source_ranges import drop_reason_problems, inside_problems, range_problems
from pytest_kpr.judge.north_south import OutsideHttp
from pytest_kpr.judge.source_ranges import RangeCase
from pytest_kpr.rules.datapath import source_range_allows

CLIENT = "172.18.0.1"
DENIED = "Denied by LB src range check x1 on w (ingress, nodeport.h:1)"


@pytest.mark.parametrize(("source", "ranges", "deny", "allowed"), [
    (CLIENT, [], False, True),  # no ranges: no check
    (CLIENT, [], True, True),  # no ranges, deny: still no check
    (CLIENT, ["172.18.0.1/32"], False, True),
    (CLIENT, ["172.18.0.0/16", "192.0.2.0/24"], False, True),
    (CLIENT, ["192.0.2.0/24"], False, False),
    (CLIENT, ["172.18.0.1/32"], True, False),
    (CLIENT, ["192.0.2.0/24"], True, True),
    (CLIENT, ["2001:db8::/64"], False, False),  # a range of the other family never holds it
    ("fc00:f853:ccd:e793::1", ["fc00:f853:ccd:e793::1/128"], False, True),
    ("fc00:f853:ccd:e793::1", ["172.18.0.1/32"], True, True),
    (CLIENT, ["not-a-cidr", "172.18.0.9"], False, False),  # the unparsable one ignored; a bare address is a /32
    (CLIENT, ["not-a-cidr"], False, True),  # nothing parsable: no check
])
def test_the_source_range_rule(source: str, ranges: list[str], deny: bool, allowed: bool) -> None:
    assert source_range_allows(source, ranges, deny) is allowed


def case(ranges: tuple[str, ...], deny: bool, served: bool, drops: tuple[str, ...] = ()) -> RangeCase:
    req = OutsideHttp("198.18.22.10:80", "w", 200 if served else None, "http" if served else "timeout", "web" if served else None)
    return RangeCase("sr-x", ranges, deny, req, drops)


IN, OUT = ("172.18.0.1/32",), ("192.0.2.0/24",)


@pytest.mark.parametrize(("c", "fragments"), [
    (case(IN, False, True), []),
    (case(OUT, False, False, (DENIED,)), []),
    (case(IN, True, False, (DENIED,)), []),
    (case(OUT, True, True), []),
    (case(IN, False, False), ["sr-x (allow list 172.18.0.1/32): 172.18.0.1 may pass, yet 198.18.22.10:80 through w gave no answer (timeout)"]),
    (case(OUT, False, True), ["sr-x (allow list 192.0.2.0/24): 172.18.0.1 is refused by the ranges, yet 198.18.22.10:80 through w "
                              "answered HTTP 200: the source-range check did not apply"]),
    (case(IN, True, True), ["sr-x (deny list 172.18.0.1/32): 172.18.0.1 is refused"]),
    (case(OUT, True, False), ["sr-x (deny list 192.0.2.0/24): 172.18.0.1 may pass"]),
])
def test_range_judgement(c: RangeCase, fragments: list[str]) -> None:
    problems = range_problems(c, CLIENT)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("c", "fragments"), [
    (case(OUT, False, False, (DENIED,)), []),
    (case(IN, False, True), []),
    (case(OUT, False, False), ["the request from 172.18.0.1 was dropped, but the agent on w counted no \"Denied by LB src range check\" "
                               "drop (drops that rose: none)"]),
    (case(OUT, False, False, ("Service backend not found x1 on w (ingress)",)), ["(drops that rose: Service backend not found x1 on w"]),
    (case(OUT, False, True), ["172.18.0.1 was served, nothing was dropped"]),
    (case(IN, False, True, (DENIED,)), ["172.18.0.1 may pass, yet the agent counted Denied by LB src range check x1"]),
])
def test_drop_reason_judgement(c: RangeCase, fragments: list[str]) -> None:
    problems = drop_reason_problems(c, CLIENT)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("verdict", "fragments"), [
    ("connected", []),
    ("timeout", ["a pod's connection to sr-x's VIP, whose ranges exclude it, got timeout"]),
    ("refused", ["got refused"]),
])
def test_inside_judgement(verdict: str, fragments: list[str]) -> None:
    problems = inside_problems(verdict, "sr-x")
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("frontend", "version", "all_types", "checked"), [
    ("LoadBalancer", "1.18.14", False, True), ("LoadBalancer", "1.20.5", False, True),
    ("ExternalIP", "1.20.5", False, True),  # PR #44747 (SRC_SOURCE_RANGES_TYPES)
    ("ExternalIP", "1.19.8", False, None),  # before it: a backport not found, not judged
    ("ExternalIP", "1.19.8", True, True),  # every type with bpf-lb-source-range-all-types
    ("NodePort", "1.19.8", False, False), ("NodePort", "1.20.5", False, False),
    ("NodePort", "1.18.14", False, True),  # before the flag every type (source-ranges.txtar@062e4cdb; issue #42334)
    ("ExternalIP", "1.18.14", False, True), ("ClusterIP", "1.18.14", False, True), ("ClusterIP", "1.19.8", False, False),
    ("HostPort", "1.20.5", False, False), ("HostPort", "1.20.5", True, True),
    ("NodePort", "1.20.5", True, True), ("NodePort", "", False, False),  # an unknown version: the newest
])
def test_where_a_services_ranges_are_checked(frontend: str, version: str, all_types: bool, checked: bool | None) -> None:
    from pytest_kpr.rules.datapath import source_ranges_applied, source_ranges_checked

    assert source_ranges_checked(frontend, version, all_types) is checked
    assert source_ranges_applied(frontend, version, all_types) is bool(checked)  # the fake: the code before a change where unknown


def test_a_frontend_type_without_a_rule_is_no_rule() -> None:
    from pytest_kpr.rules.datapath import NoRule, source_ranges_checked

    with pytest.raises(NoRule, match="no sourced rule for loadBalancerSourceRanges on a Frobnicator frontend"):
        source_ranges_checked("Frobnicator")


def other(frontend: str, checked: bool | None, served: bool, drops: tuple[str, ...] = ()) -> RangeCase:
    req = OutsideHttp("172.18.0.3:31000" if frontend == "NodePort" else "198.18.22.30:80", "w", 200 if served else None,
                      "http" if served else "timeout", "web" if served else None)
    return RangeCase("sr-x", OUT, False, req, drops, frontend, checked)


@pytest.mark.parametrize(("c", "problems"), [
    (other("NodePort", False, True), []),  # not checked: a source outside the ranges is served
    (other("NodePort", False, False), ["sr-x (NodePort 172.18.0.3:31000, allow list 192.0.2.0/24): the ranges are not checked on a "
                                       "NodePort frontend here, yet 172.18.0.3:31000 through w gave no answer (timeout)"]),
    (other("NodePort", True, False, (DENIED,)), []),  # bpf-lb-source-range-all-types: checked, dropped
    (other("ExternalIP", True, False, (DENIED,)), []),
    (other("ExternalIP", True, True), ["sr-x (ExternalIP 198.18.22.30:80, allow list 192.0.2.0/24): 172.18.0.1 is refused by the "
                                       "ranges, yet 198.18.22.30:80 through w answered HTTP 200: the source-range check did not apply"]),
])
def test_the_ranges_on_a_services_other_frontends(c: RangeCase, problems: list[str]) -> None:
    assert range_problems(c, CLIENT) == problems
    if c.checked and not c.served:
        assert drop_reason_problems(c, CLIENT) == []
    if not c.checked:
        assert drop_reason_problems(c, CLIENT) == [], "an unchecked frontend counts no source-range drop and needs none"
