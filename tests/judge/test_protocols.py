"""The protocols-on-a-port judgements (pytest_kpr.judge.protocols), branch by branch: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.protocols import ProtocolsObservation, both_protocols_problems, wildcard_drop_problems
from pytest_kpr.judge.north_south import OutsideHttp

NO_SVC = "Service backend not found x1 on w (ingress, nodeport.h:1)"


def obs(tcp: str = "connected", udp: str = "answered", unknown: OutsideHttp | None = None, drops: tuple[str, ...] = ()) -> ProtocolsObservation:
    return ProtocolsObservation("IPv4", "10.96.0.9:7000", tcp, udp, "10.96.0.9:7000", unknown, drops, True)


SILENT = OutsideHttp("198.18.23.10:7001", "w", None, "timeout")


@pytest.mark.parametrize(("o", "problems"), [
    (obs(), []),
    (obs(udp="timeout"), ["UDP to 10.96.0.9:7000 from a pod: timeout, though the Service has 7000/UDP beside its TCP port"]),
    (obs(tcp="refused"), ["TCP to 10.96.0.9:7000 from a pod: refused, though the Service has 7000/TCP"]),
    (obs(tcp="timeout", udp="unreachable"), ["TCP to", "UDP to"]),
])
def test_both_protocols_judgement(o: ProtocolsObservation, problems: list[str]) -> None:
    got = both_protocols_problems(o)
    assert len(got) == len(problems) and all(w in g for w, g in zip(problems, got, strict=True)), got


@pytest.mark.parametrize(("o", "problems"), [
    (obs(unknown=SILENT, drops=(NO_SVC,)), []),
    (obs(unknown=SILENT), ["198.18.23.10:7001, a port the Service does not have, got no answer (timeout) through w, but the agent there "
                           "counted no \"Service backend not found\" drop (drops that rose: none): the VIP's wildcard entry did not drop it"]),
    (obs(unknown=SILENT, drops=("Policy denied x1 on w (ingress, bpf_host.c:1)",)), ["drops that rose: Policy denied x1"]),
    (obs(unknown=OutsideHttp("198.18.23.10:7001", "w", None, "refused")), ["got no answer (refused) through w, but the agent"]),
    (obs(unknown=OutsideHttp("198.18.23.10:7001", "w", 200, "http")), ["198.18.23.10:7001, a port the Service does not have, answered "
                                                                       "HTTP 200 through w"]),
    (obs(), ["no request was sent to the VIP's unknown port"]),
])
def test_wildcard_drop_judgement(o: ProtocolsObservation, problems: list[str]) -> None:
    got = wildcard_drop_problems(o)
    assert len(got) == len(problems) and all(w in g for w, g in zip(problems, got, strict=True)), got
