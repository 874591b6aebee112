"""The north-south judgement (pytest_kpr.judge.north_south), branch by branch, on hand-made requests: no root, no
pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.north_south import etp_local_problems, health_problems, served_problems
from pytest_kpr.judge.north_south import OutsideHttp


def ok(via: str, by: str = "web-a", seen: str = "172.18.0.1") -> OutsideHttp:
    return OutsideHttp("198.18.21.10:80", via, 200, "http", by, seen)


def lost(via: str, verdict: str = "timeout") -> OutsideHttp:
    return OutsideHttp("198.18.21.10:80", via, None, verdict)


@pytest.mark.parametrize(("requests", "fragments"), [
    ([ok("a"), ok("b", "web-b")], []),
    ([ok("a"), lost("b")], ["198.18.21.10:80 through b: no answer (timeout)"]),
    ([ok("a"), lost("b", "refused")], ["through b: no answer (refused)"]),
    ([ok("a", "someone-else")], ["through a: answered, but no backend of the Service logged the request (served by someone-else)"]),
    ([ok("a", None)], ["served by nobody known"]),  # type: ignore[arg-type]
    ([OutsideHttp("198.18.21.10:80", "a", 503, "http")], ["through a: HTTP 503"]),
    ([], ["no request was made to the VIP"]),  # nothing observed is a problem, never a pass
])
def test_served_judgement(requests: list[OutsideHttp], fragments: list[str]) -> None:
    problems = served_problems(requests, ["web-a", "web-b"], "VIP")
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


@pytest.mark.parametrize(("requests", "fragments"), [
    ([ok("b", "local"), lost("a"), lost("c", "refused")], []),
    ([ok("b", "local"), ok("a", "local")], ["through a, which has no local backend, 198.18.21.10:80 was served by local: the request was forwarded"]),
    ([lost("b"), lost("a")], ["through b, which has the backend, 198.18.21.10:80: no answer (timeout), served by nobody known (expected local)"]),
    ([ok("b", "other"), lost("a")], ["served by other (expected local)"]),
    ([ok("b", "local", "172.18.0.4"), lost("a")], ["through b: the backend saw 172.18.0.4, not the client's own address 172.18.0.1"]),
    ([lost("a")], ["no request went through the node with the backend (b)"]),
])
def test_etp_local_judgement(requests: list[OutsideHttp], fragments: list[str]) -> None:
    problems = etp_local_problems(requests, "b", "local", "172.18.0.1")
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems


def code(via: str, c: int | None) -> OutsideHttp:
    return OutsideHttp("198.18.21.11:31000", via, c, "http" if c else "timeout")


@pytest.mark.parametrize(("health", "fragments"), [
    ([code("a", 503), code("b", 200)], []),
    ([code("a", 200), code("b", 200)], ["198.18.21.11:31000 through a (0 local endpoints): HTTP 200, expected HTTP 503"]),
    ([code("a", 503), code("b", 503)], ["through b (1 local endpoints): HTTP 503, expected HTTP 200"]),
    ([code("a", None), code("b", 200)], ["through a (0 local endpoints): no answer (timeout), expected HTTP 503"]),
    ([], ["no request was made to the VIP's health frontend (port 31000)"]),
])
def test_health_judgement(health: list[OutsideHttp], fragments: list[str]) -> None:
    problems = health_problems(health, {"a": 0, "b": 1}, 31000)
    assert len(problems) == len(fragments) and all(f in p for f, p in zip(fragments, problems, strict=True)), problems
