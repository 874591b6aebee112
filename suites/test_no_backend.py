"""No backend: a service without endpoints fails the way the plane that handles the client says.

Which plane answers, and what it answers, are the sourced rules of ``pytest_kpr.rules.datapath`` (read in
cilium/cilium, cited there):

- a pod's ``connect()`` to the ClusterIP meets the **socket plane** (Full coverage): it fails at once, curl exit 7,
  **whatever ServiceNoBackendResponse says**, with EHOSTUNREACH on kernel 6.1+ (EPERM there fails and names the
  regression #45184 reports for Cilium 1.19.2 up to 1.20.0) and EPERM below 6.1 (the hook cannot set the errno);
  under Hostns-only coverage it meets ``bpf_lxc``'s per-packet LB instead;
- a raw SYN to ghost's **NodePort** on another node (from a host-network pod on the client node, and
  from the runner when it may send raw packets over a specific route) arrives at that node's
  ``bpf_host``: the **per-packet plane** answers ICMP 3/3 under ``reject`` and nothing under ``drop``; with
  ``enable-no-service-endpoints-routable=false`` the packet goes on to the node's stack, which answers a TCP reset;
- a pod's raw SYN to the ClusterIP is recorded; it is judged only where a rule gives it a plane
  (Hostns-only coverage): under Full coverage nothing in Cilium looks at it.

Evidence: ghost.json (addresses, the agent's mode and coverage, every attempt with its plane and rule).

Each family has its own hooks and tail calls (connect6 in bpf_sock.c, ``__tail_no_service_ipv6`` in bpf/lib/lb.h, whose
reject is ICMPv6 1/4: SRC_NO_SERVICE_ICMP6): the attempts run once per family of --kpr-ip-families, against ghost's
ClusterIP and the remote node's address of that family (evidence ``ghost-ipv6.json`` for IPv6).
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import (ClusterFacts, ClusterHandle, Evidence, family_file, Ghost, holds, hp, Lab,
                              no_outside_view, ProbeResult)
from pytest_kpr.judge.no_backend import GhostObservation, NoBackendAttempt, attempt_problems, known_regression, listed_backends_problems
from pytest_kpr.rules.datapath import Plane, plane_for
from pytest_kpr.rules.kernels import kernel_tuple

pytestmark = pytest.mark.kpr(property="no backend", evidence="ghost.json",
                             plane=["socket", "per-packet"],
                             sources=["SRC_SOCK_FWD", "SRC_SOCK_RETVAL", "SRC_LXC_PER_PACKET", "SRC_NO_SERVICE_ICMP", "SRC_NO_SERVICE_DROP", "SRC_NO_SVC_ROUTABLE", "SRC_EPERM_BUG"])

#: curl's limit and the probes' timeout: a drop shows as a wait this long
CURL_MAX_TIME = 5.0
PROBE_TIMEOUT = 3.0


def _attempt(path: str, tool: str, out: ProbeResult) -> NoBackendAttempt:
    icmp = (out.icmp_type, out.icmp_code) if out.icmp_type is not None and out.icmp_code is not None else None
    return NoBackendAttempt(path, tool, out.verdict, out.elapsed_ms / 1000.0, out.errno_name, icmp)


@pytest.fixture(scope="module")
def seen(ghost: Ghost, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_facts: ClusterFacts, kpr_cluster: ClusterHandle,
         kpr_family: str) -> GhostObservation:
    lab = family_lab
    response, coverage = kpr_facts.no_backend_response, kpr_facts.socket_lb_coverage
    client = kpr_facts.node(lab.client_node)
    routable, kernel = kpr_facts.no_service_endpoints_routable, kernel_tuple(client.kernel) if client else None
    remote = lab.remote_node()
    fe = lab.frontend("ghost")  # this family's ClusterIP frontend, programmed where the attempts arrive
    if fe != ghost.cluster_ip:
        for node in (lab.client_node, remote):
            lab.wait_programmed(node, fe, f"the agent on {node} to program ghost's {kpr_family} frontend {fe}", first_look=False)
    target = fe.host_port()
    remote_ip = lab.node_ip(remote)
    svc = lab.service_entry(lab.agent(lab.client_node), fe)
    connect_plane = plane_for("pod", "connect", "ClusterIP", coverage)
    curl = lab.curl(f"http://{target}/", CURL_MAX_TIME)
    curl_a = NoBackendAttempt(f"pod curl to ClusterIP {target}", "curl", str(curl.exit_code), curl.seconds)
    conn_a = _attempt(f"pod connect() to ClusterIP {target}", "connect", lab.probe("connect", target, PROBE_TIMEOUT))

    raw_plane = plane_for("pod", "raw", "ClusterIP", coverage)
    pod_raw = _attempt(f"pod raw SYN to ClusterIP {target}", "raw", lab.probe("syn", target, PROBE_TIMEOUT))

    np_plane = plane_for("outside", "raw", "NodePort", coverage)
    np_target = hp(remote_ip, ghost.node_port)
    lab.deploy_host_probe()
    np_a = _attempt(f"raw SYN from {lab.client_node}'s host network to {remote}'s NodePort {np_target}", "raw",
                    lab.probe("syn", np_target, PROBE_TIMEOUT, pod="hostprobe"))

    outside = kpr_cluster.outside
    runner: NoBackendAttempt | None = None
    skip: str | None = None
    if outside is None or not outside.reaches(remote_ip):
        skip = f"the runner has no specific route to {remote_ip}"
    elif not outside.can_send_raw():
        skip = "the runner lacks CAP_NET_RAW"
    else:
        r = outside.raw_syn(remote_ip, ghost.node_port, PROBE_TIMEOUT)
        icmp = (r.icmp_type, r.icmp_code) if r.icmp_type is not None and r.icmp_code is not None else None
        runner = NoBackendAttempt(f"raw SYN from the runner to {remote}'s NodePort {np_target}", "raw", str(r.verdict.value),
                                  r.elapsed_ms / 1000.0, None, icmp)

    planes = tuple((key, rule.plane.value, rule.source) for key, rule in (
        ("pod_curl", connect_plane), ("pod_connect", connect_plane), ("pod_raw_syn", raw_plane), ("nodeport_raw_syn", np_plane),
        ("runner_raw_syn", np_plane)))
    g = GhostObservation(kpr_family, fe.ip, ghost.node_port, len(svc.backends) if svc else None, response,
                         kpr_facts.no_backend_response_source, routable, kernel, coverage, kpr_facts.cilium_version, curl_a, curl.exit_code,
                         conn_a, pod_raw, np_a, runner, skip, planes)
    evidence.write(family_file("ghost.json", kpr_family), g.to_json())
    icmp = f" ICMP {np_a.icmp[0]}/{np_a.icmp[1]}" if np_a.icmp else ""
    evidence.figure(kpr_property, f"pod curl exit {curl.exit_code} in {curl.seconds:.2f}s ({connect_plane.plane}), "
                              f"NodePort raw SYN {np_a.verdict}{icmp} ({response})", kpr_family)
    return g


def _judge(g: GhostObservation, a: NoBackendAttempt, client: str, access: str, frontend: str) -> None:
    problems = attempt_problems(g, a, client, access, frontend)
    if why := known_regression(problems, g.cilium_version):
        pytest.xfail(why)
    holds(problems, "no backend")


def test_agent_lists_ghost_without_backends(seen: GhostObservation) -> None:
    holds(listed_backends_problems(seen), "no backend")


def test_curl_from_a_pod_fails_as_its_plane_says(seen: GhostObservation) -> None:
    _judge(seen, seen.curl, "pod", "connect", "ClusterIP")


def test_connect_from_a_pod_fails_as_its_plane_says(seen: GhostObservation) -> None:
    _judge(seen, seen.connect, "pod", "connect", "ClusterIP")


def test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer(seen: GhostObservation) -> None:
    _judge(seen, seen.nodeport_raw, "outside", "raw", "NodePort")


def test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer(seen: GhostObservation) -> None:
    if seen.runner_raw is None:
        no_outside_view(seen.runner_skip or "no raw SYN from the runner")
    _judge(seen, seen.runner_raw, "outside", "raw", "NodePort")


def test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it(seen: GhostObservation) -> None:
    rule = plane_for("pod", "raw", "ClusterIP", seen.coverage)
    if rule.plane is Plane.NONE:
        pytest.skip(f"recorded, not judged: with socket-LB coverage {seen.coverage} {rule.why} "
                    f"(got {seen.pod_raw.verdict}; {family_file('ghost.json', seen.family)})")
    _judge(seen, seen.pod_raw, "pod", "raw", "ClusterIP")
