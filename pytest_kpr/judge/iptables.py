"""No kube-proxy rules: kube-proxy's chains and table are absent from every rule view of every node.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from ..parse import RuleDump


#: kube-proxy's own chains in iptables mode (kubernetes pkg/proxy/iptables/proxier.go: KUBE-SERVICES,
#: KUBE-NODEPORTS, KUBE-EXTERNAL-SERVICES, KUBE-PROXY-CANARY, KUBE-PROXY-FIREWALL, and the per-service
#: KUBE-SVC-/KUBE-SEP-/KUBE-EXT-/KUBE-SVL-/KUBE-FW- chains). kubelet's KUBE-FIREWALL and
#: KUBE-KUBELET-CANARY are not kube-proxy's and do not count.
KUBE_PROXY_MARKS = ("KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-EXTERNAL-SERVICES", "KUBE-PROXY-CANARY", "KUBE-PROXY-FIREWALL",
                    "KUBE-SVC-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-SVL-", "KUBE-FW-")
#: kube-proxy's table in nftables mode (kubernetes pkg/proxy/nftables/proxier.go kubeProxyTable)
KUBE_PROXY_NFT_TABLE = "kube-proxy"
#: the views a node's rules are read in; each can hide the others' rules
#: (kube-proxy programs an IPv6 Service into ip6tables; iptables-nft's IPv6 tables are nft's ``ip6`` family, which
#: ``nft list ruleset`` shows too)
RULE_VIEWS = ("iptables-nft", "iptables-legacy", "ip6tables-nft", "ip6tables-legacy", "nft")


def rule_view_problems(dumps: "Mapping[str, Mapping[str, RuleDump | None]]") -> list[str]:
    """Control for the emptiness checks: every view must have been read on every node (a view whose
    tool is missing proves nothing), and some view must show tables at all."""
    p: list[str] = []
    for node, views in sorted(dumps.items()):
        missing = [v for v in RULE_VIEWS if views.get(v) is None]
        if missing:
            p.append(f"{node}: the {', '.join(missing)} view could not be read (tool missing or failed); its rules were not checked")
        if not any(d is not None and d.tables for d in views.values()):
            p.append(f"{node}: no view shows any table: the emptiness checks would be blind")
    return p


def kube_proxy_rule_problems(dumps: "Mapping[str, Mapping[str, RuleDump | None]]") -> list[str]:
    p: list[str] = []
    for node, views in sorted(dumps.items()):
        for view, d in sorted(views.items()):
            if d is None:
                continue
            marks = {m.rstrip("-"): n for m in KUBE_PROXY_MARKS if (n := d.count(m))}
            tables = [t for t in d.tables if t.split()[-1] == KUBE_PROXY_NFT_TABLE]
            if marks:
                p.append(f"{node} ({view}): kube-proxy chains {marks}")
            if tables:
                p.append(f"{node} ({view}): kube-proxy's nftables table {tables} with {sum(1 for c in d.chains if c.split('/')[0] in tables)} chains")
    return p


def rule_line_problems(dumps: "Mapping[str, Mapping[str, RuleDump | None]]", token: str, what: str) -> list[str]:
    """Lines naming ``token`` (an IP or a port, as a whole token) in any view of any node."""
    p: list[str] = []
    for node, views in sorted(dumps.items()):
        for view, d in sorted(views.items()):
            if d is not None and (n := d.count_token(token)):
                sample = [line for line in d.lines if token in line][:2]
                p.append(f"{node} ({view}): {n} lines name {what} {token}, e.g. {sample}")
    return p


def port_rule_problems(node: str, views: "Mapping[str, RuleDump | None]", port: int, what: str) -> list[str]:
    """One node's rule views: every one read, and none naming ``port`` (``what``: how the message names it)."""
    dumps = {node: views}
    return rule_view_problems(dumps) + rule_line_problems(dumps, str(port), what)


def port_rule_lines(views: "Mapping[str, RuleDump | None]", port: int) -> dict[str, int | str]:
    """The evidence's per-view count of lines naming ``port`` (``unreadable`` for a view whose tool is missing)."""
    return {view: d.count_token(str(port)) if d is not None else "unreadable" for view, d in views.items()}
