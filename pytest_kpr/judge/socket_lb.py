"""Socket LB: the application sees the Service, the kernel socket the backend, and no per-packet translation exists; the
holder's other views (conntrack, the backend's peer), the programs and their attach mode.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..rules.datapath import endpoint_attachment


@dataclass(frozen=True)
class SocketLBObservation:
    service: str  # ClusterIP:port the client connected to
    client: str  # client ip:port (the holder's socket)
    app_peer: str  # what getpeername() returned to the application
    socket_peer: str  # the kernel socket's peer (ss / netstat Foreign Address)
    backends: frozenset[str]  # ip:port of every backend
    service_translations: int  # conntrack entries that translate the service for this client (Cilium: TCP SVC entries)


def socket_lb_problems(obs: SocketLBObservation, coverage: str = "Full") -> list[str]:
    """Socket LB: the application sees the service, the kernel socket the backend, and no per-packet
    service translation exists. With ``Hostns-only`` coverage a pod's connection takes the per-packet
    path instead, and the expectations flip."""
    p: list[str] = []
    if coverage.lower().startswith("hostns"):
        if obs.socket_peer != obs.service:
            p.append(f"socket LB is hostns-only, yet the pod's socket peer is {obs.socket_peer}, not the service {obs.service}")
        if obs.service_translations == 0:
            p.append(f"socket LB is hostns-only, yet no per-packet service translation exists for {obs.client}")
        return p
    if obs.app_peer != obs.service:
        p.append(f"getpeername() returned {obs.app_peer}, not the service address {obs.service}: the reverse translation is missing")
    if obs.socket_peer == obs.service:
        p.append(f"the socket's peer is the service address {obs.service}: the destination was not rewritten at connect() (per-packet NAT, not socket LB)")
    elif obs.socket_peer not in obs.backends:
        p.append(f"the socket's peer {obs.socket_peer} is none of the backends {sorted(obs.backends)}")
    if obs.app_peer == obs.socket_peer:
        p.append(f"getpeername() equals the socket peer ({obs.app_peer}): no disparity, so no socket LB")
    if obs.service_translations:
        p.append(f"{obs.service_translations} service translation entries exist for {obs.client}: per-packet service NAT, not socket LB")
    return p



def conntrack_out_problems(backend: str, socket_peer: str, backends: "frozenset[str]", coverage: str) -> list[str]:
    p: list[str] = []
    if coverage.lower().startswith("full") and backend != socket_peer:
        p.append(f"the conntrack OUT entry goes to {backend}, the socket to {socket_peer}")
    if backend not in backends:
        p.append(f"the conntrack OUT entry {backend} is not a backend {sorted(backends)}")
    return p


def backend_peer_problems(client: str, peers: "Sequence[str]", backend_pod: str) -> list[str]:
    """The backend must see the client's own pod address (a node address would mean SNAT)."""
    return [] if client in peers else [f"the backend {backend_pod} sees {sorted(peers)}, not the holder's pod address {client} (a node IP would mean SNAT)"]


def program_problems(prog: "Mapping[str, object]", attach_mode: str, datapath_mode: str = "") -> list[str]:
    """The holder's host-side device runs cil_from_container where the datapath puts it (rules.datapath.endpoint_attachment:
    netkit/peer on a netkit device, tcx/ingress with tcx, a clsact ingress filter with legacy tc; a tc filter only with the
    last), and the endpoint has its policy map."""
    attach, filtered = endpoint_attachment(attach_mode, datapath_mode)
    netkit = datapath_mode.startswith("netkit")
    how = f"datapath mode {datapath_mode}" if netkit else f"attach mode {attach_mode}"
    lines = int(prog.get("tc_filter_lines") or 0)  # type: ignore[call-overload]
    p: list[str] = []
    if prog.get("program") != "cil_from_container":
        p.append(f"{prog.get('interface')} runs {prog.get('program')!r}, not cil_from_container")
    if prog.get("attach") != attach:
        p.append(f"{how} expects {attach} on {prog.get('interface')}, found {prog.get('attach')}")
    if (lines >= 1) != filtered:
        p.append(f"tc shows {prog.get('tc_filter_lines')} filter lines with {'netkit' if netkit else attach_mode} attachment "
                 f"(expected {'at least one' if filtered else 'none'})")
    if not prog.get("policy_map"):
        p.append(f"no per-endpoint policy map for endpoint {prog.get('endpoint_id')} in the agent's map list")
    return p


def attach_mode_kernel_problems(attach_mode: str, node_kernels: "Mapping[str, str]", tcx_from: str) -> list[str]:
    """The agent's reported attach mode must be possible on every node's kernel: tcx (a bpf_link on the device) exists
    from ``tcx_from`` (clusters/kernels.yaml, Linux 6.6); before, programs attach as legacy tc. On a tcx kernel either
    mode is possible (Cilium's bpf.enableTCX decides), so only tcx on an older kernel is a contradiction."""
    from ..core.versions import kernel_tuple

    if attach_mode != "tcx":
        return []
    want = kernel_tuple(tcx_from) or ()
    return [f"the agent reports tcx, but node {node} runs kernel {kernel}, which has no tcx (clusters/kernels.yaml: tcx from {tcx_from})"
            for node, kernel in sorted(node_kernels.items()) if (kernel_tuple(kernel) or want) < want]
