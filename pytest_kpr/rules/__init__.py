"""Sourced expectations: which Cilium plane answers what (datapath), kernel floors (kernels), the frontend-ownership
model (lbmodel), the refused upgrades (upgrade). Each rule cites cilium/cilium path@commit and the line that decides it;
the citations are the modules' ``SRC_*`` strings, which the suites' contracts name (``pytest.mark.kpr(sources=...)``)."""

from __future__ import annotations

#: what a suite's ``plane=`` may name: the part of Cilium (or of the node) whose answer the property is about
PLANES: dict[str, str] = {
    "socket": "the socket LB: bpf_sock.c's cgroup hooks translate connect()/sendmsg() and reverse getpeername()/recvmsg()",
    "per-packet": "the per-packet LB: bpf_lxc on a pod's veth, bpf_host on a node's device (NodePort from outside)",
    "control plane": "the agent's load-balancer control plane: Services to frontends and backends, reconciled into BPF maps",
    "node rules": "the node's own packet filter (iptables, nftables, IPVS): where kube-proxy would be, nothing of Cilium's",
}


def sources() -> dict[str, str]:
    """Every ``SRC_*`` citation of the rules modules, by name."""
    from . import datapath, lbmodel, upgrade

    return {name: value for module in (datapath, lbmodel, upgrade) for name, value in vars(module).items()
            if name.startswith("SRC_") and isinstance(value, str)}
