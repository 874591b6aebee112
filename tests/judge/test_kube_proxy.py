"""The kube-proxy (a second authority for Services) judgement (pytest_kpr.judge.kube_proxy), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.kube_proxy import KubeProxyDaemonSet, KubeProxyInstalled, KubeProxyObservation

IP_VS = """IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port Forward Weight ActiveConn InActConn
TCP  0A600001:01BB rr
  -> AC120002:192B      Masq    1      0          0
UDP  0A60000A:0035 rr
FWM  00000102 rr
"""


def test_ip_vs_lists_each_virtual_service_and_refuses_unknown_lines() -> None:
    from pytest_kpr.parse import ParseError
    from pytest_kpr.parse.node import parse_ip_vs

    assert parse_ip_vs(IP_VS) == ["TCP 0A600001:01BB", "UDP 0A60000A:0035", "FWM 00000102"]
    assert parse_ip_vs(IP_VS.split("TCP")[0]) == [], "the header alone: IPVS loaded, no service"
    with pytest.raises(ParseError):
        parse_ip_vs(IP_VS + "something else\n")


@pytest.mark.parametrize(("daemonsets", "ipvs", "problems"), [
    ([], {"a": [], "b": []}, []),
    ([KubeProxyDaemonSet("kube-system", "kube-proxy", 3, 3)], {"a": []},
     ["DaemonSet kube-system/kube-proxy runs kube-proxy (3/3 pods ready) while KubeProxyReplacement is on: remove it the way Cilium documents"]),
    ([], {"a": ["TCP 0A600001:01BB"], "b": []}, ["a: 1 IPVS virtual services (TCP 0A600001:01BB)"]),
    ([], {"a": None}, ["a: /proc/net/ip_vs could not be read, so IPVS is not checked there"]),
    ([], {"a": [f"TCP {i}" for i in range(5)]}, ["a: 5 IPVS virtual services (TCP 0, TCP 1, TCP 2, ...)"]),
])
def test_a_second_authority_for_services_is_named(daemonsets: list[KubeProxyDaemonSet], ipvs: dict[str, list[str] | None], problems: list[str]) -> None:
    from pytest_kpr.judge.kube_proxy import ipvs_problems, kube_proxy_daemonset_problems

    seen = KubeProxyObservation(tuple(daemonsets), {n: None if v is None else tuple(v) for n, v in ipvs.items()})
    got = kube_proxy_daemonset_problems(seen.daemonsets) + ipvs_problems(seen)
    assert [g.split(" (kubectl")[0] for g in got] == problems


def test_kube_proxy_and_ipvs_messages_in_full() -> None:
    from pytest_kpr.judge.kube_proxy import KUBE_PROXY_REMOVAL, ipvs_problems, kube_proxy_daemonset_problems

    assert kube_proxy_daemonset_problems([KubeProxyDaemonSet("kube-system", "kube-proxy")]) == [
        f"DaemonSet kube-system/kube-proxy runs kube-proxy (0/0 pods ready) while KubeProxyReplacement is on: remove it the way Cilium "
        f"documents ({KUBE_PROXY_REMOVAL})"]
    assert ipvs_problems(KubeProxyObservation((), {"a": ("T 1", "T 2", "T 3")})) == ["a: 3 IPVS virtual services (T 1, T 2, T 3)"]
    assert ipvs_problems(KubeProxyObservation((), {"a": ("T 1", "T 2", "T 3", "T 4")})) == ["a: 4 IPVS virtual services (T 1, T 2, T 3, ...)"]


@pytest.mark.parametrize(("ds", "runs"), [
    ({"metadata": {"labels": {"k8s-app": "kube-proxy"}}}, True),  # kubeadm, kind
    ({"spec": {"template": {"spec": {"containers": [{"image": "registry.k8s.io/kube-proxy:v1.34.0"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "registry.k8s.io/kube-proxy@sha256:abc"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "example.com/k8s/kube-proxy"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "x/hyperkube:v1", "command": ["/usr/local/bin/kube-proxy", "--v=2"]}]}}}}, True),
    ({"spec": {"template": {"spec": {"initContainers": [{"image": "registry.k8s.io/kube-proxy:v1"}]}}}}, True),
    ({"metadata": {"labels": {"k8s-app": "cilium"}}, "spec": {"template": {"spec": {"containers": [{"image": "quay.io/cilium/cilium:v1.20.2",
                                                                                                   "command": ["cilium-agent"]}]}}}}, False),
    ({"spec": {"template": {"spec": {"containers": [{"image": "example.com/kube-proxy-exporter:1"}]}}}}, False),
    # a registry with a port, a tag and a digest together: the repository is what is left of the last ':' before the '@'
    ({"spec": {"template": {"spec": {"containers": [{"image": "my.registry:5000/kube-proxy:v1.34.0"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "my.registry:5000/k8s/kube-proxy:v1@sha256:ab@cd"}]}}}}, True),
    ({"spec": {"template": {"spec": {"containers": [{"image": "my.registry:5000/not-kube-proxy:v1"}]}}}}, False),
    ({}, False),
])
def test_a_kube_proxy_daemonset_is_known_by_label_image_or_command(ds: dict, runs: bool) -> None:
    from pytest_kpr.judge.kube_proxy import runs_kube_proxy

    assert runs_kube_proxy(ds) is runs


@pytest.mark.parametrize(("problems", "allow", "reason"), [
    ([], True, None),  # nothing found: nothing to accept
    (["DaemonSet a/b runs kube-proxy"], False, None),  # found, not accepted: the check fails
    (["DaemonSet a/b runs kube-proxy", "x"], True, "kube-proxy beside the replacement, accepted on purpose (--kpr-allow-kube-proxy): "
                                                   "DaemonSet a/b runs kube-proxy; x"),
])
def test_kube_proxy_is_accepted_only_on_purpose(problems: list[str], allow: bool, reason: str | None) -> None:
    from pytest_kpr.judge.kube_proxy import KUBE_PROXY_POLICY, kube_proxy_accepted

    assert kube_proxy_accepted(problems, allow) == reason
    assert "pytest-kpr's policy, not Cilium's" in KUBE_PROXY_POLICY and "--kpr-allow-kube-proxy" in KUBE_PROXY_POLICY


@pytest.mark.parametrize(("ds", "want"), [
    ({"metadata": {"namespace": "kube-system", "name": "kube-proxy"}, "status": {"desiredNumberScheduled": 3, "numberReady": 2}},
     KubeProxyDaemonSet("kube-system", "kube-proxy", 3, 2)),
    ({}, KubeProxyDaemonSet(None, None, 0, 0)),
    ({"metadata": None, "status": None}, KubeProxyDaemonSet(None, None, 0, 0)),
])
def test_a_daemonset_is_summarised_by_where_it_is_and_its_pods(ds: dict, want: KubeProxyDaemonSet) -> None:
    from pytest_kpr.judge.kube_proxy import daemonset_summary

    assert daemonset_summary(ds) == want


def test_the_observation_is_kubeproxy_json() -> None:
    assert KubeProxyObservation((KubeProxyDaemonSet("kube-system", "kube-proxy", 3, 2),), {"a": ("T 1",), "b": None}, 3).to_json() == {
        "daemonsets": [{"namespace": "kube-system", "name": "kube-proxy", "desired": 3, "ready": 2}], "ipvs": {"a": ["T 1"], "b": None},
        "kube_proxy_pods": 3}


def _installed(daemonset_problems: tuple[str, ...] = ("DaemonSet kpr-x/kube-proxy runs kube-proxy (3/3 pods ready) while ...",),
               with_rules: tuple[str, ...] = ("a", "b")) -> KubeProxyInstalled:
    return KubeProxyInstalled("registry.k8s.io/kube-proxy:v1.34.0", ("a", "b"), {"numberReady": 2}, daemonset_problems, ("r",), with_rules,
                              {"cleanup-a": "Succeeded"}, ())


def test_an_installed_kube_proxy_is_found_by_both_checks() -> None:
    from pytest_kpr.judge.kube_proxy import installed_detection_problems, installed_rule_coverage_problems

    assert installed_detection_problems(_installed()) == [] and installed_rule_coverage_problems(_installed()) == []
    assert installed_detection_problems(_installed(())) == ["the DaemonSet check found nothing while kube-proxy ran ({'numberReady': 2}): []"]
    assert installed_rule_coverage_problems(_installed(with_rules=("a",))) == [
        "its chains never showed on b, so the iptables check was not exercised there (kube-proxy ran: {'numberReady': 2})"]
    assert _installed().to_json() == {
        "image": "registry.k8s.io/kube-proxy:v1.34.0", "nodes": ["a", "b"], "daemonset": {"numberReady": 2},
        "detected": {"daemonset": ["DaemonSet kpr-x/kube-proxy runs kube-proxy (3/3 pods ready) while ..."], "rules": ["r"],
                     "nodes_with_rules": ["a", "b"]}, "cleanup_pods": {"cleanup-a": "Succeeded"}, "after_cleanup": []}
