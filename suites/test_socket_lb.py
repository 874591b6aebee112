"""Socket LB: the same connection seen three ways.

The holder opens a TCP connection from port 40404 to web's ClusterIP:80. With socket LB the
destination is rewritten at connect(): the application still sees the ClusterIP (getpeername), the
socket (netstat) and the agent's conntrack OUT entry name a backend, no TCP SVC entry exists for
:40404, and the backend sees the holder's pod IP. With hostns-only coverage pods take the per-packet
path instead; the expectations follow the agent's reported mode. Evidence: ct.json, prog.json.

The connection is the same in each address family and the socket plane has a hook per family (connect4/connect6,
getpeername4/getpeername6 in cilium/cilium bpf/bpf_sock.c): the tests that read the connection run once per family of
--kpr-ip-families, each with its own holder (``holder-ipv6`` for IPv6) and evidence (``ct-ipv6.json``).
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import (ClusterFacts, Evidence, family_file, holder_ct, holder_program, holds, Lab, parse_netstat,
                              Settings, split_host_port)
from pytest_kpr.judge.socket_lb import (
    SocketLBObservation,
    attach_mode_kernel_problems,
    backend_peer_problems,
    conntrack_out_problems,
    program_problems,
    socket_lb_problems,
)

pytestmark = [
    pytest.mark.kpr(property="socket LB", evidence=["ct.json", "prog.json"],
                    plane="socket",
                    sources=["SRC_SOCK_FWD", "SRC_SOCK_GETPEERNAME", "SRC_LXC_PER_PACKET", "SRC_TCX_ATTACH", "SRC_NETKIT_ATTACH"]),
    pytest.mark.kpr_requires("socket-lb"),
]


@pytest.fixture(scope="module")
def seen(family_lab: Lab, holder: Lab, evidence: Evidence, kpr_property: str, kpr_family: str) -> tuple[SocketLBObservation, str, str]:
    """What the holder's connection looks like, read once per family: the tests below judge it (``bpf ct list`` is one exec
    of a whole table, not worth repeating per test)."""
    lab = family_lab
    lab.ensure_holder()
    event = lab.holder_event()
    socket_peer = lab.holder_socket_peer()
    backend, svc_entries = holder_ct(lab)
    evidence.report_value("holder_backend", backend)  # report.txt: the first family's
    coverage = (lab.agent(lab.holder_pod()["spec"]["nodeName"]).status_text().kpr_details or object()).socket_lb_coverage  # type: ignore[union-attr]
    obs = SocketLBObservation(
        service=lab.frontend("web").host_port(), client=event.local, app_peer=event.app_peer, socket_peer=socket_peer,
        backends=lab.endpointslice_ready("web"), service_translations=svc_entries,
    )
    evidence.write(family_file("ct.json", kpr_family), {
        "family": kpr_family, "client": obs.client, "app_peer": obs.app_peer, "socket_peer": obs.socket_peer, "backend": backend,
        "backend_pod": lab.pod_by_ip((split_host_port(backend) or ("", 0))[0]), "svc_entries": svc_entries, "socket_lb_coverage": coverage,
    })
    evidence.figure(kpr_property, f"getpeername {obs.app_peer}, socket {obs.socket_peer} ({coverage})", kpr_family)
    return obs, str(coverage), backend


def test_application_sees_the_service_while_its_socket_points_at_a_backend(seen: tuple[SocketLBObservation, str, str]) -> None:
    obs, coverage, _ = seen
    problems = socket_lb_problems(obs, coverage)
    holds(problems, f"socket LB (agent reports coverage {coverage})")


def test_conntrack_out_entry_names_the_socket_peer(seen: tuple[SocketLBObservation, str, str]) -> None:
    obs, coverage, backend = seen
    problems = conntrack_out_problems(backend, obs.socket_peer, obs.backends, coverage)
    holds(problems, "socket LB")


def test_backend_sees_the_holder_pod_address(seen: tuple[SocketLBObservation, str, str], family_lab: Lab) -> None:
    obs, _, backend = seen
    holder = family_lab
    ip, port = split_host_port(backend) or ("", 0)
    pod = holder.pod_by_ip(ip)
    assert pod, f"socket LB: no pod has the backend address {backend}"
    # every peer of the backend's serving port: SNAT rewrites the source port too
    peers = sorted(s.peer for s in parse_netstat(holder.exec(pod, "netstat", "-tn").check().stdout) if s.local_port == port)
    problems = backend_peer_problems(obs.client, peers, pod)
    holds(problems, "socket LB")


def test_holder_endpoint_runs_cilium_program_on_its_host_veth(holder: Lab, evidence: Evidence, kpr_facts: ClusterFacts) -> None:
    prog = holder_program(holder)
    evidence.write("prog.json", prog)
    evidence.report_value("holder_program", prog.get("program"))
    problems = program_problems(prog, kpr_facts.attach_mode, kpr_facts.datapath_mode)
    holds(problems, "socket LB", then=f" ({prog})")


def test_the_reported_attach_mode_is_possible_on_the_nodes_kernels(kpr_facts: ClusterFacts, kpr_settings: Settings) -> None:
    """Kernel-aware: what the agent reports (tcx or tc) against what each node's kernel has (clusters/kernels.yaml)."""
    from pytest_kpr.rules.kernels import KernelTable

    assert kpr_settings.clusters_dir is not None
    table = KernelTable.load(kpr_settings.clusters_dir / "kernels.yaml")
    problems = attach_mode_kernel_problems(kpr_facts.attach_mode, {n.name: n.kernel for n in kpr_facts.nodes}, table.features["tcx"].kernel)
    holds(problems, "socket LB")
