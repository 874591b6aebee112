"""The fault rows of the DSR/SNAT property: each of its faults (pytest_kpr.testing, property='DSR/SNAT') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

DSR = "test_dsr.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("snat-reported-client-seen", ("dsr",), "faults=Faults(nodeport_mode_mismatch=True)", {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw 172.18.0.1 (the client's address), expected "
      "10.244.1.118 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*"]),
    ("dsr-reported-node-seen", ("dsr",), "nodeport_mode='DSR', routing_mode='Native', faults=Faults(nodeport_mode_mismatch=True)",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode DSR, routing Native): the backend saw 172.18.0.3 (the receiving node's InternalIP), "
      "expected 172.18.0.1 (the client: DSR*"]),
    # the SNAT source address (bpf/lib/nodeport.h tail_nodeport_nat_egress_ipv4): IPV4_GATEWAY in tunnel routing, the node's
    # direct-routing address in native routing
    ("snat-internal-ip-in-tunnel-mode", ("dsr",), "faults=Faults(snat_address_swapped=True)",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw 172.18.0.3 (the receiving node's InternalIP), "
      "expected 10.244.1.118 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*"]),
    ("snat-cilium-internal-ip-in-native-mode", ("dsr",), "routing_mode='Native', faults=Faults(snat_address_swapped=True)",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Native): the backend saw 10.244.1.118 (the receiving node's "
      "CiliumInternalIP), expected 172.18.0.3 (the receiving node's InternalIP: SNAT mode in native routing*"]),
    ("ipv6-snat-to-the-other-address", ("dsr",), "ip_families=('IPv4', 'IPv6'), faults=Faults(snat_address_swapped='IPv6')",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises[IPv6]"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw fc00:f853:ccd:e793::3 (the receiving node's "
      "InternalIP), expected fd00:10:244:1::76 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*ROUTER_IP for IPv6*"]),
]
