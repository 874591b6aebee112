"""The hostPort judgement (pytest_kpr.judge.hostport), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

from pytest_kpr.judge.hostport import hostport_admission_problems, hostport_frontend_problems
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
