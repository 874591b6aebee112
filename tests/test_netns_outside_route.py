"""The outside view's route through a node (cluster.outside.LocalOutside.via) on this kernel, in network namespaces as root:
the runner reaches a VIP only while the route it added is there. Routing is the same on every kernel the project supports,
so the qemu kernel cells do not run it (tests/test_kernel_cells.py NOT_KERNEL_DEPENDENT)."""

from __future__ import annotations

import json
import sys

import pytest
from netns import can_use_netns, three_namespaces, wait_listening

pytestmark = [pytest.mark.netns]


ROUTED = """
import json, sys
from pytest_kpr.cluster.outside import LocalOutside, specific_route
node, vip, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
o = LocalOutside()
out = {"before": o.reaches(vip)}
with o.via(node, [vip]) as why:
    out["why"] = why
    out["during"] = specific_route(vip)
    out["http"] = o.http(f"http://{'[' + vip + ']' if ':' in vip else vip}:{port}/", 3.0).http_code
out["after"] = o.reaches(vip)
print(json.dumps(out))
"""


@pytest.mark.parametrize("family", ["IPv4", "IPv6"])
def test_the_outside_view_routes_a_vip_through_a_node_and_removes_the_route(tmp_path_factory: pytest.TempPathFactory,
                                                                          family: str) -> None:
    """cluster.outside.LocalOutside.via on a real kernel, in the client namespace as root: a VIP no route covers is not
    reached; routed through the node (which owns the VIP on its loopback and serves HTTP on it, as a node's bpf_host would
    answer for it) an HTTP request gets 200; after the context the route is gone. The client namespace has no default
    route: nothing leaves the machine."""
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    v6 = family == "IPv6"
    t = three_namespaces(tmp_path_factory.mktemp("via"), v6=v6)
    try:
        vip = "2001:2::15:10" if v6 else "198.18.21.10"
        node = f"{t.subnets6['left']}2" if v6 else f"{t.subnets['left']}.2"
        t.exec("node", "ip", "addr", "add", f"{vip}/{128 if v6 else 32}", "dev", "lo", *(["nodad"] if v6 else []))
        t.spawn("node", [sys.executable, "-m", "http.server", "8080", "--bind", vip])
        wait_listening(t, "node", 8080)
        cp = t.exec("client", sys.executable, "-c", ROUTED, node, vip, "8080", timeout=60)
        out = json.loads(cp.stdout.strip().splitlines()[-1])
        assert out == {"before": False, "why": None, "during": "c0", "http": 200, "after": False}, (out, cp.stderr)
        assert t.exec("client", "ip", "-6" if v6 else "-4", "route", "show", "proto", "233").stdout.strip() == ""
    finally:
        t.close()


FOREIGN = """
import json, sys
from pytest_kpr.cluster.outside import LocalOutside
from pytest_kpr.core.errors import ForeignObject
from pytest_kpr.scenarios.vips import Blocks, Vips
node = sys.argv[1]
vips = Vips(None, {}, lambda o: None, Blocks(("198.18.21.10", "198.18.21.19"), ("2001:2::15:10", "2001:2::15:19"), "198.18.21.30",
                                             "2001:2::15:30"), "kpr-ns-r1")
out = {}
for vip in ("203.0.113.7", "198.018.21.10"):
    try:
        owned = vips.owned(vip, "the VIP")
    except ForeignObject as e:
        out[vip] = str(e).split(":")[0]
        continue
    with LocalOutside().via(node, [owned]) as why:
        out[vip] = why
with LocalOutside().via(node, ["0xc6.18.21.10"]) as why:
    out["0xc6.18.21.10"] = why
print(json.dumps(out))
"""


def test_an_address_outside_the_runs_pool_is_never_routed_beside_a_wider_route(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The client namespace already routes 203.0.113.0/24 through the node (a route of someone else's, wider than a VIP):
    a VIP LB-IPAM handed out from another pool (203.0.113.7), or one of the run's written another way, is refused before
    any route; the wider route is left as it was and the run added none (nothing with proto 233)."""
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path_factory.mktemp("via-foreign"))
    try:
        node = f"{t.subnets['left']}.2"
        t.exec("client", "ip", "route", "add", "203.0.113.0/24", "via", node)
        cp = t.exec("client", sys.executable, "-c", FOREIGN, node, timeout=60)
        out = json.loads(cp.stdout.strip().splitlines()[-1])
        assert out == {"203.0.113.7": "not routing 203.0.113.7", "198.018.21.10": "not routing 198.018.21.10",
                       "0xc6.18.21.10": "0xc6.18.21.10 is not an address in canonical form: not routing it (a run routes only the "
                                        "addresses it allocated)"}, (out, cp.stderr)
        assert t.exec("client", "ip", "-4", "route", "show", "proto", "233").stdout.strip() == ""
        assert t.exec("client", "ip", "-4", "route", "show", "203.0.113.0/24").stdout.split()[:3] == ["203.0.113.0/24", "via", node]
    finally:
        t.close()
