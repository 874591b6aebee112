"""No backend: a service without endpoints fails fast, as the agent's ServiceNoBackendResponse says.

With ``reject`` curl exits 7 at once (not 28 after its limit), connect() is refused or unreachable at
once, and a raw SYN (which never meets the socket LB: it is a packet, not a connect()) gets an ICMP
destination-unreachable; Cilium versions differ between code 3 (port) and code 1 (host), both are
accepted and the code is recorded. With ``drop`` the expectation flips to timeouts.
Evidence: ghost.json (cluster_ip, backends, curl_exit, seconds, no_backend_response, raw probe verdict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_kpr.cluster.facts import ClusterFacts
from pytest_kpr.evidence import Evidence
from pytest_kpr.lab import Lab
from pytest_kpr.parse import L3n4

pytestmark = pytest.mark.kpr
PROPERTY = "no backend"

#: curl's limit, and the bound for "at once"
CURL_MAX_TIME = 5.0
FAST = 1.0


@dataclass(frozen=True)
class Expectation:
    curl_exit: int
    connect: frozenset[str]
    syn: frozenset[str]
    fast: bool


EXPECTED = {
    "reject": Expectation(7, frozenset({"refused", "unreachable"}), frozenset({"icmp-unreachable"}), fast=True),
    "drop": Expectation(28, frozenset({"timeout"}), frozenset({"timeout"}), fast=False),
}


@pytest.fixture(scope="module")
def seen(ghost: L3n4, lab: Lab, evidence: Evidence, kpr_facts: ClusterFacts) -> dict[str, Any]:
    target = f"{ghost.ip}:{ghost.port}"
    svc = lab.service_entry(lab.agent(lab.client_node), ghost)
    curl = lab.curl(f"http://{target}/", CURL_MAX_TIME)
    connect = lab.probe("connect", target, 3.0)
    syn = lab.probe("syn", target, 3.0)
    data = {
        "cluster_ip": ghost.ip,
        "backends": len(svc.backends) if svc else None,
        "curl_exit": curl.exit_code,
        "seconds": curl.seconds,
        "no_backend_response": kpr_facts.no_backend_response,
        "connect": {"verdict": connect.verdict, "errno": connect.errno_name, "elapsed_ms": connect.elapsed_ms},
        "raw_syn": {"verdict": syn.verdict, "icmp_type": syn.icmp_type, "icmp_code": syn.icmp_code, "elapsed_ms": syn.elapsed_ms},
    }
    evidence.write("ghost.json", data)
    code = f" ICMP 3/{syn.icmp_code}" if syn.icmp_code is not None else ""
    evidence.figure(PROPERTY, f"curl exit {curl.exit_code} in {curl.seconds:.2f}s, raw SYN {syn.verdict}{code} ({kpr_facts.no_backend_response})")
    return data


def expectation(seen: dict[str, Any]) -> Expectation:
    return EXPECTED[seen["no_backend_response"]]


def test_agent_lists_ghost_without_backends(seen: dict[str, Any]) -> None:
    assert seen["backends"] == 0, f"no backend: the agent lists {seen['backends']} backends for ghost {seen['cluster_ip']}:80"


def test_curl_fails_as_the_agent_says(seen: dict[str, Any]) -> None:
    want = expectation(seen)
    where = f"ServiceNoBackendResponse={seen['no_backend_response']}"
    assert seen["curl_exit"] == want.curl_exit, (
        f"no backend: the agent says {where}, but curl to ghost exited {seen['curl_exit']} after {seen['seconds']:.2f}s "
        f"(expected {want.curl_exit}{' at once' if want.fast else ' at its limit'}; 28 means the traffic was silently dropped)"
    )
    if want.fast:
        assert seen["seconds"] < FAST, f"no backend: curl failed correctly but took {seen['seconds']:.2f}s (bound {FAST}s)"


def test_connect_fails_as_the_agent_says(seen: dict[str, Any]) -> None:
    want = expectation(seen)
    c = seen["connect"]
    assert c["verdict"] in want.connect, f"no backend: connect() to ghost gave {c} with ServiceNoBackendResponse={seen['no_backend_response']}"
    if want.fast:
        assert c["elapsed_ms"] < FAST * 1000, f"no backend: connect() took {c['elapsed_ms']:.0f} ms"


def test_raw_syn_gets_the_configured_answer(seen: dict[str, Any]) -> None:
    want = expectation(seen)
    s = seen["raw_syn"]
    assert s["verdict"] in want.syn, f"no backend: a raw SYN to ghost got {s} with ServiceNoBackendResponse={seen['no_backend_response']}"
    if s["verdict"] == "icmp-unreachable":
        assert (s["icmp_type"], s["icmp_code"]) in {(3, 1), (3, 3)}, f"no backend: ICMP type/code {s['icmp_type']}/{s['icmp_code']} is neither host (1) nor port (3) unreachable"
