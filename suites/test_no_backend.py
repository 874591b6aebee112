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

from typing import Any

import pytest

from pytest_kpr.suite import (ClusterFacts, ClusterHandle, Evidence, family_file, Ghost, holds, hp, Lab,
                              no_outside_view, ProbeResult)
from pytest_kpr.judge.no_backend import NoBackendAttempt, known_regression, no_backend_problems
from pytest_kpr.rules.datapath import Plane, no_backend, plane_for
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


def _record(a: NoBackendAttempt, plane: Plane, rule_source: str) -> dict[str, Any]:
    return {"path": a.path, "tool": a.tool, "plane": plane.value, "verdict": a.verdict, "seconds": round(a.seconds, 4),
            "errno": a.errno, "icmp": list(a.icmp) if a.icmp else None, "rule": rule_source}


@pytest.fixture(scope="module")
def seen(ghost: Ghost, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_facts: ClusterFacts, kpr_cluster: ClusterHandle,
         kpr_family: str) -> dict[str, Any]:
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
    attempts: dict[str, dict[str, Any]] = {}

    connect_plane = plane_for("pod", "connect", "ClusterIP", coverage)
    curl = lab.curl(f"http://{target}/", CURL_MAX_TIME)
    curl_a = NoBackendAttempt(f"pod curl to ClusterIP {target}", "curl", str(curl.exit_code), curl.seconds)
    attempts["pod_curl"] = _record(curl_a, connect_plane.plane, connect_plane.source)
    conn_a = _attempt(f"pod connect() to ClusterIP {target}", "connect", lab.probe("connect", target, PROBE_TIMEOUT))
    attempts["pod_connect"] = _record(conn_a, connect_plane.plane, connect_plane.source)

    raw_plane = plane_for("pod", "raw", "ClusterIP", coverage)
    pod_raw = _attempt(f"pod raw SYN to ClusterIP {target}", "raw", lab.probe("syn", target, PROBE_TIMEOUT))
    attempts["pod_raw_syn"] = _record(pod_raw, raw_plane.plane, raw_plane.source)

    np_plane = plane_for("outside", "raw", "NodePort", coverage)
    np_target = hp(remote_ip, ghost.node_port)
    lab.deploy_host_probe()
    np_a = _attempt(f"raw SYN from {lab.client_node}'s host network to {remote}'s NodePort {np_target}", "raw",
                    lab.probe("syn", np_target, PROBE_TIMEOUT, pod="hostprobe"))
    attempts["nodeport_raw_syn"] = _record(np_a, np_plane.plane, np_plane.source)

    outside = kpr_cluster.outside
    runner: NoBackendAttempt | None = None
    if outside is None or not outside.reaches(remote_ip):
        attempts["runner_raw_syn"] = {"skipped": f"the runner has no specific route to {remote_ip}"}
    elif not outside.can_send_raw():
        attempts["runner_raw_syn"] = {"skipped": "the runner lacks CAP_NET_RAW"}
    else:
        r = outside.raw_syn(remote_ip, ghost.node_port, PROBE_TIMEOUT)
        icmp = (r.icmp_type, r.icmp_code) if r.icmp_type is not None and r.icmp_code is not None else None
        runner = NoBackendAttempt(f"raw SYN from the runner to {remote}'s NodePort {np_target}", "raw", str(r.verdict.value),
                                  r.elapsed_ms / 1000.0, None, icmp)
        attempts["runner_raw_syn"] = _record(runner, np_plane.plane, np_plane.source)

    data = {
        "family": kpr_family,
        "cluster_ip": fe.ip,
        "node_port": ghost.node_port,
        "backends": len(svc.backends) if svc else None,
        "no_backend_response": response,
        "no_backend_response_source": kpr_facts.no_backend_response_source,
        "no_service_endpoints_routable": routable,
        "client_kernel": ".".join(map(str, kernel)) if kernel else None,
        "socket_lb_coverage": coverage,
        "curl_exit": curl.exit_code,
        "seconds": curl.seconds,
        "attempts": attempts,
    }
    file = family_file("ghost.json", kpr_family)
    evidence.write(file, data)
    icmp = f" ICMP {np_a.icmp[0]}/{np_a.icmp[1]}" if np_a.icmp else ""
    evidence.figure(kpr_property, f"pod curl exit {curl.exit_code} in {curl.seconds:.2f}s ({connect_plane.plane}), "
                              f"NodePort raw SYN {np_a.verdict}{icmp} ({response})", kpr_family)
    return {"data": data, "cilium": kpr_facts.cilium_version, "response": response, "coverage": coverage, "routable": routable, "kernel": kernel, "curl": curl_a, "connect": conn_a, "pod_raw": pod_raw,
            "nodeport_raw": np_a, "runner_raw": runner, "skips": attempts, "family": 6 if kpr_family == "IPv6" else 4, "file": file}


def _judge(a: NoBackendAttempt, client: str, access: str, frontend: str, seen: dict[str, Any]) -> None:
    plane = plane_for(client, access, frontend, seen["coverage"]).plane
    rule = no_backend(plane, seen["response"], seen["routable"], seen["kernel"], family=seen["family"],
                      owner="node" if frontend == "NodePort" else "elsewhere")
    problems = no_backend_problems(a, rule, seen["response"] + ("" if seen["routable"] else ", enable-no-service-endpoints-routable=false"))
    if why := known_regression(problems, seen["cilium"]):
        pytest.xfail(why)
    holds(problems, "no backend")


def test_agent_lists_ghost_without_backends(seen: dict[str, Any]) -> None:
    d = seen["data"]
    assert d["backends"] == 0, f"no backend: the agent lists {d['backends']} backends for ghost {hp(d['cluster_ip'], 80)}"


def test_curl_from_a_pod_fails_as_its_plane_says(seen: dict[str, Any]) -> None:
    _judge(seen["curl"], "pod", "connect", "ClusterIP", seen)


def test_connect_from_a_pod_fails_as_its_plane_says(seen: dict[str, Any]) -> None:
    _judge(seen["connect"], "pod", "connect", "ClusterIP", seen)


def test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer(seen: dict[str, Any]) -> None:
    _judge(seen["nodeport_raw"], "outside", "raw", "NodePort", seen)


def test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer(seen: dict[str, Any]) -> None:
    if seen["runner_raw"] is None:
        no_outside_view(seen["skips"]["runner_raw_syn"]["skipped"])
    _judge(seen["runner_raw"], "outside", "raw", "NodePort", seen)


def test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it(seen: dict[str, Any]) -> None:
    rule = plane_for("pod", "raw", "ClusterIP", seen["coverage"])
    if rule.plane is Plane.NONE:
        pytest.skip(f"recorded, not judged: with socket-LB coverage {seen['coverage']} {rule.why} "
                    f"(got {seen['pod_raw'].verdict}; {seen['file']})")
    _judge(seen["pod_raw"], "pod", "raw", "ClusterIP", seen)
