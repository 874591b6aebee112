"""Agent and node handles against the fake cluster: they find the right pod, run the right command,
return typed results, and treat exit codes as results and transport failures as retryable."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_kpr.observe.agent import Agent, NoAgent, agents
from pytest_kpr.cluster.nodeshell import NODE_SHELL_LABEL, PodNodeRunner
from pytest_kpr.core.errors import CommandError, InfraError
from pytest_kpr.k8s.api import ExecResult
from pytest_kpr.observe.node import Node
from pytest_kpr.parse import CtEntry, parse_ct_list
from pytest_kpr.parse.addr import L3n4
from pytest_kpr.testing import FakeCluster, FakeConfig, Faults, render


def workload(f: FakeCluster, replicas: int = 2) -> None:
    f.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    f.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "t"},
              "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web"}]}}}})
    f.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "t"},
              "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    f.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-np", "namespace": "t"},
              "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080, "nodePort": 30780}]}})
    f.list("Pod", "t")


@pytest.fixture
def fake() -> FakeCluster:
    f = FakeCluster(FakeConfig(pod_ready_ticks=0))
    workload(f)
    return f


def test_agent_handle_reads_services_slots_and_frontends(fake: FakeCluster) -> None:
    a = Agent.on_node(fake, "fake-worker")
    web_ip = fake.get("Service", "web", "t")["spec"]["clusterIP"]
    pods = sorted(p["status"]["podIP"] for p in fake.list("Pod", "t", "app=web"))
    svc = next(s for s in a.services() if s.frontend == L3n4(web_ip, 80, "TCP"))
    assert (svc.namespace, svc.name, svc.type) == ("t", "web", "ClusterIP")
    assert sorted(b.address.ip for b in svc.backends) == pods
    text = {s.id: s for s in a.services_text()}
    assert sorted(b.address.ip for b in text[svc.id].backends) == pods
    slots = [e for e in a.lb_entries() if e.frontend == svc.frontend]
    assert sorted(e.slot for e in slots) == [0, 1, 2] and {e.revnat for e in slots} == {svc.id}
    np = [f for f in a.frontends() if f.address == L3n4("0.0.0.0", 30780, "TCP")]
    assert len(np) == 1 and np[0].status == "Done" and np[0].service == "t/web-np"
    st = a.status_text()
    assert st.kube_proxy_replacement == "True" and st.kpr_details and st.kpr_details.socket_lb_coverage == "Full"


def test_agent_handle_on_cilium_116_reads_addresses_without_protocol() -> None:
    f = FakeCluster(FakeConfig(cilium_version="1.16.19", pod_ready_ticks=0, attach_mode="tc"))
    workload(f)
    a = Agent.on_node(f, "fake-worker")
    assert all(s.frontend.proto is None for s in a.services_text())
    assert all(e.frontend.proto is None for e in a.lb_entries())
    with pytest.raises(CommandError, match='table "frontends" not found'):
        a.frontends()
    (ep,) = [e for e in f.endpoints_on("fake-worker")][:1]
    assert f"cilium_policy_{ep['id']:05d}" in {m.name for m in a.maps()}, "1.16 policy maps have no _v2"


def test_endpoint_and_policy_map_of_a_pod(fake: FakeCluster) -> None:
    pod = fake.list("Pod", "t", "app=web")[0]
    cep = fake.get("CiliumEndpoint", pod["metadata"]["name"], "t")
    a = Agent.on_node(fake, pod["spec"]["nodeName"])
    ep = a.endpoint(cep["status"]["id"])
    assert (ep.pod_name, ep.namespace, ep.ipv4) == (pod["metadata"]["name"], "t", pod["status"]["podIP"])
    assert ep.interface_name and ep.interface_name.startswith("lxc") and ep.interface_index
    assert f"cilium_policy_v2_{ep.id:05d}" in {m.name for m in a.maps()}
    with pytest.raises(CommandError, match="404"):
        a.endpoint(99999)


def test_agent_conntrack_is_strict_about_the_version_tail(fake: FakeCluster) -> None:
    entry = {"proto": "TCP", "dir": "OUT", "src_ip": "10.244.1.5", "src_port": 40404, "dst_ip": "10.244.2.10", "dst_port": 8080}
    fake.ct["fake-worker"] = [entry]
    a = Agent.on_node(fake, "fake-worker")
    assert fake.version.minor_series == "1.20", "the fake runs the default pin (NatPort tail since 1.19)"
    (e,) = a.conntrack(version=(1, 20))
    assert (e.src, e.dst, e.dir) == ("10.244.1.5:40404", "10.244.2.10:8080", "OUT")
    with pytest.raises(Exception, match="differs from the dump"):
        a.conntrack(version=(1, 18))


def test_ct_entries_are_immutable_and_equal_to_plain_construction() -> None:
    line = render.ct_list([[{"proto": "UDP", "dir": "IN", "src_ip": "fd00::1", "src_port": 53, "dst_ip": "fd00::2", "dst_port": 9}]])
    (e,) = parse_ct_list(line)
    assert type(e) is CtEntry
    values = [getattr(e, f.name) for f in dataclasses.fields(CtEntry)]
    assert e == CtEntry(*values) and hash(e) == hash(CtEntry(*values))
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.dst_port = 1  # type: ignore[misc]


def test_no_agent_on_an_unknown_node(fake: FakeCluster) -> None:
    with pytest.raises(NoAgent, match="no running cilium-agent pod on node nope"):
        Agent.on_node(fake, "nope")
    assert sorted(a.node for a in agents(fake)) == fake.node_names()


def test_exit_codes_are_results_but_transport_errors_are_retried(fake: FakeCluster) -> None:
    calls = {"n": 0}
    real_exec = fake.exec

    def flaky(ns, pod, argv, container=None, timeout=60.0):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] <= 2:
            raise InfraError("exec stream broke: connection reset")
        return real_exec(ns, pod, argv, container, timeout)

    fake.exec = flaky  # type: ignore[method-assign]
    a = Agent.on_node(fake, "fake-worker")
    assert a.version().daemon == "1.20.2" and calls["n"] >= 3
    n = calls["n"]
    with pytest.raises(CommandError, match="unknown command"):
        a.run("no", "such", "command")
    assert calls["n"] == n + 1, "a non-zero exit is not retried"


def test_node_handle_reads_rules_sockets_attachments_and_http(fake: FakeCluster) -> None:
    node = Node(fake, "fake-worker")
    dumps = node.rule_dumps()
    assert set(dumps) == {"iptables-nft", "iptables-legacy", "ip6tables-nft", "ip6tables-legacy", "nft"}
    assert all(d.count("KUBE-SVC") == 0 for d in dumps.values())
    assert dumps["iptables-nft"].count("CILIUM") > 0, "Cilium's own chains are there"
    assert node.listening(30780) == [] and node.listening(10250)[0].local == "0.0.0.0:10250"
    ep = fake.endpoints_on("fake-worker")[0]
    (att,) = node.bpf_attachments(ep["ifname"])
    assert (att.attach, att.program, att.is_tcx) == ("tcx/ingress", "cil_from_container", True)
    assert node.tc_filters(ep["ifname"]) == [], "tc does not show tcx attachments"
    r = node.http_get(f"http://{fake.node_ip('fake-worker')}:30780/")
    assert (r.exit_code, r.http_code) == (0, 200)
    assert node.kernel() == "6.8.0-49-generic"


def test_node_handle_sees_kube_proxy_rules_when_they_are_there() -> None:
    f = FakeCluster(FakeConfig(pod_ready_ticks=0, faults=Faults(kube_proxy_rules="legacy")))
    workload(f)
    dumps = Node(f, "fake-worker").rule_dumps()
    assert dumps["iptables-nft"].count("KUBE-SVC") == 0 and dumps["nft"].count("KUBE-SVC") == 0
    web_ip = f.get("Service", "web", "t")["spec"]["clusterIP"]
    assert dumps["iptables-legacy"].count("KUBE-SVC") > 0 and dumps["iptables-legacy"].count_token(web_ip) == 1


def test_legacy_tc_attachment_shows_in_tc_too() -> None:
    f = FakeCluster(FakeConfig(pod_ready_ticks=0, attach_mode="tc"))
    workload(f)
    ep = f.endpoints_on("fake-worker")[0]
    node = Node(f, "fake-worker")
    (att,) = node.bpf_attachments(ep["ifname"])
    assert (att.attach, att.name, att.program) == ("clsact/ingress", f"cil_from_container-{ep['ifname']}", "cil_from_container")
    assert len(node.tc_filters(ep["ifname"])) == 2


def test_pod_node_runner_creates_one_privileged_host_pod_per_node(fake: FakeCluster) -> None:
    made: list[str] = []

    def namespace() -> str:
        made.append("kpr-nodeshell-x")
        fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kpr-nodeshell-x"}})
        return "kpr-nodeshell-x"

    runner = PodNodeRunner(fake, namespace, "busybox:1.36.1", ready_timeout=5)
    r = runner.run("fake-worker2", ["uname", "-r"])
    assert isinstance(r, ExecResult) and r.ok and r.stdout.strip() == "6.8.0-49-generic" and r.where == "node fake-worker2"
    runner.run("fake-worker2", ["ss", "-Htln"])
    runner.run("fake-worker", ["ss", "-Htln"])
    assert made == ["kpr-nodeshell-x"], "one namespace for all node shells"
    pods = fake.list("Pod", "kpr-nodeshell-x")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["fake-worker", "fake-worker2"]
    spec = pods[0]["spec"]
    assert spec["hostNetwork"] and spec["hostPID"] and spec["containers"][0]["securityContext"] == {"privileged": True}
    assert all(NODE_SHELL_LABEL in p["metadata"]["labels"] for p in pods)
    assert Node(runner, "fake-worker").iptables("nft") is not None


@pytest.mark.parametrize(("nodes", "distinct"), [
    (["kind-worker", "kind-worker2"], True),
    # names that share the first 52 characters: each still gets its own shell
    (["ip-10-0-0-1.eu-west-1.compute.internal-pool-general-purpose-a", "ip-10-0-0-1.eu-west-1.compute.internal-pool-general-purpose-b"], True),
    (["a" * 70, "a" * 71], True),
    (["Node_With.Upper", "node-with-upper"], True),  # not a valid pod name as it is: made one, and still distinct
])
def test_node_shell_names_are_valid_and_never_shared(nodes: list[str], distinct: bool) -> None:
    import re

    from pytest_kpr.cluster.nodeshell import node_shell_name

    names = [node_shell_name(n) for n in nodes]
    assert all(len(n) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n) for n in names), names
    assert (len(set(names)) == len(names)) is distinct, names
