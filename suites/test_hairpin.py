"""Hairpin: a backend reaches its own Service. A pod that is the only backend of ``hairpin`` connects to the Service's
ClusterIP from inside itself; the connection must be served -- by the pod itself -- and the pod's server sees the
source address its plane gives: with socket LB in pods' namespaces the connect() is rewritten to the pod's own address
and it sees itself (pytest_kpr.rules.datapath SRC_HAIRPIN_SOCKET); on the per-packet plane (Hostns-only coverage)
bpf_lxc source-NATs the packet, whose source and backend are the same address, to the service loopback address,
169.254.42.1 or fe80::1 by default (SRC_HAIRPIN_LOOPBACK; cilium-cli's pod-to-itself-via-service checks the same).
Without that NAT the kernel would drop the packet as a martian (source and destination both its own).

Per family of --kpr-ip-families (the ClusterIP and the pod's address of that family). Per packet over IPv6 the check
needs Cilium 1.19 (SRC_HAIRPIN_LOOPBACK6: the IPv6 service loopback); before, it is recorded and skipped with the reason.
Evidence: hairpin.json.
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import ClusterFacts, Evidence, family_file, holds, hp, Lab, token
from pytest_kpr.judge.hairpin import hairpin_reach_problems, hairpin_source_problems
from pytest_kpr.judge.hairpin import HairpinObservation
from pytest_kpr.rules.datapath import LOOPBACK_FILES, coverage_name, hairpin_source, hairpin_unjudged, plane_for

pytestmark = [
    pytest.mark.kpr(property="hairpin", evidence="hairpin.json", plane=["socket", "per-packet"],
                    sources=["SRC_HAIRPIN_SOCKET", "SRC_HAIRPIN_LOOPBACK", "SRC_HAIRPIN_LOOPBACK6"]),
]
TIMEOUT, WEB_PORT = 2.0, 80


@pytest.fixture(scope="module")
def hairpin_pod(lab: Lab) -> str:
    """The web pod, the only backend of ``hairpin``, created once for every family."""
    lab.create_web_pod("hairpin", {"app": "hairpin"}, lab.client_node)
    lab.create_service("hairpin", {"app": "hairpin"})
    lab.wait_ready_endpoints("hairpin", 1)
    return "hairpin"


@pytest.fixture(scope="module")
def hairpin(hairpin_pod: str, family_lab: Lab, kpr_facts: ClusterFacts, evidence: Evidence, kpr_property: str,
            kpr_family: str) -> HairpinObservation:
    lab = family_lab
    lab.wait_programmed_on([lab.client_node], ["hairpin"])
    coverage = kpr_facts.socket_lb_coverage if kpr_facts.socket_lb_coverage in ("Full", "Hostns-only") else coverage_name(False)
    plane = plane_for("pod", "connect", "ClusterIP", coverage).plane
    own = lab.pod_ip(lab.kube.get("Pod", hairpin_pod, lab.ns) or {})
    opt = lab.agent(lab.client_node).exec(["cat", LOOPBACK_FILES[kpr_family]])
    rule = hairpin_source(plane, own, kpr_family, opt.stdout.strip() if opt.ok else None)
    target = hp(lab.cluster_ip("hairpin"), WEB_PORT)
    connect = lab.probe("connect", target, TIMEOUT, pod=hairpin_pod)
    socket_peer = lab.socket_peers(target, 1, TIMEOUT, pod=hairpin_pod)[0]  # recorded: the kernel socket's peer
    mark = token()
    http = lab.curl(f"http://{target}/?kpr={mark}", TIMEOUT, pod=hairpin_pod)
    served = lab.who_served([hairpin_pod], mark)
    h = HairpinObservation(kpr_family, target, hairpin_pod, own, str(plane), coverage, str(connect.verdict), socket_peer, http.http_code,
                           served[0] if served else None, served[1] if served else None, rule.sees, rule.why, rule.source,
                           hairpin_unjudged(plane, kpr_family, kpr_facts.cilium_version))
    evidence.write(family_file("hairpin.json", kpr_family), {
        "family": h.family, "service": h.service, "pod": h.pod, "pod_ip": h.pod_ip, "plane": h.plane, "coverage": h.coverage,
        "connect": {"verdict": h.verdict, "socket_peer": h.socket_peer}, "http_code": h.http_code, "served_by": h.served_by,
        "seen": h.seen, "expected_source": h.expected_source, "rule": h.why, "not_judged": h.unjudged or None})
    evidence.figure(kpr_property, f"{hairpin_pod} to its own {target}: {h.verdict}, HTTP {h.http_code}, it saw {h.seen} ({plane})",
                    kpr_family)
    return h


def _judged(h: HairpinObservation) -> HairpinObservation:
    if h.unjudged:
        pytest.skip(f"recorded, not judged: {h.unjudged} (hairpin.json)")
    return h


def test_a_backend_reaches_its_own_service(hairpin: HairpinObservation) -> None:
    """The connection from the Service's only backend to the Service is made and served by that backend."""
    hairpin = _judged(hairpin)
    holds(hairpin_reach_problems(hairpin), "hairpin")


def test_the_backend_sees_the_source_its_plane_gives(hairpin: HairpinObservation) -> None:
    """Socket plane: its own address; per packet: the service loopback address (SRC_HAIRPIN_SOCKET, SRC_HAIRPIN_LOOPBACK)."""
    hairpin = _judged(hairpin)
    holds(hairpin_source_problems(hairpin), "hairpin")
