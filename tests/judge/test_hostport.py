"""The hostPort judgement (pytest_kpr.judge.hostport), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.hostport import HostPortNode, hostport_admission_problems, hostport_frontend_problems
from pytest_kpr.parse import L3n4


def test_hostport_frontend_and_admission_judgements() -> None:
    from types import SimpleNamespace as NS

    from pytest_kpr.parse import L3n4

    hp = NS(type="HostPort", frontend=L3n4("0.0.0.0", 18780, "TCP"))
    np_ = NS(type="NodePort", frontend=L3n4("0.0.0.0", 18780, "TCP"))
    hp6 = NS(type="HostPort", frontend=L3n4("::", 18780, "TCP"))
    assert hostport_frontend_problems([hp], 18780) == []
    assert hostport_frontend_problems([np_], 18780) == ["the agent lists no IPv4 HostPort frontend on port 18780 (only ['NodePort 0.0.0.0:18780/TCP'])"]
    assert hostport_frontend_problems([hp], 18781) == ["the agent lists no IPv4 HostPort frontend on port 18781"]
    # one per family the pod has an address of (SRC_HOSTPORT_FAMILIES): the IPv4 one does not stand for IPv6
    assert hostport_frontend_problems([hp, hp6], 18780, "IPv6") == []
    assert hostport_frontend_problems([hp], 18780, "IPv6") == ["the agent lists no IPv6 HostPort frontend on port 18780 (only ['HostPort 0.0.0.0:18780/TCP'])"]
    assert hostport_frontend_problems([hp6], 18780, "IPv4") == ["the agent lists no IPv4 HostPort frontend on port 18780 (only ['HostPort [::]:18780/TCP'])"]
    assert hostport_admission_problems({"phase": "Pending", "node": None}, "w") == []
    assert hostport_admission_problems({"phase": "Running", "node": "other"}, "w") == []
    assert hostport_admission_problems({"phase": "Failed", "node": "w"}, "w") == []
    assert "admitted on w (Running)" in hostport_admission_problems({"phase": "Running", "node": "w"}, "w")[0]


def _node(listeners: tuple = (), rules: dict | None = None) -> HostPortNode:
    from .tables import views

    return HostPortNode("w1", 18780, views()["n1"] if rules is None else rules, listeners, {"phase": "Pending", "node": None})


@pytest.mark.parametrize(("connect", "code", "exit_", "want"), [
    ("connected", 200, 0, []),
    ("refused", 0, 7, ["172.18.0.3:18780 from the node: connect refused, HTTP 0 (curl exit 7)"]),
    ("connected", 503, 0, ["172.18.0.3:18780 from the node: connect connected, HTTP 503 (curl exit 0)"]),
    ("timeout", 200, 0, ["172.18.0.3:18780 from the node: connect timeout, HTTP 200 (curl exit 0)"]),
])
def test_the_host_port_reach_judgement(connect: str, code: int, exit_: int, want: list[str]) -> None:
    from pytest_kpr.judge.hostport import HostPortReach, hostport_reach_problems

    assert hostport_reach_problems(HostPortReach(_node(), "IPv4", "172.18.0.3", connect, code, exit_, ())) == want


def test_the_host_port_rule_judgement_and_the_evidence_form() -> None:
    from pytest_kpr.judge.hostport import HostPortReach, hostport_rule_problems
    from pytest_kpr.parse import parse_ss

    from .tables import KIND_NAT, _services, views

    assert hostport_rule_problems(_node()) == []
    named = KIND_NAT.replace("COMMIT", "-A CNI-HOSTPORT-DNAT -p tcp --dport 18780 -j DNAT --to-destination 10.244.1.5:8080\nCOMMIT")
    (p,) = hostport_rule_problems(_node(rules=views(named)["n1"]))
    assert p.startswith("w1 (iptables-nft): ") and "lines name the hostPort 18780" in p
    listeners = tuple(parse_ss("LISTEN 0      4096   0.0.0.0:18780 0.0.0.0:*\n"))
    r = HostPortReach(_node(listeners), "IPv4", "172.18.0.3", "connected", 200, 0, tuple(_services(("0.0.0.0", 18780, "HostPort"))))
    data = r.to_json()
    assert (data["node"], data["host_port"], data["listen_sockets"], data["second_pod"]) == ("w1", 18780, 1, {"phase": "Pending", "node": None})
    assert data["rule_lines"]["iptables-nft"] == 0 and [f["type"] for f in data["frontends"]] == ["HostPort"]
    assert (data["family"], data["node_ip"], data["connect"], data["http_code"], data["curl_exit"]) == ("IPv4", "172.18.0.3", "connected", 200, 0)


def test_the_hostport_evidence_in_full() -> None:
    from pytest_kpr.judge.hostport import HostPortReach
    from pytest_kpr.parse import parse_ss

    from .tables import KIND_NAT, _services, views

    named = KIND_NAT.replace("COMMIT", "-A CNI-HOSTPORT-DNAT -p tcp --dport 18780 -j DNAT --to-destination 10.244.1.5:8080\nCOMMIT", 1)
    socks = tuple(parse_ss("LISTEN 0      4096   0.0.0.0:18780 0.0.0.0:*\nLISTEN 0      4096   0.0.0.0:10250 0.0.0.0:*\n"))
    node = HostPortNode("w1", 18780, views(named, legacy=None)["n1"], socks, {"phase": "Pending"})
    fes = tuple(_services(("0.0.0.0", 18780, "HostPort"), ("172.18.0.3", 18780, "HostPort"), ("0.0.0.0", 30780, "NodePort")))
    data = HostPortReach(node, "IPv4", "172.18.0.3", "connected", 200, 0, fes).to_json()
    assert data == {"node": "w1", "host_port": 18780, "listen_sockets": 1,
                    "rule_lines": {"iptables-nft": 1, "iptables-legacy": "unreadable", "ip6tables-nft": 0, "ip6tables-legacy": 0, "nft": 0},
                    "second_pod": {"phase": "Pending"}, "family": "IPv4", "node_ip": "172.18.0.3", "connect": "connected", "http_code": 200,
                    "curl_exit": 0, "frontends": [{"frontend": str(s.frontend), "type": "HostPort", "id": s.id} for s in fes[:2]]}
    assert [f["frontend"] for f in data["frontends"]][0].startswith("0.0.0.0:18780")
