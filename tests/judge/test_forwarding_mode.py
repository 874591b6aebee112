"""The per-Service forwarding-mode judgement (pytest_kpr.judge.forwarding_mode) and its rule
(rules.datapath.service_forwarding_mode), branch by branch: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.forwarding_mode import AnnotatedRequest, forwarding_mode_problems
from pytest_kpr.rules.datapath import service_forwarding_mode


@pytest.mark.parametrize(("global_mode", "enabled", "value", "mode"), [
    ("SNAT", True, "dsr", "DSR"), ("DSR", True, "snat", "SNAT"), ("SNAT", True, " DSR ", "DSR"),
    ("SNAT", False, "dsr", "SNAT"),  # bpf-lb-mode-annotation off: the annotation is ignored
    ("DSR", True, None, "DSR"), ("Hybrid", True, "", "Hybrid"),  # no annotation: the agent's mode
    ("SNAT", True, "hybrid", "SNAT"),  # a value the annotation does not take
])
def test_the_services_own_mode(global_mode: str, enabled: bool, value: str | None, mode: str) -> None:
    assert service_forwarding_mode(global_mode, enabled, value) == mode


def req(seen: str | None, expected: str, code: int | None = 200) -> AnnotatedRequest:
    return AnnotatedRequest("fm-x", "snat", "SNAT", "172.18.0.3", 31000, "10.244.1.20", "172.18.0.1", code, seen, expected, "the rule")


@pytest.mark.parametrize(("r", "problems"), [
    (req("172.18.0.3", "node"), []),
    (req("172.18.0.1", "client"), []),
    (req("172.18.0.1", "node"), ["fm-x (forwarding-mode snat): the backend saw 172.18.0.1 (the client's address), expected 172.18.0.3 "
                                 "(the receiving node's InternalIP: the rule)"]),
    (req(None, "node"), ["fm-x (forwarding-mode snat): no backend logged the request, so what it saw is unknown"]),
    (req(None, "node", None), ["fm-x (snat): 172.18.0.3:31000 from outside answered nothing, so what the backend sees is unknown"]),
])
def test_the_forwarding_mode_judgement(r: AnnotatedRequest, problems: list[str]) -> None:
    assert forwarding_mode_problems(r) == problems
