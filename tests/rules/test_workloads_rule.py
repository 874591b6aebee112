"""Which families the suites' own servers accept (rules.workloads), and the fake following it: a backend that listens on
IPv4 only refuses what an IPv6 frontend hands it. Table-driven, no root (the real-kernel proof is in
tests/test_realkernel_ipv6.py)."""

from __future__ import annotations

import pytest

from pytest_kpr.rules.workloads import BOTH, listen_address, logged_client, seen_by, server_families

V4, V6 = frozenset({"IPv4"}), frozenset({"IPv6"})


@pytest.mark.parametrize(("command", "families"), [
    (["python3", "-m", "http.server", "8080"], V4),  # getaddrinfo's first passive answer under glibc: 0.0.0.0
    (["python3", "-m", "http.server", "--bind", "::", "8080"], BOTH),  # DualStackServer clears IPV6_V6ONLY
    (["python3", "-m", "http.server", "-b", "::", "8080"], BOTH),
    (["python3", "-m", "http.server", "--bind=::", "8080"], BOTH),
    (["python3", "-m", "http.server", "--bind", "0.0.0.0", "8080"], V4),
    (["python3", "-m", "http.server", "--bind", "fd00::1", "8080"], V6),
    (["kpr", "probe", "echo-server", "--port", "5353"], V4),  # its --bind default is 0.0.0.0
    (["kpr", "probe", "echo-server", "--udp", "--port", "5353", "--bind", "::"], BOTH),
    (["kpr", "probe", "echo-server", "--port", "5353", "--bind", "10.0.0.1"], V4),
    (["sleep", "infinity"], BOTH),  # not a server the suites start: not modelled
    ([], BOTH),
])
def test_a_servers_command_decides_the_families_it_accepts(command: list[str], families: frozenset[str]) -> None:
    assert server_families(command) == families


@pytest.mark.parametrize(("families", "bind"), [(("IPv4",), None), (("IPv4", "IPv6"), "::"), (("IPv6",), "::"), (("IPv6", "IPv4"), "::")])
def test_the_lab_binds_both_families_when_the_run_tests_ipv6(families: tuple[str, ...], bind: str | None) -> None:
    assert listen_address(families) == bind


@pytest.mark.parametrize(("command", "client", "seen", "logged"), [
    (["python3", "-m", "http.server", "--bind", "::", "8080"], "172.18.0.1", "::ffff:172.18.0.1", "172.18.0.1"),
    (["python3", "-m", "http.server", "--bind", "::", "8080"], "fc00:f853:ccd:e793::1", "fc00:f853:ccd:e793::1", "fc00:f853:ccd:e793::1"),
    (["python3", "-m", "http.server", "8080"], "172.18.0.1", "172.18.0.1", "172.18.0.1"),
])
def test_an_ipv4_client_of_a_dual_stack_server_is_logged_mapped_and_read_back_plain(command: list[str], client: str, seen: str,
                                                                                      logged: str) -> None:
    assert seen_by(command, client) == seen
    assert logged_client(seen) == logged


@pytest.mark.parametrize(("text", "plain"), [("::ffff:10.0.0.1", "10.0.0.1"), ("10.0.0.1", "10.0.0.1"), ("fd00::1", "fd00::1"),
                                             ("::1", "::1"), ("not-an-address", "not-an-address")])
def test_logged_client_unmaps_only_ipv4_mapped_addresses(text: str, plain: str) -> None:
    assert logged_client(text) == plain


def test_the_fake_refuses_an_ipv6_connection_to_a_backend_listening_on_ipv4_only() -> None:
    """The fake follows the rule: the same dual-stack Service answers over IPv4 and refuses over IPv6 while its backend
    runs http.server without --bind ::, and answers both once it binds ::."""
    from pytest_kpr.testing import FakeCluster, FakeConfig
    from pytest_kpr.testing.reach import reach

    outcomes = {}
    for bind in ([], ["--bind", "::"]):
        f = FakeCluster(FakeConfig(workers=2, pod_ready_ticks=1, ip_families=("IPv4", "IPv6")))
        f.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
        f.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "t", "labels": {"app": "web"}},
                  "spec": {"nodeName": "fake-worker2", "containers": [{"name": "web", "image": "x",
                                                                       "command": ["python3", "-m", "http.server", *bind, "8080"]}]}})
        f.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "t"},
                  "spec": {"selector": {"app": "web"}, "ipFamilyPolicy": "PreferDualStack",
                           "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}})
        for _ in range(3):
            f.list("Pod", "t")
        svc = f.get("Service", "web", "t")
        assert svc is not None
        for ip in svc["spec"]["clusterIPs"]:
            outcomes[(bool(bind), ":" in ip)] = reach(f, "fake-worker", host_network=False, access="connect", ip=ip, port=80).result
    assert outcomes == {(False, False): "answered", (False, True): "refused", (True, False): "answered", (True, True): "answered"}
