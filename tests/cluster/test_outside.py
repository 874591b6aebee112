"""The runner as an outside client reaches a node only over a specific route, in either family: read from the route
tables' text (no root, no packet)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kpr.cluster.outside import has_capability, specific_route

# /proc/net/route: a default route via eth0, kind's IPv4 bridge 172.18.0.0/16 on br-kind, a /24 inside it on br-more
ROUTE4 = """Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	010200C0	0003	0	0	0	00000000	0	0	0
br-kind	000012AC	00000000	0001	0	0	0	0000FFFF	0	0	0
br-more	000312AC	00000000	0001	0	0	0	00FFFFFF	0	0	0
"""

# /proc/net/ipv6_route: kind's IPv6 bridge fc00:f853:ccd:e793::/64 on br-kind, a /112 inside it on br-more, the
# default route via eth0, the host's own address (local table, RTF_LOCAL), the multicast route, and the kernel's
# unreachable catch-all on lo (RTF_REJECT)
ROUTE6 = """\
fc00f8530ccde7930000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001  br-kind
fc00f8530ccde7930000000000010000 70 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001  br-more
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000003 00000000 00000003     eth0
fc00f8530ccde7930000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000004 00000000 80200001  br-kind
fd0000000000000000000000000000aa 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000004 00000000 80200001     eth0
ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000003 00000000 00000001  br-kind
fd990000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
garbage line
"""


@pytest.mark.parametrize(("ip", "interface"), [
    ("172.18.0.3", "br-kind"),
    ("172.18.3.9", "br-more"),  # the most specific route wins
    ("8.8.8.8", None),  # the default route only: not outside-the-cluster-on-the-same-network
    ("fc00:f853:ccd:e793::3", "br-kind"),
    ("fc00:f853:ccd:e793::1:5", "br-more"),  # the /112 beats the /64
    ("2001:db8::1", None),  # the default route only
    ("fd00::aa", None),  # a /128 of the host's own (RTF_LOCAL): not a route to another machine
    ("ff02::1", None),  # multicast
    ("fd99::1", None),  # an unreachable route (RTF_REJECT) is no route
    ("not-an-ip", None),
])
def test_a_node_address_is_reached_only_over_a_specific_route(tmp_path: Path, ip: str, interface: str | None) -> None:
    route = tmp_path / ("ipv6_route" if ":" in ip else "route")
    route.write_text(ROUTE6 if ":" in ip else ROUTE4)
    assert specific_route(ip, route) == interface


def test_an_unreadable_route_table_reaches_nothing(tmp_path: Path) -> None:
    assert specific_route("172.18.0.3", tmp_path / "missing") is None
    assert specific_route("fc00:f853:ccd:e793::3", tmp_path / "missing") is None


@pytest.mark.parametrize(("capeff", "raw"), [("0000000000002000", True), ("00000000a80425fb", True), ("0000000000000000", False),
                                             ("0000000000001000", False), ("zz", False)])
def test_raw_packets_need_cap_net_raw_in_the_effective_set(tmp_path: Path, capeff: str, raw: bool) -> None:
    status = tmp_path / "status"
    status.write_text(f"Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t{capeff}\n")
    assert has_capability(13, status) is raw


@pytest.mark.parametrize("family", ["-4", "-6"])
def test_the_route_tables_are_read_as_the_kernel_writes_them(family: str) -> None:
    """Against this machine's own tables (read only, nothing sent): every non-default route of the main table, as
    ``ip route`` lists it, is found for an address inside it, on its device. The IPv4 reader once byte-swapped the
    kernel's text and never matched a route, so the outside view never ran on a real runner; the table above, written by
    hand, could not show that."""
    import ipaddress
    import json
    import shutil
    import subprocess

    if not shutil.which("ip"):
        pytest.skip("no ip(8) here")
    routes = json.loads(subprocess.run(["ip", "-j", family, "route", "show"], capture_output=True, text=True, check=True).stdout or "[]")
    specific = [r for r in routes if r.get("dst") not in (None, "default") and r.get("dev") and r.get("type", "unicast") == "unicast"]
    specific = [r for r in specific if not ipaddress.ip_network(r["dst"], strict=False).is_link_local]
    if not specific:
        pytest.skip(f"this machine has no specific {family} route to read")
    nets = [(ipaddress.ip_network(r["dst"], strict=False), r["dev"]) for r in specific]
    for net, _ in nets:
        inside = net.network_address + (1 if net.num_addresses > 1 else 0)
        want = max(((n, dev) for n, dev in nets if inside in n), key=lambda nd: nd[0].prefixlen)[1]  # the longest prefix wins
        assert specific_route(str(inside)) == want, (str(inside), routes)


class FakeIp:
    """``ip`` as a list of the commands given; ``fail``: the route add that fails (its exit status 2)."""

    def __init__(self, fail: str | None = None):
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, argv: list[str]) -> tuple[int, str]:
        self.calls.append(list(argv))
        if argv[:2] == ["route", "add"] and self.fail and argv[2].startswith(self.fail):
            return 2, "RTNETLINK answers: File exists"
        return 0, ""


def _outside(tmp_path: Path, ip: FakeIp, capeff: str = "0000000000003000"):
    from pytest_kpr.cluster.outside import LocalOutside

    status = tmp_path / "status"
    status.write_text(f"CapEff:\t{capeff}\n")
    out = LocalOutside(ip, status)
    out.reaches = lambda a: a in ("172.18.0.3", "fc00:f853:ccd:e793::3")  # type: ignore[method-assign]
    return out


def test_a_vip_is_routed_through_the_node_and_the_route_removed_after(tmp_path: Path) -> None:
    ip = FakeIp()
    with _outside(tmp_path, ip).via("172.18.0.3", ["198.18.21.10", "2001:2::15:10"]) as why:
        assert why is None
        assert ip.calls == [["route", "add", "198.18.21.10/32", "via", "172.18.0.3", "proto", "233"],
                            ["route", "add", "2001:2::15:10/128", "via", "172.18.0.3", "proto", "233"]]
    assert ip.calls[2:] == [["route", "del", "2001:2::15:10/128", "via", "172.18.0.3", "proto", "233"],
                            ["route", "del", "198.18.21.10/32", "via", "172.18.0.3", "proto", "233"]]


def test_the_routes_go_also_when_the_requests_fail(tmp_path: Path) -> None:
    ip = FakeIp()
    with pytest.raises(KeyboardInterrupt):
        with _outside(tmp_path, ip).via("172.18.0.3", ["198.18.21.10"]):
            raise KeyboardInterrupt
    assert ip.calls[-1][:2] == ["route", "del"]


@pytest.mark.parametrize(("node", "capeff", "fail", "why"), [
    ("8.8.8.8", "0000000000003000", None, "no specific route to the node 8.8.8.8"),
    ("172.18.0.3", "0000000000002000", None, "the runner lacks CAP_NET_ADMIN"),
    ("172.18.0.3", "0000000000003000", "2001:2::15:10", "ip route add 2001:2::15:10/128 via 172.18.0.3 proto 233 failed: RTNETLINK answers: File exists"),
])
def test_routing_refused_says_why_and_leaves_nothing(tmp_path: Path, node: str, capeff: str, fail: str | None, why: str) -> None:
    ip = FakeIp(fail)
    with _outside(tmp_path, ip, capeff).via(node, ["198.18.21.10", "2001:2::15:10"]) as got:
        assert got is not None and got.startswith(why), got
        added = [c for c in ip.calls if c[:2] == ["route", "add"] and c[2] != (fail or "") + "/128"]
        removed = [c for c in ip.calls if c[:2] == ["route", "del"]]
        assert [c[2:] for c in added] == [c[2:] for c in removed]  # all or none, before the caller sends anything


def test_an_address_with_a_route_already_is_not_taken_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_kpr.cluster import outside as mod

    monkeypatch.setattr(mod, "specific_route", lambda a, route_file=None: "br-kind" if a == "198.18.21.10" else None)
    ip = FakeIp()
    with _outside(tmp_path, ip).via("172.18.0.3", ["198.18.21.10"]) as why:
        assert why == "198.18.21.10 already has a route on the runner: not replacing a route this run did not add"
    assert ip.calls == []


@pytest.mark.parametrize("address", ["0x0a.0.0.1", "012.0.0.1", "10.0.0.1/32", "2001:2:0:0::15:10", "2001:2::15:A", "vip.example"])
def test_an_address_in_another_spelling_is_refused_before_any_route(tmp_path: Path, address: str) -> None:
    """The "already routed" check and the route itself must see one address: a form ipaddress does not write back
    unchanged (hex, leading zeros, a prefix, an uncompressed or upper-case IPv6, a name) is refused, nothing added."""
    ip = FakeIp()
    with _outside(tmp_path, ip).via("172.18.0.3", ["198.18.21.10", address]) as why:
        assert why == f"{address} is not an address in canonical form: not routing it (a run routes only the addresses it allocated)"
    assert ip.calls == []


@pytest.mark.parametrize(("ip", "owned"), [
    ("198.18.21.10", True), ("198.18.21.19", True), ("198.18.21.30", True), ("2001:2::15:12", True),
    ("198.18.21.20", False), ("203.0.113.1", False), ("8.8.8.8", False), ("2001:2::15:30", True), ("2001:2::16:10", False),
    ("0xc6.18.21.10", False), ("198.018.21.10", False), ("2001:2:0::15:12", False),
])
def test_the_run_routes_only_addresses_from_its_own_pool(ip: str, owned: bool) -> None:
    from pytest_kpr.core.errors import ForeignObject
    from pytest_kpr.scenarios.vips import Blocks, Vips

    vips = Vips(None, {}, lambda o: None, Blocks(("198.18.21.10", "198.18.21.19"), ("2001:2::15:10", "2001:2::15:19"), "198.18.21.30",
                                                 "2001:2::15:30"), "kpr-ns-r1")  # type: ignore[arg-type]
    if owned:
        assert vips.owned(ip, "the VIP") == ip
    else:
        with pytest.raises(ForeignObject, match=rf"^not routing {ip}: the VIP is not from this run's pool kpr-ns-r1 \("):
            vips.owned(ip, "the VIP")
