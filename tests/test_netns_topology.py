"""The real-kernel tier's namespaces: built, reachable only inside, and gone afterwards."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

import pytest
from netns import SUBNET_INDEXES, can_use_netns, leftovers, three_namespaces, wait_listening


def test_every_ipv6_subnet_a_topology_can_draw_is_written_as_the_kernel_prints_it() -> None:
    """The IPv6 tests compare a probe's source (the kernel's text) with the topology's prefix + "1": the two must agree for
    every index (index 0 gave ``fd00:250:0::1``, printed ``fd00:250::1``)."""
    odd = [i for i in SUBNET_INDEXES for host in ("1", "2") if str(ipaddress.ip_address(f"fd00:250:{i}::{host}")) != f"fd00:250:{i}::{host}"]
    assert odd == [], f"subnet indexes whose IPv6 text is not canonical: {odd}"
    assert str(ipaddress.ip_address("fd00:250:0::1")) != "fd00:250:0::1"  # the case the range leaves out


@pytest.fixture
def topo(tmp_path: Path):  # type: ignore[no-untyped-def]
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path)
    yield t
    t.close()


@pytest.mark.netns
def test_client_reaches_server_through_the_node_and_the_host_has_no_route(topo) -> None:  # type: ignore[no-untyped-def]
    server_ip = f"{topo.subnets['right']}.2"
    topo.spawn("server", [sys.executable, "-m", "http.server", "8080", "--bind", server_ip])
    wait_listening(topo, "server", 8080)
    r = topo.exec("client", "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", f"http://{server_ip}:8080/")
    assert r.stdout == "200"
    refused = topo.exec("client", "curl", "-sS", "--max-time", "5", f"http://{server_ip}:9090/", check=False)
    assert refused.returncode == 7, refused.stderr  # RST from the kernel: connection refused at once
    host_route = topo.exec("client", "ip", "route", "get", "1.1.1.1", check=False)
    assert host_route.returncode != 0, "the client namespace must have no default route"


@pytest.mark.netns
def test_close_removes_namespaces_and_stops_processes(tmp_path: Path) -> None:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = three_namespaces(tmp_path)
    p = t.spawn("server", [sys.executable, "-c", "import time; time.sleep(60)"])
    names = list(t.namespaces)
    assert all(n in leftovers() for n in names)
    t.close()
    assert p.poll() is not None
    assert not set(names) & set(leftovers())
