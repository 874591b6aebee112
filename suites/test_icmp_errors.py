"""ICMP errors about a SNATed NodePort flow: path-MTU discovery through a NodePort. A request from outside to a node's
NodePort whose backend is on another node is source-NATed by that node; when the backend side answers it with an ICMP
"fragmentation needed" error (as a router with a smaller MTU on the way would), the node reverse-translates the error --
its destination and the header inside it -- so that it reaches the client and names the client's own datagram
(pytest_kpr.rules.datapath SRC_ICMP_ERROR_REVNAT, Cilium's bpf/tests/icmp_error_revnat.c).

One backend pod (``ie-backend``) on a node other than the client node runs ``kpr probe frag-needed-responder``, which
answers every datagram on its port with that error (from a raw socket: the pod adds CAP_NET_RAW), behind the UDP NodePort
Service ``ie``. The runner sends one UDP datagram with DF set to the client node's NodePort from a raw socket and reads
the ICMP error that comes back (the outside view's ``udp_icmp``); the responder's log says whether the datagram reached it,
which tells a NodePort that did not forward it from an error that was not carried back. Judged for IPv4 under SNAT (DSR does not source-NAT
the request: recorded, skipped with the reason); for IPv6 (whose error is Packet Too Big, a path not read) nothing is sent
and the test skips, saying so. Evidence: icmp-errors.json.
"""

from __future__ import annotations

import pytest

from pytest_kpr.judge.icmp_errors import IcmpErrorObservation, icmp_error_problems
from pytest_kpr.rules.datapath import icmp_error_judged
from pytest_kpr.suite import ApiError, ClusterFacts, ClusterHandle, Evidence, family_file, holds, L3n4, Lab, no_outside_view, Tweak

pytestmark = [
    pytest.mark.kpr(property="ICMP errors", evidence="icmp-errors.json", plane="per-packet",
                    sources=["SRC_ICMP_ERROR_REVNAT", "SRC_SNAT_ADDRESS", "SRC_HOST_NODEPORT"]),
    pytest.mark.kpr_requires("nodeport"),
]
PORT, MTU = 7000, 1200


def _responder() -> Tweak:
    def tweak(pod: dict) -> None:
        ctr = pod["spec"]["containers"][0]
        ctr["command"] = ["kpr", "probe", "frag-needed-responder", "--port", str(PORT), "--mtu", str(MTU)]
        ctr["ports"] = [{"containerPort": PORT, "name": "frag", "protocol": "UDP"}]
        ctr.pop("readinessProbe", None)
        ctr.setdefault("securityContext", {}).setdefault("capabilities", {}).setdefault("add", []).append("NET_RAW")
    return tweak


def _udp_port(svc: dict) -> None:
    svc["spec"]["ports"] = [{"name": "frag", "port": PORT, "targetPort": PORT, "protocol": "UDP"}]


@pytest.fixture(scope="module")
def ie_backend(lab: Lab) -> str:
    """The responder on another node than the receiving one, behind the UDP NodePort Service ie (created once)."""
    node = lab.remote_node()
    lab.create_web_pod("ie-backend", {"app": "ie"}, node, tweak=_responder())
    lab.create_service("ie", {"app": "ie"}, "NodePort", tweak=_udp_port)
    lab.wait_ready_endpoints("ie", 1)
    return node


def _answered(lab: Lab) -> int | None:
    """How many errors the responder has logged sending (a JSON line each), or None when its log cannot be read."""
    try:
        text = lab.kube.logs(lab.where("Pod", "ie-backend"), "ie-backend")
    except ApiError:  # a log that cannot be read leaves the question open; it does not fail the test
        return None
    return sum(1 for line in text.splitlines() if '"icmp": "3/4"' in line)


@pytest.fixture(scope="module")
def seen(family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_cluster: ClusterHandle, kpr_facts: ClusterFacts, kpr_family: str,
         request: pytest.FixtureRequest) -> IcmpErrorObservation:
    lab = family_lab
    if kpr_family != "IPv4":  # the responder writes IPv4's error; IPv6's (Packet Too Big) path was not read: nothing is sent
        pytest.skip(f"not judged: {icmp_error_judged(kpr_facts.nodeport_mode, kpr_family)}")
    ip = lab.node_ip(lab.client_node)
    outside = kpr_cluster.outside
    if outside is None or not outside.reaches(ip):
        no_outside_view(f"the test runner has no specific route to {ip}; the error has to come back to a client outside")
    if not outside.can_send_raw():
        no_outside_view("the runner lacks CAP_NET_RAW, needed to send the datagram and read the ICMP error (kpr with-net-raw)")
    node = request.getfixturevalue("ie_backend")  # only with an outside view: no pods for a skip
    lab.wait_programmed(lab.client_node, L3n4(lab.cluster_ip("ie"), PORT, "UDP"), f"the agent on {lab.client_node} to program ie")
    port = lab.allocated_node_port("ie")
    before = _answered(lab)
    r = outside.udp_icmp(ip, port, 3.0).to_json()
    after = _answered(lab)
    icmp = (r["icmp_type"], r["icmp_code"]) if "icmp_type" in r else None
    obs = IcmpErrorObservation(kpr_family, f"{ip}:{port}", r.get("source") or "", r["verdict"], icmp, r.get("inner_src"), r.get("inner_dst"),
                               r.get("mtu"), f"ie-backend on {node}", icmp_error_judged(kpr_facts.nodeport_mode, kpr_family),
                               None if before is None or after is None else after - before)
    evidence.write(family_file("icmp-errors.json", kpr_family), {**obs.to_json(), "probe": r,
                                                                 "problems": None if obs.unjudged else icmp_error_problems(obs)})
    evidence.figure(kpr_property, f"{obs.verdict} {obs.icmp or ''} carrying {obs.inner_src} -> {obs.inner_dst}", kpr_family)
    return obs


@pytest.mark.kpr_requires("cross-node-forward")  # skipped where a node cannot forward an outside request (SRC_XDP_KIND)
def test_a_fragmentation_needed_error_reaches_the_client_reverse_translated(seen: IcmpErrorObservation) -> None:
    if seen.unjudged:
        pytest.skip(f"recorded, not judged: {seen.unjudged}")
    holds(icmp_error_problems(seen), "ICMP errors (fragmentation needed through a SNATed NodePort)")
