"""The datapath rules (pytest_kpr.rules.datapath): every row has a source, the lookups answer what the rows say,
and the fake cluster follows them (the no-backend judgement's table: tests/judge/test_no_backend.py). No root, no pytester."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_kpr.rules.datapath import (
    ALL_RULES,
    PLANE_RULES,
    FormatRule,
    NoRule,
    Plane,
    PlaneRule,
    no_backend,
    plane_for,
)
from pytest_kpr.testing import FakeCluster, FakeConfig, Faults
from pytest_kpr.testing.reach import Outcome, reach

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "pytest_kpr"
_CILIUM_SOURCE = re.compile(r"cilium/cilium (bpf|pkg|daemon|cilium-dbg|Documentation)/\S+|github\.com/cilium/cilium/(issues|pull)/\d+")


def source_problems(rule: PlaneRule | FormatRule | object) -> list[str]:
    """A rule must name where in Cilium it was read (a path in cilium/cilium, or an issue/PR)."""
    src = getattr(rule, "source", "") or ""
    return [] if _CILIUM_SOURCE.search(src) else [f"{rule!r} has no cilium/cilium source"]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: getattr(r, "id", None) or "-".join(str(getattr(r, f, "")) for f in ("client", "access", "frontend", "coverage", "plane", "response") if hasattr(r, f)))
def test_every_rule_names_its_source_in_cilium(rule: object) -> None:
    assert source_problems(rule) == []


def test_the_source_check_catches_a_rule_without_one() -> None:
    bare = replace(PLANE_RULES[0], source="we believe so")
    assert source_problems(bare) and not source_problems(PLANE_RULES[0])


def test_rules_do_not_overlap() -> None:
    """At most one plane rule per concrete path: the first match must be the only match."""
    for cov in ("Full", "Hostns-only"):
        for mit in ("on", "off"):
            for client in ("pod", "host", "outside"):
                for access in ("connect", "raw"):
                    for fe in ("ClusterIP", "NodePort", "ExternalIP", "LoadBalancer"):
                        hits = [r for r in PLANE_RULES if r.matches(client, access, fe, cov, mit)]
                        assert len(hits) <= 1, hits


@pytest.mark.parametrize(
    ("client", "access", "frontend", "coverage", "mitigation", "plane"),
    [
        ("pod", "connect", "ClusterIP", "Full", "on", Plane.SOCKET),
        ("pod", "connect", "ClusterIP", "Hostns-only", "on", Plane.PER_PACKET),
        ("pod", "raw", "ClusterIP", "Full", "on", Plane.NONE),
        ("pod", "raw", "ClusterIP", "Hostns-only", "on", Plane.PER_PACKET),
        ("host", "connect", "ClusterIP", "Hostns-only", "on", Plane.SOCKET),
        ("host", "connect", "NodePort", "Full", "on", Plane.SOCKET),
        ("pod", "connect", "NodePort", "Full", "on", Plane.SOCKET),
        ("pod", "connect", "NodePort", "Hostns-only", "on", Plane.PER_PACKET),  # bpf_lxc for this node's address, else bpf_host there
        ("outside", "raw", "NodePort", "Full", "on", Plane.PER_PACKET),
        ("outside", "connect", "NodePort", "Hostns-only", "off", Plane.PER_PACKET),
        ("pod", "connect", "ExternalIP", "Full", "on", Plane.NONE),
        ("pod", "connect", "ExternalIP", "Full", "off", Plane.SOCKET),
        ("pod", "connect", "LoadBalancer", "Full", "on", Plane.SOCKET),
        ("pod", "connect", "ExternalIP", "Hostns-only", "on", Plane.PER_PACKET),  # bpf_lxc has no mitigation check
        ("pod", "connect", "ExternalIP", "Hostns-only", "off", Plane.PER_PACKET),
        ("pod", "connect", "LoadBalancer", "Hostns-only", "on", Plane.PER_PACKET),
    ],
)
def test_plane_for_each_path(client: str, access: str, frontend: str, coverage: str, mitigation: str, plane: Plane) -> None:
    assert plane_for(client, access, frontend, coverage, mitigation).plane is plane


@pytest.mark.parametrize(("args"), [("pod", "raw", "ExternalIP", "Full", "off"), ("host", "raw", "ClusterIP", "Full", "on"),
                                    ("pod", "raw", "NodePort", "Hostns-only", "on")])
def test_a_path_no_rule_covers_is_an_error_not_a_guess(args: tuple[str, ...]) -> None:
    with pytest.raises(NoRule, match="no sourced rule"):
        plane_for(*args)


@pytest.mark.parametrize(
    ("plane", "response", "curl", "connect", "raw", "icmp", "fast"),
    [
        (Plane.SOCKET, "reject", 7, {"unreachable"}, None, None, True),
        (Plane.SOCKET, "drop", 7, {"unreachable"}, None, None, True),  # the socket plane ignores the response mode
        (Plane.PER_PACKET, "reject", 7, {"refused"}, "icmp-unreachable", (3, 3), True),
        (Plane.PER_PACKET, "drop", 28, {"timeout"}, "timeout", None, False),
    ],
)
def test_no_backend_rules(plane: Plane, response: str, curl: int, connect: set[str], raw: str | None, icmp: tuple[int, int] | None,
                          fast: bool) -> None:
    r = no_backend(plane, response)
    assert (r.curl_exit, set(r.connect), r.raw, r.icmp, r.fast) == (curl, connect, raw, icmp, fast)
    assert "lb.h" in no_backend(Plane.PER_PACKET, "reject").source and "ICMP_PORT_UNREACH" in no_backend(Plane.PER_PACKET, "reject").source


@pytest.mark.parametrize(("kernel", "errnos"), [
    (None, {"EHOSTUNREACH"}),  # unknown kernel: the supported one
    ((6, 1), {"EHOSTUNREACH"}),  # the hook may set the errno from 6.1
    ((6, 1, 0), {"EHOSTUNREACH"}),
    ((6, 12, 107), {"EHOSTUNREACH"}),
    ((6, 0, 19), {"EPERM"}),  # 5.18-6.0 have bpf_set_retval, but not for cgroup sock_addr hooks
    ((5, 10), {"EPERM"}),
])
def test_the_socket_planes_errno_follows_the_client_nodes_kernel(kernel: tuple[int, ...] | None, errnos: set[str]) -> None:
    for response in ("reject", "drop"):
        r = no_backend(Plane.SOCKET, response, kernel=kernel)
        assert set(r.errnos) == errnos and r.plane is Plane.SOCKET and r.fast and r.curl_exit == 7


def test_the_set_retval_kernel_is_the_kernel_tables() -> None:
    from pytest_kpr.rules.datapath import SET_RETVAL_KERNEL
    from pytest_kpr.core.versions import kernel_tuple
    from pytest_kpr.rules.kernels import KernelTable

    feat = KernelTable.load(REPO / "clusters" / "kernels.yaml").features["sock_addr_set_retval"]
    assert kernel_tuple(feat.kernel) == SET_RETVAL_KERNEL and "filter.c" in feat.source


@pytest.mark.parametrize(("response", "owner", "raw", "connect", "curl", "fast"), [
    ("reject", "node", "reset", {"refused"}, 7, True),  # the node's stack owns its NodePort address and resets: no ICMP
    ("drop", "node", "reset", {"refused"}, 7, True),
    ("reject", "elsewhere", "timeout", {"timeout"}, 28, False),  # a ClusterIP, as addressed: nothing answers
    ("drop", "elsewhere", "timeout", {"timeout"}, 28, False),
])
def test_a_backendless_service_that_is_not_routable_continues_as_addressed(response: str, owner: str, raw: str, connect: set[str],
                                                                           curl: int, fast: bool) -> None:
    r = no_backend(Plane.PER_PACKET, response, routable=False, owner=owner)
    assert (r.raw, set(r.connect), r.curl_exit, r.icmp, r.fast) == (raw, connect, curl, None, fast)
    assert "handle_nonroutable_endpoints_v4" in r.source and "CTX_ACT_OK" in r.source
    assert owner == "node" or "bpf_lxc.c" in r.source
    assert no_backend(Plane.SOCKET, response, routable=False).errnos == {"EHOSTUNREACH"}, "the socket plane does not care"


def test_no_backend_has_no_rule_for_the_unlooked_up_path() -> None:
    with pytest.raises(NoRule):
        no_backend(Plane.NONE, "reject")


# -- the fake follows the rules --------------------------------------------------------------------

def ghost_cluster(**cfg: object) -> tuple[FakeCluster, str, int]:
    c = FakeCluster(FakeConfig(pod_ready_ticks=0, **cfg))  # type: ignore[arg-type]
    c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    svc = c.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ghost", "namespace": "t"},
                    "spec": {"type": "NodePort", "selector": {"app": "none"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    for _ in range(10):  # let the LB control plane's coalescing window close
        c.server_version()
    return c, svc["spec"]["clusterIP"], svc["spec"]["ports"][0]["nodePort"]


@pytest.mark.parametrize(
    ("cfg", "client", "access", "to", "expect"),
    [
        ({}, "pod", "connect", "cip", Outcome("unreachable", Plane.SOCKET, "EHOSTUNREACH", frontend="ClusterIP")),
        ({"no_backend_response": "drop"}, "pod", "connect", "cip", Outcome("unreachable", Plane.SOCKET, "EHOSTUNREACH", frontend="ClusterIP")),
        ({"cilium_version": "1.19.3"}, "pod", "connect", "cip", Outcome("unreachable", Plane.SOCKET, "EPERM", frontend="ClusterIP")),
        ({"cilium_version": "1.19.8"}, "pod", "connect", "cip", Outcome("unreachable", Plane.SOCKET, "EPERM", frontend="ClusterIP")),
        ({"cilium_version": "1.19.1"}, "pod", "connect", "cip", Outcome("unreachable", Plane.SOCKET, "EHOSTUNREACH", frontend="ClusterIP")),
        ({"cilium_version": "1.20.0"}, "pod", "connect", "cip", Outcome("unreachable", Plane.SOCKET, "EHOSTUNREACH", frontend="ClusterIP")),
        ({}, "pod", "raw", "cip", Outcome("timeout", Plane.NONE, frontend="ClusterIP")),
        ({"socket_lb_hostns_only": True}, "pod", "raw", "cip", Outcome("icmp", Plane.PER_PACKET, icmp=(3, 3), frontend="ClusterIP")),
        ({"socket_lb_hostns_only": True}, "pod", "connect", "cip",
         Outcome("refused", Plane.PER_PACKET, "ECONNREFUSED", icmp=(3, 3), frontend="ClusterIP")),
        ({"socket_lb_hostns_only": True, "no_backend_response": "drop"}, "pod", "connect", "cip", Outcome("timeout", Plane.PER_PACKET, frontend="ClusterIP")),
        ({}, "host", "raw", "np", Outcome("icmp", Plane.PER_PACKET, icmp=(3, 3), frontend="NodePort")),
        ({"no_backend_response": "drop"}, "host", "raw", "np", Outcome("timeout", Plane.PER_PACKET, frontend="NodePort")),
        # faults: each departs from one rule
        ({"faults": Faults(no_backend_silent_drop=True)}, "host", "raw", "np", Outcome("timeout", Plane.PER_PACKET, frontend="NodePort")),
        ({"faults": Faults(reject_icmp_code=1)}, "host", "raw", "np", Outcome("icmp", Plane.PER_PACKET, icmp=(3, 1), frontend="NodePort")),
        ({"no_backend_response": "drop", "faults": Faults(socket_lb_honours_drop=True)}, "pod", "connect", "cip",
         Outcome("timeout", Plane.SOCKET, frontend="ClusterIP")),
    ],
)
def test_the_fake_answers_a_backendless_service_by_the_rules(cfg: dict, client: str, access: str, to: str, expect: Outcome) -> None:
    c, cip, np = ghost_cluster(**cfg)
    ip, port = (cip, 80) if to == "cip" else (c.node_ip("fake-worker2"), np)
    assert reach(c, "fake-worker", host_network=client == "host", access=access, ip=ip, port=port) == expect


def test_externalips_from_pods_need_the_mitigation_off() -> None:
    """With the mitigation on, a pod's connection to a non-node externalIPs address is not translated: it
    goes to the address itself and nothing answers (what the old shared-VIP suite ran into)."""
    for mitigation, result in ((False, "answered"), (True, "timeout")):
        c = FakeCluster(FakeConfig(pod_ready_ticks=0, external_ip_mitigation=mitigation))
        c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
        c.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "t"},
                  "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}})
        c.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "t"},
                  "spec": {"selector": {"app": "web"}, "externalIPs": ["198.18.10.80"], "ports": [{"port": 80, "targetPort": 8080}]}})
        for _ in range(10):
            c.server_version()
        o = reach(c, "fake-worker", host_network=False, access="connect", ip="198.18.10.80", port=80)
        assert (o.result, o.plane) == (result, Plane.NONE if mitigation else Plane.SOCKET)
        assert c.agents["fake-worker"].handle(["cilium-dbg", "config", "-a"])[1].count(f"DisableExternalIPMitigation       : {str(not mitigation).lower()}") == 1


def test_a_path_without_a_rule_is_an_error_in_the_fake_too() -> None:
    c, cip, np = ghost_cluster(socket_lb_hostns_only=True)
    with pytest.raises(NoRule):
        reach(c, "fake-worker", host_network=True, access="raw", ip=cip, port=80)


# -- the fake's parts depend on a view of the cluster, not on fake.py ------------------------------------

def module_imports(path: Path) -> set[str]:
    """Every module a file imports, TYPE_CHECKING blocks included."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out.add(node.module or "")
    return out


def test_the_testing_package_has_no_import_cycle() -> None:
    mods = {p.stem: module_imports(p) & {q.stem for q in (PKG / "testing").glob("*.py")} for p in (PKG / "testing").glob("*.py")}

    def reach_from(start: str, seen: set[str]) -> set[str]:
        for m in mods.get(start, ()):
            if m not in seen:
                seen.add(m)
                reach_from(m, seen)
        return seen

    cycles = sorted(m for m in mods if m in reach_from(m, set()))
    assert cycles == [], f"modules in pytest_kpr/testing that import themselves through others: {cycles} ({mods})"
    assert "fake" not in set().union(*(v for k, v in mods.items() if k not in ("__init__", "provider"))), "only the package and the provider import fake"


def test_defaults_and_the_no_rule_messages() -> None:
    assert plane_for("pod", "connect", "ExternalIP", "Full").plane is Plane.NONE, "the mitigation is on unless said otherwise"
    with pytest.raises(NoRule) as e:
        no_backend(Plane.NONE, "drop")
    assert str(e.value) == "no sourced rule for a backendless service on the none plane with ServiceNoBackendResponse=drop"
    with pytest.raises(NoRule) as e:
        plane_for("host", "raw", "ClusterIP", "Full")
    assert str(e.value) == "no sourced rule for a raw from a host to a ClusterIP frontend (coverage Full, ExternalIP mitigation on)"


@pytest.mark.parametrize(("mode", "etp_local", "on_node", "routing", "sees"), [
    ("SNAT", False, False, "Tunnel", "cilium-internal-ip"),  # SNAT to IPV4_GATEWAY before the tunnel (nodeport.h)
    ("SNAT", False, False, "Native", "node"),  # SNAT to IPV4_DIRECT_ROUTING
    ("SNAT", False, True, "Tunnel", "client"),  # a local backend: no SNAT
    ("SNAT", False, True, "Native", "client"),
    ("SNAT", True, True, "Tunnel", "client"),  # eTP=Local: always local
    ("DSR", False, False, "Native", "client"),
    ("DSR", False, False, "Tunnel", "client"),
    ("Hybrid", False, False, "Native", "client"),  # TCP is DSR in hybrid mode
    ("DSR", True, True, "Native", "client"),
])
def test_the_address_a_backend_sees_follows_the_mode_the_routing_and_the_policy(mode: str, etp_local: bool, on_node: bool, routing: str,
                                                                                 sees: str) -> None:
    from pytest_kpr.rules.datapath import backend_sees

    rule = backend_sees(mode, etp_local, on_node, routing)
    assert rule.sees == sees
    if sees in ("node", "cilium-internal-ip"):
        assert "nodeport.h@00155816" in rule.source and "target.addr = IPV4_GATEWAY;" in rule.source


def test_an_unknown_nodeport_or_routing_mode_is_no_rule() -> None:
    from pytest_kpr.rules.datapath import backend_sees

    with pytest.raises(NoRule, match="NodePort mode ''"):
        backend_sees("", False, False, "Tunnel")
    with pytest.raises(NoRule, match="routing mode ''"):
        backend_sees("SNAT", False, False, "")
    assert backend_sees("", True, True).sees == "client", "eTP=Local needs no mode: the backend is local"


def test_the_external_scope_of_an_etp_local_service_holds_the_nodes_own_backends() -> None:
    from pytest_kpr.rules.datapath import external_backends
    from pytest_kpr.testing.view import FakeBackend

    bes = [FakeBackend("10.0.0.1", 80, "a", "p1"), FakeBackend("10.0.0.2", 80, "b", "p2")]
    assert external_backends(True, bes, "a") == bes[:1] and external_backends(True, bes, "c") == []
    assert external_backends(False, bes, "c") == bes


@pytest.mark.parametrize(("config", "file", "want"), [
    ("reject", None, ("reject", "config -a ServiceNoBackendResponse")),
    ("drop", "reject", ("drop", "config -a ServiceNoBackendResponse")),  # config -a is what the agent runs with
    (None, "drop", ("drop", "/tmp/cilium/config-map/service-no-backend-response")),
    ("Reject ", None, ("reject", "config -a ServiceNoBackendResponse")),
    ("", "drop", ("drop", "/tmp/cilium/config-map/service-no-backend-response")),
    (None, None, "neither `cilium-dbg config -a` (field ServiceNoBackendResponse) nor /tmp/cilium/config-map/service-no-backend-response has it;"),
    ("maybe", None, "has it (config -a ServiceNoBackendResponse: 'maybe');"),
])
def test_service_no_backend_response_is_read_never_assumed(config: str | None, file: str | None, want: object) -> None:
    from pytest_kpr.observe.readiness import no_backend_response_of
    from pytest_kpr.core.errors import FactsError

    if isinstance(want, tuple):
        assert no_backend_response_of(config, file, "1.20.5") == want
    else:
        with pytest.raises(FactsError) as e:
            no_backend_response_of(config, file, "1.20.5")
        assert str(e.value).startswith("Cilium 1.20.5 reports no ServiceNoBackendResponse (reject|drop)") and str(want) in str(e.value)


@pytest.mark.parametrize(("value", "version", "enabled"), [
    ("true", "1.18.14", True), ("True\n", "1.18.14", True), (None, "1.18.14", True), ("false", "1.18.14", False), (" FALSE ", "", False),
    # 1.19 removed the option: a value left in the config map is read by nothing (SRC_ITP_ALWAYS)
    ("false", "1.19.0", True), ("false", "1.20.5", True), ("false", "1.19.0-pre.1", True), (None, "1.20.5", True),
])
def test_internal_traffic_policy_is_off_only_when_an_agent_before_1_19_says_false(value: str | None, version: str, enabled: bool) -> None:
    from pytest_kpr.rules.datapath import itp_enabled

    assert itp_enabled(value, version) is enabled


@pytest.mark.parametrize(("itp_local", "node", "picked"), [
    (True, "worker", ["a"]),  # only the node's own backends (SRC_ITP_CLUSTER_IP)
    (True, "worker3", []),  # none on this node: the frontend has no backend (SRC_ITP_NO_LOCAL)
    (False, "worker3", ["a", "b", "c"]),  # Cluster: every backend
])
def test_a_cluster_ips_backends_under_internal_traffic_policy(itp_local: bool, node: str, picked: list[str]) -> None:
    from types import SimpleNamespace

    from pytest_kpr.rules.datapath import internal_backends

    bes = [SimpleNamespace(pod="a", node="worker"), SimpleNamespace(pod="b", node="worker2"), SimpleNamespace(pod="c", node="worker2")]
    assert [b.pod for b in internal_backends(itp_local, bes, node)] == picked


@pytest.mark.parametrize(("addresses", "v4", "v6"), [
    ([{"type": "InternalIP", "ip": "172.18.0.3"}, {"type": "CiliumInternalIP", "ip": "10.244.1.118"}], "10.244.1.118", ""),
    ([{"type": "CiliumInternalIP", "ip": "10.244.1.118"}, {"type": "CiliumInternalIP", "ip": "fd00:10:244:1::76"},
      {"type": "InternalIP", "ip": "fc00:f853:ccd:e793::3"}], "10.244.1.118", "fd00:10:244:1::76"),  # dual stack: ROUTER_IP too
    ([{"type": "CiliumInternalIP", "ip": "fd00:10:244:1::76"}], "", "fd00:10:244:1::76"),  # IPv6 only
    ([{"type": "InternalIP", "ip": "172.18.0.3"}], "", ""),
])
def test_each_nodes_cilium_host_address_is_read_per_family(addresses: list[dict], v4: str, v6: str) -> None:
    """The SNAT rule's address in tunnel routing is the receiving node's CiliumInternalIP of the request's family
    (IPV4_GATEWAY, ROUTER_IP: SRC_SNAT_ADDRESS, SRC_SNAT_ADDRESS6)."""
    from pytest_kpr.cluster.facts import NodeFacts
    from pytest_kpr.observe.readiness import _cilium_internal_ips

    class Kube:
        def list(self, kind: str) -> list[dict]:
            return [{"metadata": {"name": "w1"}, "spec": {"addresses": addresses}}]

    got = _cilium_internal_ips(Kube()).get("w1", {})
    node = NodeFacts("w1", "172.18.0.3", "6.8", cilium_internal_ip=got.get("IPv4", ""), cilium_internal_ip6=got.get("IPv6", ""))
    assert (node.cilium_internal_ip_of("IPv4"), node.cilium_internal_ip_of("IPv6")) == (v4, v6)


def _slice(family: str, endpoints: list[tuple[str, str | None, bool | None]], ports: tuple[int, ...] = (80,)) -> dict:
    return {"addressType": family, "ports": [{"port": p, "protocol": "TCP"} for p in ports],
            "endpoints": [{"addresses": [a], **({"nodeName": n} if n is not None else {}),
                           "conditions": {} if ready is None else {"ready": ready}} for a, n, ready in endpoints]}


# healthserver.txtar: 10.244.1.1 and .2 on testnode, .3 and .4 on othernode, one port -> 2 on testnode
TXTAR = _slice("IPv4", [("10.244.1.1", "testnode", True), ("10.244.1.2", "testnode", True),
                        ("10.244.1.3", "othernode", True), ("10.244.1.4", "othernode", True)])


@pytest.mark.parametrize(("slices", "node", "count"), [
    ([TXTAR], "testnode", 2),
    ([TXTAR], "othernode", 2),
    ([TXTAR], "thirdnode", 0),
    # a dual-stack pod: one backend per address
    ([_slice("IPv4", [("10.244.1.1", "n1", True)]), _slice("IPv6", [("fd00:10:244:1::1", "n1", True)])], "n1", 2),
    # two ports: one backend per address and port
    ([_slice("IPv4", [("10.244.1.1", "n1", True)], ports=(80, 443))], "n1", 2),
    # not ready (terminating or failing) is not active; ready unset is ready (EndpointConditions: nil means ready)
    ([_slice("IPv4", [("10.244.1.1", "n1", False), ("10.244.1.2", "n1", None)])], "n1", 1),
    # an endpoint without a node counts on every node (`inst.NodeName != ""` is the skip's first condition)
    ([_slice("IPv4", [("10.244.1.1", None, True)])], "n2", 1),
    # the same address:port in two slices is one backend
    ([TXTAR, TXTAR], "testnode", 2),
    ([], "n1", 0),
])
def test_the_health_server_counts_active_local_backends_per_address_and_port(slices: list[dict], node: str, count: int) -> None:
    from pytest_kpr.rules.datapath import local_endpoint_count

    assert local_endpoint_count(slices, node) == count


@pytest.mark.parametrize(("plane", "family", "configured", "sees", "source"), [
    (Plane.SOCKET, "IPv4", None, "10.244.1.10", "bpf_sock.c"),  # connected to itself: no NAT
    (Plane.SOCKET, "IPv6", "fe80::9", "fd00:10:244:1::a", "bpf_sock.c"),  # the loopback setting does not apply
    (Plane.PER_PACKET, "IPv4", None, "169.254.42.1", "bpf_lxc.c"),
    (Plane.PER_PACKET, "IPv6", None, "fe80::1", "bpf_lxc.c"),
    (Plane.PER_PACKET, "IPv4", " 169.254.99.1\n", "169.254.99.1", "bpf_lxc.c"),  # the agent's ipv4-service-loopback-address
])
def test_a_pod_reaching_itself_through_its_service_sees_the_source_its_plane_gives(plane: Plane, family: str, configured: str | None,
                                                                                  sees: str, source: str) -> None:
    from pytest_kpr.rules.datapath import hairpin_source

    own = "10.244.1.10" if family == "IPv4" else "fd00:10:244:1::a"
    rule = hairpin_source(plane, own, family, configured)
    assert rule.sees == sees and source in rule.source


def test_hairpin_has_no_rule_where_no_plane_translates() -> None:
    from pytest_kpr.rules.datapath import hairpin_source

    with pytest.raises(NoRule, match="no sourced rule for a pod reaching itself"):
        hairpin_source(Plane.NONE, "10.244.1.10", "IPv4")


@pytest.mark.parametrize(("files", "families"), [
    ({}, ("IPv4",)),
    ({"/tmp/cilium/config-map/enable-ipv4": "true", "/tmp/cilium/config-map/enable-ipv6": "true"}, ("IPv4", "IPv6")),
    ({"/tmp/cilium/config-map/enable-ipv4": "false", "/tmp/cilium/config-map/enable-ipv6": "true\n"}, ("IPv6",)),
    ({"/tmp/cilium/config-map/enable-ipv6": "false"}, ("IPv4",)),
    ({"/tmp/cilium/config-map/enable-ipv4": None, "/tmp/cilium/config-map/enable-ipv6": None}, ("IPv4",)),  # unreadable: the defaults
    ({"/tmp/cilium/config-map/enable-ipv4": " TRUE ", "/tmp/cilium/config-map/enable-ipv6": "True"}, ("IPv4", "IPv6")),
    ({"/tmp/cilium/config-map/enable-ipv4": "false", "/tmp/cilium/config-map/enable-ipv6": "false"}, ()),
    ({"/tmp/cilium/config-map/enable-ipv4": "yes"}, ()),  # only "true" is true
])
def test_the_agents_address_families_are_read_from_their_resolved_config(files: dict, families: tuple) -> None:
    from pytest_kpr.rules.datapath import ip_families

    assert ip_families(files) == families


@pytest.mark.parametrize(("acceleration", "kind_nodes", "dropped"), [
    ("Native", True, True), ("Best-Effort", True, True),  # XDP_TX through a kind node's veth (SRC_XDP_KIND)
    ("Native", False, False),  # a node with a real device: nothing more is needed
    ("Disabled", True, False), ("", True, False),  # no XDP: bpf_host forwards through the stack
])
def test_an_xdp_forward_to_another_node_is_dropped_only_on_kind(acceleration: str, kind_nodes: bool, dropped: bool) -> None:
    from pytest_kpr.rules.datapath import xdp_forward_dropped

    assert xdp_forward_dropped(acceleration, kind_nodes) is dropped


@pytest.mark.parametrize(("attach_mode", "datapath_mode", "where"), [
    ("tcx", "veth", ("tcx/ingress", False)), ("tc", "veth", ("clsact/ingress", True)), ("tc", "", ("clsact/ingress", True)),
    ("tcx", "netkit", ("netkit/peer", False)), ("tc", "netkit", ("netkit/peer", False)), ("tcx", "netkit-l2", ("netkit/peer", False)),
])
def test_the_endpoint_program_is_where_the_device_type_puts_it(attach_mode: str, datapath_mode: str, where: tuple) -> None:
    from pytest_kpr.rules.datapath import endpoint_attachment

    assert endpoint_attachment(attach_mode, datapath_mode) == where


@pytest.mark.parametrize(("plane", "family", "version", "judged"), [
    (Plane.PER_PACKET, "IPv6", "1.18.14", False),  # no IPv6 service loopback before 1.19 (SRC_HAIRPIN_LOOPBACK6)
    (Plane.PER_PACKET, "IPv6", "1.19.0", True), (Plane.PER_PACKET, "IPv6", "1.20.5", True),
    (Plane.PER_PACKET, "IPv6", "", True),  # unknown: judged
    (Plane.PER_PACKET, "IPv4", "1.18.14", True),  # IPv4 has had its loopback for years
    (Plane.SOCKET, "IPv6", "1.18.14", True),  # the socket plane needs no NAT
])
def test_the_ipv6_hairpin_per_packet_is_judged_from_1_19(plane: Plane, family: str, version: str, judged: bool) -> None:
    from pytest_kpr.rules.datapath import hairpin_unjudged

    why = hairpin_unjudged(plane, family, version)
    assert (why == "") is judged
    if not judged:
        assert "from 1.19" in why and version in why
