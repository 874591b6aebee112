"""The fake's agents write the maps Cilium's reconciler would write for the same objects.

The fake cluster's agents derive their frontends through pytest_kpr.testing.lbcp's conversions and selection, then
keep their own bookkeeping (the shared-VIP ownership model, the faults, the IDs of a whole cluster). Here a fake cluster
is built, and lbcp's Agent -- the control plane that answers Cilium's own scripts -- is fed the very Services,
EndpointSlices and Pods the fake's API lists, with the node's addresses and labels: both dumps (lb/maps-dump) must hold
the same entries. IDs are the one thing compared by meaning, not by number (a cluster-wide allocator against one per
agent): each ID is replaced by the address it names.
"""

from __future__ import annotations

import ipaddress
import re

import pytest

from pytest_kpr.testing import FakeCluster, FakeConfig
from pytest_kpr.testing.lb import agent_config
from pytest_kpr.testing.lbcp import Agent
from pytest_kpr.testing.lbcp.tables import NodeAddress

NODE = "fake-worker"


def _svc(name: str, spec: dict, annotations: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "t", "annotations": annotations or {}},
            "spec": {"selector": {"app": "web"}, **spec}}


SERVICES = [
    _svc("cip", {"ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
    _svc("np-local", {"type": "NodePort", "externalTrafficPolicy": "Local",
                      "ports": [{"name": "http", "port": 81, "targetPort": 8080, "protocol": "TCP"}]}),
    _svc("np-itp", {"type": "NodePort", "internalTrafficPolicy": "Local",
                    "ports": [{"name": "http", "port": 82, "targetPort": 8080, "protocol": "TCP"}]}),
    _svc("aff", {"sessionAffinity": "ClientIP", "ports": [{"name": "http", "port": 83, "targetPort": 8080, "protocol": "TCP"}]}),
    _svc("udp-tcp", {"ports": [{"name": "dns", "port": 53, "targetPort": 8080, "protocol": "UDP"},
                               {"name": "dns-tcp", "port": 53, "targetPort": 8080, "protocol": "TCP"}]}),
    _svc("eip", {"externalIPs": ["198.18.22.40"], "ports": [{"name": "http", "port": 84, "targetPort": 8080, "protocol": "TCP"}]}),
    _svc("lb-ranges", {"type": "LoadBalancer", "loadBalancerSourceRanges": ["192.0.2.0/24"], "externalIPs": ["198.18.22.41"],
                       "ports": [{"name": "http", "port": 85, "targetPort": 8080, "protocol": "TCP"}]},
         {"service.cilium.io/src-ranges-policy": "deny"}),
    _svc("lb-local", {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "trafficDistribution": "PreferClose",
                      "ports": [{"name": "http", "port": 86, "targetPort": 8080, "protocol": "TCP"}]}),
]
#: a selectorless Service and its hand-written EndpointSlice, one endpoint in each state the conditions give
MANUAL = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual", "namespace": "t"},
          "spec": {"type": "NodePort", "externalTrafficPolicy": "Local", "ports": [{"name": "http", "port": 87, "protocol": "TCP"}]}}
MANUAL_SLICE = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "manual-1", "namespace": "t", "labels": {"kubernetes.io/service-name": "manual"}},
                "addressType": "IPv4", "ports": [{"name": "http", "port": 9090, "protocol": "TCP"}],
                "endpoints": [{"addresses": ["192.0.2.10"], "nodeName": NODE, "conditions": {"ready": True}},
                              {"addresses": ["192.0.2.11"], "nodeName": NODE,
                               "conditions": {"ready": False, "serving": True, "terminating": True}},
                              {"addresses": ["192.0.2.12"], "nodeName": NODE,
                               "conditions": {"ready": False, "serving": False, "terminating": True}},
                              {"addresses": ["192.0.2.13"], "nodeName": NODE, "conditions": {"ready": False}}]}
POOL = {"apiVersion": "cilium.io/v2", "kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "pool"},
        "spec": {"blocks": [{"cidr": "198.18.30.0/28"}]}}
HOSTPORT = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hp", "namespace": "t", "labels": {"app": "hp"}},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 8080, "hostPort": 8081}]}]}}


def _cluster(cfg: FakeConfig) -> FakeCluster:
    f = FakeCluster(cfg)
    f.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    f.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "t"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "x"}]}}}})
    f.create(POOL)
    f.create(HOSTPORT)
    for s in [*SERVICES, MANUAL, MANUAL_SLICE]:
        f.create(s)
    for _ in range(6):  # the pods become Ready and the control plane's window closes
        f.list("Pod", "t")
    return f


def _normalized(dump: str) -> list[str]:
    """The dump's lines with each service ID replaced by its frontend's address (its REV entry, and /i for the
    internal scope's) and each backend ID by the backend's address."""
    lines = dump.splitlines()
    backends = {m[1]: m[2] for line in lines if (m := re.match(r"BE: ID=(\d+) ADDR=(\S+)", line))}
    services = {}
    for line in lines:
        if (m := re.match(r"SVC: ID=(\d+) ADDR=(\S+) SLOT=0 ", line)) and m[1] != "0":
            services[m[1]] = m[2]
    out = []
    for line in lines:
        line = re.sub(r"BEID=(\d+)", lambda m: f"BE={backends[m[1]]}", line)
        line = re.sub(r"INNER=\[(.*)\]", lambda m: "INNER=[" + ", ".join(
            sorted(re.sub(r"^(\d+)", lambda n: backends[n[1]], x) for x in m[1].split(", "))) + "]", line)
        if line.startswith("BE: "):
            line = re.sub(r"ID=\d+ ", "", line)
        elif line.startswith("REV: "):
            line = re.sub(r"ID=(\d+)", lambda m: f"FE={services.get(m[1], '?')}", line)
        else:
            line = re.sub(r"^(SVC|MAGLEV|AFF|SRCRANGE): ID=(\d+)", lambda m: f"{m[1]}: FE={services.get(m[2], m[2])}", line)
        out.append(line)
    return sorted(out)


def _lbcp_dump(f: FakeCluster, node: str) -> str:
    agent = Agent(agent_config(f.cfg, node))
    addrs = [NodeAddress(ipaddress.ip_address(f.node_ip_of(node, fam)), nodeport=True, primary=True, device="eth0")
             for fam in f.cfg.ip_families]
    agent.set_node_addresses(addrs)
    agent.set_node_labels(f.node_labels(node))
    for kind in ("Service", "EndpointSlice", "Pod"):
        for obj in f.list(kind, "t"):
            agent.k8s_upsert({**obj, "kind": kind})
    agent.start()
    agent.sync()
    return "".join(line + "\n" for line in agent.maps.dump())


@pytest.mark.parametrize("cfg", [
    FakeConfig(workers=2, pod_ready_ticks=1),
    FakeConfig(workers=2, pod_ready_ticks=1, cilium_version="1.18.14"),
    FakeConfig(workers=2, pod_ready_ticks=1, lb_algorithm="Maglev"),
    FakeConfig(workers=2, pod_ready_ticks=1, ip_families=("IPv4", "IPv6")),
    FakeConfig(workers=2, pod_ready_ticks=1, service_topology=True),
    FakeConfig(workers=2, pod_ready_ticks=1, nodeport_mode="DSR", lb_source_range_all_types=True),
    FakeConfig(workers=2, pod_ready_ticks=1, nodeport_mode="Hybrid", cilium_version="1.19.8"),
], ids=["default", "1.18", "maglev", "dual-stack", "topology", "dsr-all-types", "hybrid-1.19"])
def test_the_fake_agents_maps_are_what_ciliums_reconciler_writes(cfg: FakeConfig) -> None:
    f = _cluster(cfg)
    rc, fake, err = f.agents[NODE]._maps_dump()
    assert rc == 0, err
    want, got = _normalized(_lbcp_dump(f, NODE)), _normalized(fake)
    assert got == want, "\n".join(["only the fake's:", *sorted(set(got) - set(want)), "only lbcp's:", *sorted(set(want) - set(got))])
