"""The iptables judgement (pytest_kpr.judge.iptables), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.iptables import kube_proxy_rule_problems, rule_line_problems, rule_view_problems

from .tables import EMPTY_NFT, KUBE_PROXY, NODEPORTS, SEP_ONLY, views


def test_kubelet_chains_are_not_kube_proxy_rules() -> None:
    assert kube_proxy_rule_problems(views()) == []


@pytest.mark.parametrize(("dump", "marks"), [(KUBE_PROXY, ["'KUBE-SERVICES': 2", "'KUBE-SVC': 2", "'KUBE-SEP': 2"]), (SEP_ONLY, ["{'KUBE-SEP': 1}"]),
                                             (NODEPORTS, ["'KUBE-NODEPORTS': 2", "'KUBE-EXT': 1"])])
def test_kube_proxy_chains_are_found(dump: str, marks: list[str]) -> None:
    (p,) = kube_proxy_rule_problems(views(dump))
    assert p.startswith("n1 (iptables-nft): kube-proxy chains {") and all(m in p for m in marks), p


def test_kube_proxy_in_legacy_and_in_nftables_mode_is_found(tmp_path: object) -> None:
    from pathlib import Path

    nft = (Path(__file__).parents[1] / "data" / "local" / "nft-kube-proxy-nftables-mode.txt").read_text()
    problems = kube_proxy_rule_problems(views(legacy=KUBE_PROXY, nft=nft))
    assert len(problems) == 2 and problems[0].startswith("n1 (iptables-legacy)")
    assert problems[1] == "n1 (nft): kube-proxy's nftables table ['ip kube-proxy'] with 7 chains"


def test_rule_views_must_all_be_read_and_show_something() -> None:
    assert rule_view_problems(views()) == []
    assert rule_view_problems(views(legacy=None)) == ["n1: the iptables-legacy view could not be read (tool missing or failed); its rules were not checked"]
    assert rule_view_problems(views(nat="", legacy="", nft="")) == ["n1: no view shows any table: the emptiness checks would be blind"]
    assert len(rule_view_problems(views(legacy=None, nft=None))) == 1


@pytest.mark.parametrize(("token", "n"), [("10.96.0.11", 1), ("10.96.0.1", 0), ("30780", 0), ("8080", 1)])
def test_rule_lines_match_whole_tokens(token: str, n: int) -> None:
    problems = rule_line_problems(views(KUBE_PROXY), token, "x")
    assert len(problems) == (1 if n else 0)
    if n:
        assert problems[0].startswith(f"n1 (iptables-nft): {n} lines name x {token}")


def test_rule_lines_are_read_in_every_view_including_nft() -> None:
    nft = EMPTY_NFT.replace("policy accept;\n", "policy accept;\n\t\tip daddr 10.96.0.11 tcp dport 80 counter packets 0 bytes 0 accept\n")
    assert [p.split(":")[0] for p in rule_line_problems(views(nft=nft), "10.96.0.11", "x")] == ["n1 (nft)"]


def test_a_view_that_was_never_read_counts_as_unreadable() -> None:
    """A view missing from the dumps altogether (not just None) is as blind as one whose tool failed."""
    dropped = {"n1": {"iptables-nft": views()["n1"]["iptables-nft"], "nft": views()["n1"]["nft"]}}
    assert rule_view_problems(dropped) == [
        "n1: the iptables-legacy, ip6tables-nft, ip6tables-legacy view could not be read (tool missing or failed); its rules were not checked"]


def test_kube_proxy_chains_in_ip6tables_alone_are_found() -> None:
    """An IPv6 Service's kube-proxy rules live in ip6tables: an IPv4-only reading would miss them."""
    problems = kube_proxy_rule_problems(views(v6=KUBE_PROXY))
    assert [p.split(":")[0] for p in problems] == ["n1 (ip6tables-legacy)", "n1 (ip6tables-nft)"], problems
    assert rule_view_problems(views(v6=None)) == [
        "n1: the ip6tables-nft, ip6tables-legacy view could not be read (tool missing or failed); its rules were not checked"]
