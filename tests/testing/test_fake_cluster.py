"""The in-memory fake cluster behaves like a cluster, not like a stub: state in, state out."""

from __future__ import annotations

import pytest

from pytest_kpr.observe.agent import Agent, agents
from pytest_kpr.core.errors import ApiError
from pytest_kpr.testing import FakeCluster, FakeConfig

WEB = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "t"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "x"}]}},
    },
}


def svc(name: str, type_: str = "ClusterIP", selector: dict | None = None, node_port: int | None = None) -> dict:
    port: dict = {"port": 80, "targetPort": 8080, "protocol": "TCP"}
    if node_port:
        port["nodePort"] = node_port
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "t"},
        "spec": {"type": type_, "selector": selector or {"app": "web"}, "ports": [port]},
    }


@pytest.fixture
def fake() -> FakeCluster:
    f = FakeCluster(FakeConfig(workers=2, pod_ready_ticks=3))
    f.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    return f


def ready_ips(fake: FakeCluster, service: str) -> list[str]:
    (es,) = fake.list("EndpointSlice", "t", f"kubernetes.io/service-name={service}")
    return sorted(a for e in es["endpoints"] if e["conditions"]["ready"] for a in e["addresses"])


def test_deployment_pods_are_spread_over_workers_and_become_ready(fake: FakeCluster) -> None:
    fake.create(WEB)
    pods = fake.list("Pod", "t", "app=web")
    assert len(pods) == 2
    assert {p["spec"]["nodeName"] for p in pods} == {"fake-worker", "fake-worker2"}
    assert all(p["status"]["podIP"].startswith("10.244.") for p in pods)
    assert not any(FakeCluster.pod_ready(p) for p in pods)
    for _ in range(3):
        pods = fake.list("Pod", "t", "app=web")
    assert all(FakeCluster.pod_ready(p) for p in pods)


def test_endpointslices_follow_ready_pods_through_a_scale(fake: FakeCluster) -> None:
    fake.create(WEB)
    s = fake.create(svc("web"))
    assert s["spec"]["clusterIP"].startswith("10.96.")
    assert ready_ips(fake, "web") == []
    for _ in range(3):
        fake.list("Pod", "t")
    assert len(ready_ips(fake, "web")) == 2
    fake.patch("Deployment", "web", "t", {"spec": {"replicas": 4}})
    assert len(fake.list("Pod", "t", "app=web")) == 4
    assert len(ready_ips(fake, "web")) == 2  # the new pods are not Ready yet
    for _ in range(3):
        fake.list("Pod", "t")
    assert len(ready_ips(fake, "web")) == 4
    (es,) = fake.list("EndpointSlice", "t", "kubernetes.io/service-name=web")
    assert es["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]


def _slice(name: str, service: str, ip: str, node: str = "fake-worker", **conditions: bool) -> dict:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": "t", "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": [{"addresses": [ip], "nodeName": node, "conditions": conditions}],
            "ports": [{"name": "", "port": 8080, "protocol": "TCP"}]}


def test_a_selectorless_service_is_served_from_the_endpointslice_added_by_hand(fake: FakeCluster) -> None:
    """What a new contributor tried: the API lists the slice back, and the agents serve the Service from it, as Cilium's
    agents read EndpointSlices (no pods involved)."""
    s = fake.create({**svc("ext"), "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}]}})
    fake.create(_slice("ext-1", "ext", "192.0.2.10"))
    assert [es["metadata"]["name"] for es in fake.list("EndpointSlice", "t", "kubernetes.io/service-name=ext")] == ["ext-1"]
    assert fake.get("EndpointSlice", "ext-1", "t")["endpoints"][0]["addresses"] == ["192.0.2.10"]
    fes = [fe for fe in fake.lb.frontends("fake-worker") if fe.ip == s["spec"]["clusterIP"]]
    assert [(b.ip, b.port, b.node, b.state) for fe in fes for b in fe.backends] == [("192.0.2.10", 8080, "fake-worker", "active")]
    fake.delete("EndpointSlice", "ext-1", "t")
    assert fake.list("EndpointSlice", "t", "kubernetes.io/service-name=ext") == []
    assert [b for fe in fake.lb.frontends("fake-worker") if fe.ip == s["spec"]["clusterIP"] for b in fe.backends] == []


@pytest.mark.parametrize(("conditions", "state"), [
    ({}, "active"),  # no conditions: ready (discovery/v1: nil is ready)
    ({"ready": True}, "active"),
    ({"ready": False, "serving": True, "terminating": True}, "terminating"),
    # in the service entry's inactive tail: a slot beyond the count (restore-terminating-backend.txtar@0725568c)
    ({"ready": False, "serving": False, "terminating": True}, "terminating-not-serving"),
    ({"ready": False}, None),  # maintenance: no slot
])
def test_an_added_endpoints_conditions_decide_whether_it_takes_a_slot(fake: FakeCluster, conditions: dict, state: str | None) -> None:
    s = fake.create({**svc("ext"), "spec": {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}]}})
    fake.create(_slice("ext-1", "ext", "192.0.2.10", **conditions))
    for _ in range(3):  # the control plane's coalescing window closes (3 ticks)
        fake.list("Pod", "t")
    (fe,) = [fe for fe in fake.lb.frontends("fake-worker") if fe.ip == s["spec"]["clusterIP"]]
    assert [b.state for b in fe.backends + fe.draining] == ([state] if state else [])


def test_a_slice_added_beside_the_controllers_adds_its_backends(fake: FakeCluster) -> None:
    fake.create(WEB)
    s = fake.create(svc("web"))
    for _ in range(3):
        fake.list("Pod", "t")
    fake.create(_slice("web-extra", "web", "192.0.2.20", node="fake-worker2"))
    assert len(fake.list("EndpointSlice", "t", "kubernetes.io/service-name=web")) == 2
    (fe,) = [fe for fe in fake.lb.frontends("fake-worker") if fe.ip == s["spec"]["clusterIP"]]
    assert "192.0.2.20" in [b.ip for b in fe.backends] and len(fe.backends) == 3


def test_nodeports_are_allocated_and_conflicts_refused(fake: FakeCluster) -> None:
    a = fake.create(svc("a", "NodePort"))
    assert 30000 <= a["spec"]["ports"][0]["nodePort"] <= 32767
    fake.create(svc("b", "NodePort", node_port=30780))
    with pytest.raises(ApiError, match="provided port is already allocated"):
        fake.create(svc("c", "NodePort", node_port=30780))


def test_objects_in_a_missing_namespace_are_refused_and_namespace_delete_cascades(fake: FakeCluster) -> None:
    with pytest.raises(ApiError, match='namespaces "nope" not found'):
        fake.create({**svc("x"), "metadata": {"name": "x", "namespace": "nope"}})
    fake.create(WEB)
    fake.delete("Namespace", "t")
    assert fake.list("Pod", "t") == []


def test_agents_answer_in_real_formats_and_fall_back_to_the_old_binary_name() -> None:
    fake = FakeCluster(FakeConfig(agent_binary="cilium", cilium_version="1.16.19", no_backend_response="drop"))
    (a,) = [x for x in agents(fake) if x.node == "fake-worker"]
    assert a.detect_binary() == "cilium"
    st = a.status()
    assert st.healthy and st.kpr.enabled and st.kpr.socket_lb_coverage == "Full"
    assert a.version().daemon == "1.16.19"
    assert a.config().service_no_backend_response == "drop"


def test_agent_not_ready_until_it_has_been_polled_enough() -> None:
    fake = FakeCluster(FakeConfig(agent_ready_after=2))
    a = Agent.on_node(fake, "fake-worker")
    r = a.exec(["cilium-dbg", "status", "-o", "json"])
    assert r.returncode == 1 and "cilium.sock" in r.stderr
    a.exec(["cilium-dbg", "status", "-o", "json"])
    assert a.status().healthy


def test_unknown_node_or_command_fails_like_docker_exec(fake: FakeCluster) -> None:
    assert fake.run("nope", ["true"]).returncode == 1
    r = fake.run("fake-worker", ["bpftrace", "-l"])
    assert r.returncode == 127 and "executable file not found" in r.stderr


def test_the_fakes_kube_proxy_nftables_table_has_the_captured_shape() -> None:
    """The fault "kube-proxy in nftables mode" prints the table the way nft does (tests/data/local sample,
    captured by scripts/capture_local_samples.sh from scripts/kube-proxy-nftables.nft on a real kernel)."""
    import re
    from pathlib import Path

    from pytest_kpr.testing import Faults

    def shape(text: str) -> set[str]:
        text = re.sub(r"\b[A-Z0-9]{8}-", "H-", text)
        text = re.sub(r"\d+\.\d+\.\d+\.\d+(/\d+)?", "IP", text)
        text = re.sub(r"(?<=[-/ ])\w[\w.-]*/web/tcp/http", "NS/web/tcp/http", text)
        return {re.sub(r"\b\d+\b", "N", line.strip()) for line in text.splitlines() if line.strip()}

    c = FakeCluster(FakeConfig(pod_ready_ticks=0, faults=Faults(kube_proxy_rules="nftables")))
    c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}})
    c.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"},
              "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}})
    c.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "demo"},
              "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30780}]}})
    rendered = c.node_tools.nft_ruleset("fake-worker")
    fake_table = rendered[rendered.index("table ip kube-proxy"):]
    sample = (Path(__file__).parent.parent / "data" / "local" / "nft-kube-proxy-nftables-mode.txt").read_text()
    assert shape(fake_table) == shape(sample)


def test_the_lb_control_plane_window_closes_with_wall_time_as_ciliums_does() -> None:
    """Cilium flushes its reflector buffer on a 500 ms ticker (wall time), so the fake's LB clock advances with
    its clock too (virtual: advanced by whoever waits on the fake): a Service is processed after its window however
    few calls were made, and also after enough calls however little time passed."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "w", "namespace": "t"},
           "spec": {"type": "ClusterIP", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}
    for wait_by in ("wall", "calls"):
        fake = FakeCluster(FakeConfig(lb_window_ticks=6))  # a 600 ms window (6 ticks of 100 ms)
        fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
        agent = agents(fake)[0]
        fake.create(svc)
        ip = fake.get("Service", "w", "t")["spec"]["clusterIP"]  # type: ignore[index]

        def done(agent: Agent = agent, ip: str = ip) -> bool:
            return any(f.address.ip == ip and f.status == "Done" for f in agent.frontends())

        assert not done(), "not processed within its window"
        if wait_by == "wall":
            fake.clock.sleep(0.65)
        else:
            for _ in range(6):
                fake.list("Node")
        assert done(), wait_by
