"""Local Redirect Policy: with the agents' ``enable-local-redirect-policy`` on (the ``lrp`` profile), a
CiliumLocalRedirectPolicy of the ServiceMatcher kind replaces a ClusterIP Service's entry, for pods on a node, with one
whose backends are the policy's selected pods on that node only (pytest_kpr.rules.datapath SRC_LRP): node-local DNS caches
work this way.

``lrp-svc`` (ClusterIP) has two backends, ``lrp-far-1`` and ``lrp-far-2``, on another node than the client; the policy
``lrp`` (in the suite's namespace, as the backends must be) redirects it to the pods labelled ``app=lrp-local``, one of
which, ``lrp-local``, runs on the client node. The probe pod on the client node makes 12 connections to the Service's
ClusterIP; each connection's backend is the kernel socket's peer. Skipped, saying so, where the agents do not honour
the policies. Per family of --kpr-ip-families (evidence ``local-redirect-ipv6.json``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge.local_redirect import RedirectObservation, redirect_problems
from pytest_kpr.suite import ClusterFacts, eventually_or_now, Evidence, family_file, holds, hp, Lab, WEB_PORT, WEB_TARGET

pytestmark = [
    pytest.mark.kpr(property="local redirect", evidence="local-redirect.json", plane="socket", sources=["SRC_LRP"]),
    pytest.mark.kpr_requires("socket-lb-pods"),
]
CONNECTIONS = 12


def _policy(ns: str) -> dict[str, Any]:
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumLocalRedirectPolicy", "metadata": {"name": "lrp", "namespace": ns},
            "spec": {"redirectFrontend": {"serviceMatcher": {"serviceName": "lrp-svc", "namespace": ns}},
                     "redirectBackend": {"localEndpointSelector": {"matchLabels": {"app": "lrp-local"}},
                                         "toPorts": [{"port": str(WEB_TARGET), "protocol": "TCP", "name": "http"}]}}}


@pytest.fixture(scope="module")
def lrp_workloads(lab: Lab, probe: Lab, kpr_facts: ClusterFacts) -> None:
    """The Service's remote backends, the local pod, the Service and the policy, created once for every family."""
    if not kpr_facts.local_redirect_policy:
        pytest.skip("the agents do not honour CiliumLocalRedirectPolicy: enable-local-redirect-policy is off (Helm localRedirectPolicy / "
                    "localRedirectPolicies.enabled; --kpr-profile=lrp)")
    far = lab.remote_node()
    for name in ("lrp-far-1", "lrp-far-2"):
        lab.create_web_pod(name, {"app": "lrp-web"}, far)
    lab.create_web_pod("lrp-local", {"app": "lrp-local"}, lab.client_node)
    lab.create_service("lrp-svc", {"app": "lrp-web"})
    lab.wait_ready_endpoints("lrp-svc", 2)
    lab.create(_policy(lab.ns))


@pytest.fixture(scope="module")
def seen(lrp_workloads: None, family_lab: Lab, evidence: Evidence, kpr_property: str, kpr_family: str) -> RedirectObservation:
    lab = family_lab
    client = lab.client_node
    pods = {p["metadata"]["name"]: p for p in lab.kube.list("Pod", lab.ns) if p["metadata"]["name"].startswith("lrp-")}
    local = {hp(lab.pod_ip(p), WEB_TARGET): n for n, p in pods.items() if n == "lrp-local"}
    own = {hp(lab.pod_ip(p), WEB_TARGET): n for n, p in pods.items() if n.startswith("lrp-far")}
    target = hp(lab.cluster_ip("lrp-svc"), WEB_PORT)
    lab.wait_programmed_on([client], ["lrp-svc"])
    # the policy is applied after the Service: until the client's agent shows the redirect (or the wait runs out, a finding
    # the judgement reports), connections would measure the time it takes, not the redirect
    agent, fe = lab.agent(client), lab.frontend("lrp-svc")
    eventually_or_now(lambda: lab.slot_view(agent, fe), until=lambda v: set(v.backends) == set(local),
                      timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {client} to redirect lrp-svc to lrp-local",
                      describe=lambda v: ", ".join(v.backends) or "no slots", progress=lab.progress)
    peers = lab.socket_peers(target, CONNECTIONS, 3.0)
    obs = RedirectObservation(target, client, local, own, tuple(peers))
    evidence.write(family_file("local-redirect.json", kpr_family), {**obs.to_json(), "problems": redirect_problems(obs)})
    evidence.figure(kpr_property, f"{sum(1 for p in peers if p in local)} of {CONNECTIONS} connections to {target} on the client node's "
                                  "lrp-local", kpr_family)
    return obs


def test_a_service_matcher_policy_keeps_pods_on_their_nodes_selected_pods(seen: RedirectObservation) -> None:
    holds(redirect_problems(seen), "local redirect (ServiceMatcher)")
