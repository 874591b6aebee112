"""Real-kernel tier: the ICMP-error suite's two ends against a real NAT. A node namespace NATs a "NodePort" (nftables:
DNAT of UDP port 30000 to the server, masquerade toward it), as Cilium SNATs a NodePort request to a backend on another
node; the server runs ``kpr probe frag-needed-responder``, which answers the datagram with an ICMP fragmentation-needed
error about it, as a router with a smaller MTU would; the client sends with ``udp_icmp_probe`` from a raw socket. The
kernel's NAT reverse-translates the error (outer destination, and the header inside it) like Cilium's snat_v4_rev_nat
(rules.datapath.SRC_ICMP_ERROR_REVNAT): the client must read its own address and port, and the NodePort, inside the error.
With the node dropping the related ICMP the client sees nothing: the probe does not pass by itself.

Needs root (namespaces, nftables, raw sockets). Every namespace and process is this run's (netns.Topology) and removed."""

from __future__ import annotations

import sys
from typing import Iterator

import pytest
from netns import Topology, can_use_netns, three_namespaces, wait_listening
from realkernel import in_netns

from pytest_kpr.traffic.probes import udp_icmp_probe

pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent]

NODE_PORT, BACKEND_PORT, MTU = 30000, 7000, 1200


def _nat(topo: Topology, drop_related: bool = False) -> str:
    left, right = topo.subnets["left"], topo.subnets["right"]
    related = "ct state related ip protocol icmp drop" if drop_related else ""
    return f"""
table ip kprt_nat {{
  chain pre {{
    type nat hook prerouting priority dstnat;
    ip daddr {left}.2 udp dport {NODE_PORT} dnat to {right}.2:{BACKEND_PORT}
  }}
  chain post {{
    type nat hook postrouting priority srcnat;
    ip daddr {right}.2 udp dport {BACKEND_PORT} masquerade
  }}
  chain kprt_forward {{
    type filter hook forward priority filter;
    {related}
  }}
}}
"""


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path_factory.mktemp("icmp"))
    try:
        t.spawn("server", [sys.executable, "-m", "pytest_kpr", "probe", "frag-needed-responder", "--port", str(BACKEND_PORT),
                           "--mtu", str(MTU)])
        wait_listening(t, "server", BACKEND_PORT, udp=True)
        yield t
    finally:
        t.close()


def _probe(topo: Topology, drop_related: bool) -> dict:
    topo.exec("node", "nft", "delete", "table", "ip", "kprt_nat", check=False)
    topo.nft("node", _nat(topo, drop_related))
    try:
        return in_netns(topo.ns("client"), udp_icmp_probe, f"{topo.subnets['left']}.2", NODE_PORT, 2.0, 45123).to_json()
    finally:
        topo.exec("node", "nft", "delete", "table", "ip", "kprt_nat", check=False)


def test_the_error_about_a_natted_datagram_comes_back_translated(topo: Topology) -> None:
    r = _probe(topo, drop_related=False)
    left = topo.subnets["left"]
    assert (r["verdict"], r["icmp_type"], r["icmp_code"], r["mtu"]) == ("icmp-unreachable", 3, 4, MTU), r
    assert r["inner_src"] == f"{left}.1:45123" and r["inner_dst"] == f"{left}.2:{NODE_PORT}", r


def test_without_the_reverse_translation_nothing_comes_back(topo: Topology) -> None:
    r = _probe(topo, drop_related=True)
    assert r["verdict"] == "timeout", r
