"""Several protocols on one port, and what a VIP does with the ones it does not serve. A Service with 7000/TCP and 7000/UDP
(``mp-dual``, a LoadBalancer over two echo pods that serve both) gives a pod a TCP connection and a UDP reply on the same
ClusterIP and port: the protocol is part of the frontend (pytest_kpr.rules.datapath SRC_MULTI_PROTOCOL). From 1.19 the
agent also writes a wildcard entry for the VIP (port 0, protocol ANY: SRC_WILDCARD), so a request from outside to a port
the Service does not have is dropped by the receiving node and counted as ``Service backend not found``
(SRC_WILDCARD_DROP), instead of being routed back out. Before 1.19, or where the rule gives the VIP no wildcard entry, that
request is recorded and not judged.

The VIP comes from the suite's own LB-IPAM pool (scenarios.vips); the runner reaches it through the client node by a route
through it (SRC_VIA_NODE). Per family of --kpr-ip-families (evidence ``protocols-ipv6.json``).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from pytest_kpr.suite import ClusterHandle, Evidence, family_file, holds, hp, Lab, no_outside_view, Settings
from pytest_kpr.judge.protocols import ProtocolsObservation, both_protocols_problems, wildcard_drop_problems
from pytest_kpr.rules.datapath import DEFAULT_LB_IPAM_FILE, WILDCARD_ENTRIES_FILE, wildcard_entry
from pytest_kpr.scenarios.vips import Vips, drops_during, request, suite_blocks

pytestmark = [
    pytest.mark.kpr(property="protocols on a port", evidence="protocols.json", plane=["socket", "per-packet"],
                    sources=["SRC_MULTI_PROTOCOL", "SRC_WILDCARD", "SRC_WILDCARD_DROP", "SRC_VIA_NODE"]),
    pytest.mark.kpr_requires("socket-lb-pods", "nodeport"),
]
#: this suite's addresses: the third of --kpr-outside-vip-base's blocks (scenarios.vips.suite_blocks)
BLOCK_INDEX = 2
PORT, UNKNOWN_PORT, TIMEOUT = 7000, 7001, 3.0


def _echo_pods(lab: Lab) -> dict[str, Any]:
    containers = [{"name": proto.lower(), "image": lab.image, "imagePullPolicy": "IfNotPresent",
                   "command": lab.echo_server_command(PORT, udp=proto == "UDP")} for proto in ("TCP", "UDP")]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mp-echo", "namespace": lab.ns},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "mp-echo"}},
                     "template": {"metadata": {"labels": {"app": "mp-echo"}}, "spec": {"containers": containers}}}}


def _both_ports(svc: dict[str, Any]) -> None:
    svc["spec"]["ports"] = [{"name": "tcp", "port": PORT, "targetPort": PORT, "protocol": "TCP"},
                            {"name": "udp", "port": PORT, "targetPort": PORT, "protocol": "UDP"}]


@pytest.fixture(scope="module")
def mp_workloads(lab: Lab, probe: Lab, kpr_settings: Settings) -> Iterator[Vips]:
    """The pool, the echo pods and mp-dual, created once for every family."""
    vips = Vips(lab, lab.run_labels, lab.track_cluster_object,
                suite_blocks(kpr_settings.outside_vip_base, BLOCK_INDEX),
                f"kpr-mp-{lab.run_id}")
    vips.create_pool()
    lab.create(_echo_pods(lab))
    lab.create_service("mp-dual", {"app": "mp-echo"}, "LoadBalancer", tweak=_both_ports)
    lab.wait_ready_endpoints("mp-dual", 2)
    yield vips


def _udp(lab: Lab, target: str) -> dict[str, Any]:
    r = lab.exec("probe", "kpr", "probe", "udp", target, "--json", "--timeout", f"{TIMEOUT:g}", timeout=TIMEOUT + lab.t.EXEC)
    return dict(json.loads(r.check().stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def seen(mp_workloads: Vips, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str,
         kpr_cluster: ClusterHandle) -> ProtocolsObservation:
    lab, node = family_lab, family_lab.client_node
    target = hp(lab.cluster_ip("mp-dual"), PORT)
    vip = mp_workloads.vip(lab, "mp-dual")
    tcp = lab.probe("connect", target, TIMEOUT).verdict
    udp = _udp(lab, target)
    agent = lab.agent(node)
    wildcard = wildcard_entry(lab.minor, "LoadBalancer", None, agent.config_file(DEFAULT_LB_IPAM_FILE), agent.config_file(WILDCARD_ENTRIES_FILE))
    outside = kpr_cluster.outside
    unknown, drops, no_view = None, (), None
    if outside is None or not outside.reaches(lab.node_ip(node)):
        no_view = f"the runner has no route to {node} over {kpr_family}"
    else:
        with outside.via(lab.node_ip(node), [vip]) as why:
            no_view = why
            if why is None:
                unknown, drops = drops_during(lab, node, lambda: request(lab, outside, vip, UNKNOWN_PORT, node, [], TIMEOUT))
    obs = ProtocolsObservation(kpr_family, target, str(getattr(tcp, "value", tcp)), str(udp.get("verdict")), udp.get("reply_from"),
                               unknown, tuple(drops), wildcard, no_view)
    evidence.write(family_file("protocols.json", kpr_family), {**obs.to_json(), "vip": vip, "problems": {
        "both": both_protocols_problems(obs), "unknown_port": wildcard_drop_problems(obs) if wildcard and not no_view else None}})
    evidence.figure(kpr_property, f"TCP {obs.tcp}, UDP {obs.udp} on {target}; {vip}:{UNKNOWN_PORT} from outside: "
                                  f"{unknown.answer() if unknown else no_view}", kpr_family)
    return obs


def test_tcp_and_udp_on_one_port_are_both_served(seen: ProtocolsObservation) -> None:
    holds(both_protocols_problems(seen), "protocols on a port (TCP and UDP)")


@pytest.mark.kpr_requires(cilium="1.19")  # the wildcard entry (SRC_WILDCARD, PR #40684)
def test_a_port_the_vip_does_not_serve_is_dropped_and_counted(seen: ProtocolsObservation) -> None:
    if seen.no_view:
        no_outside_view(seen.no_view)
    if not seen.wildcard:
        pytest.skip("recorded, not judged: the rule gives this VIP no wildcard entry here (default-lb-service-ipam or "
                    "bpf-lb-enable-wildcard-entries; rules.datapath.SRC_WILDCARD)")
    holds(wildcard_drop_problems(seen), "protocols on a port (a port the VIP does not serve, from outside)")
