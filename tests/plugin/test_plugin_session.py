"""The plugin's session against the in-memory fake cluster: selection, gating, header, cleanup."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
import textwrap

import pytest
from helpers import FAKE_CONFTEST, events, use_fake_cluster

KPR_TESTS = """
import pytest

pytestmark = pytest.mark.kpr

def test_plain(kpr_facts):
    assert kpr_facts.kube_proxy_replacement

@pytest.mark.kpr_requires(cilium="1.19")
def test_needs_119():
    pass

@pytest.mark.kpr_requires("socket-lb-pods")
def test_needs_socket_lb_in_pods():
    pass

@pytest.mark.kpr_requires(kernel="6.9")
def test_needs_new_kernel():
    pass

@pytest.mark.kpr_requires("nodeport", cilium="1.16", kernel="5.10")
def test_met():
    pass
"""


def test_plain_pytest_deselects_kpr_suites_and_never_provisions(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester)
    pytester.makepyfile(test_suite=KPR_TESTS, test_other="def test_other(): pass")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines(["*pytest-kpr: 5 kpr conformance tests not selected; run them with: pytest -m kpr*"])
    assert events(pytester)["events"] == []


def test_selected_kpr_tests_skip_with_readable_reasons(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, config="cilium_version='1.18.12', kernel='6.8.0-49-generic', socket_lb_hostns_only=True")
    pytester.makepyfile(KPR_TESTS)
    result = pytester.runpytest("-m", "kpr", "-rs")
    result.assert_outcomes(passed=2, skipped=3)
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED * requires Cilium >= 1.19, cluster runs 1.18.12",
            "SKIPPED * requires feature socket-lb-pods, which is disabled on this cluster",
            "SKIPPED * requires kernel >= 6.9, node fake-control-plane runs 6.8.0-49-generic",
        ]
    )
    assert events(pytester)["events"] == ["preflight", "provision", "teardown"]


def test_header_prints_cluster_facts_and_cluster_json_is_written(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, config="cilium_version='1.17.6', workers=2, no_backend_response='drop'")
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(): pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-artifacts=out")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "kpr cluster: fake (fake, created by this run), Kubernetes v1.34.0, 3 nodes, kernel 6.8.0-49-generic",
            "kpr cilium: 1.17.6 (cilium-dbg), KubeProxyReplacement True, socket LB Full, NodePort SNAT, routing Tunnel, attach tcx, IPv4, ServiceNoBackendResponse drop",
            "kpr features: cross-node-forward, external-ips, host-port, kpr, nodeport, session-affinity, socket-lb, socket-lb-pods, tcx",
            "kpr nodes: fake-control-plane 172.18.0.2, fake-worker 172.18.0.3, fake-worker2 172.18.0.4",
        ]
    )
    facts = json.loads((pytester.path / "out" / "fake" / "cluster.json").read_text())
    assert facts["cilium_version"] == "1.17.6"
    assert facts["no_backend_response"] == "drop"
    assert [n["internal_ip"] for n in facts["nodes"]] == ["172.18.0.2", "172.18.0.3", "172.18.0.4"]
    assert "lb-statedb" not in facts["features"]  # 1.17 has no db/show tables by default


def test_readiness_polls_until_every_agent_is_ok_and_prints_progress(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, config="agent_ready_after=3")
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(kpr_facts): assert kpr_facts.kube_proxy_replacement\n")
    result = pytester.runpytest("-m", "kpr", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["[[]kpr[]] waiting for the Cilium datapath (every agent of kube-system/cilium Ok, KubeProxyReplacement True)"])


def test_cilium_without_kpr_is_refused_clearly(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, config="faults=Faults(kpr_disabled=True)", created=False)
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(): pass\n")
    result = pytester.runpytest("-m", "kpr")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*pytest-kpr: Cilium runs without kube-proxy replacement on fake-control-plane, fake-worker, fake-worker2 (KubeProxyReplacement: False)*"])
    assert "Traceback" not in result.stdout.str()


def test_unavailable_environment_exits_with_one_line(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, unavailable="no Docker daemon answers")
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(): pass\n")
    result = pytester.runpytest("-m", "kpr")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["[[]kpr[]] 1 kpr test selected, but this machine cannot run them (exit status 4;*",
                                 "[[]kpr[]]   - no Docker daemon answers",
                                 "*pytest-kpr: cannot run the kpr suites here (1 problem above)*"])
    assert "Traceback" not in result.stdout.str()


def test_unavailable_environment_can_skip_instead(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, unavailable="no Docker daemon answers")
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(): pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-if-unavailable=skip", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * kpr cluster unavailable: no Docker daemon answers"])


def test_bad_marker_arguments_fail_at_collection(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester)
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.kpr
        @pytest.mark.kpr_requires("warp-drive")
        def test_x(): pass
        """
    )
    result = pytester.runpytest("-m", "kpr")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *test_x: @pytest.mark.kpr_requires: unknown feature 'warp-drive' (known: kpr, socket-lb,*"])
    assert events(pytester)["events"] == []


def test_bad_marker_keyword_fails_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n@pytest.mark.kpr_requires(cillium='1.18')\ndef test_x(): pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *test_x: @pytest.mark.kpr_requires: *unexpected keyword argument 'cillium'"])


def test_disruptive_tests_skip_on_a_cluster_the_run_did_not_create(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, created=False)
    pytester.makepyfile("import pytest\npytestmark = pytest.mark.kpr\n@pytest.mark.kpr_disruptive\ndef test_x(): pass\n")
    result = pytester.runpytest("-m", "kpr", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * disruptive test on a cluster this run did not create (pass --kpr-allow-disruptive to run it)"])
    result = pytester.runpytest("-m", "kpr", "--kpr-allow-disruptive")
    result.assert_outcomes(passed=1)


def test_namespaces_are_labelled_and_deleted_even_when_a_test_fails(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester)
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.kpr

        def test_uses_namespace(kpr_namespace, kpr_cluster, kpr_session):
            ns = kpr_cluster.kube.get("Namespace", kpr_namespace)
            assert ns["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pytest-kpr"
            assert ns["metadata"]["labels"]["kpr.cilium.io/run"] == kpr_session.run_id
            assert kpr_namespace.startswith("kpr-namespaces-")
            assert False, "this test fails on purpose"
        """,
    )
    # the module is test_namespaces... via pytester's default name
    result = pytester.runpytest("-m", "kpr")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*this test fails on purpose*"])
    result.stdout.fnmatch_lines(["[[]kpr[]] deleting namespaces kpr-namespaces-are-labelled-*"])
    left = events(pytester)["namespaces"]
    assert sorted(left) == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_ctrl_c_still_cleans_up(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester)
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.kpr

        def test_interrupted(kpr_namespace):
            raise KeyboardInterrupt
        """,
    )
    result = pytester.runpytest_subprocess("-m", "kpr")  # a real Ctrl-C would stop this process too
    assert result.ret == pytest.ExitCode.INTERRUPTED
    ev = events(pytester)
    assert ev["events"] == ["preflight", "provision", "teardown"]
    assert not [n for n in ev["namespaces"] if n.startswith("kpr-")]


def test_namespace_without_our_labels_is_not_deleted(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester)
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.kpr

        def test_relabel(kpr_namespace, kpr_cluster):
            # somebody else took the namespace over: the plugin must leave it alone
            kpr_cluster.kube.patch("Namespace", kpr_namespace, None, {"metadata": {"labels": {"kpr.cilium.io/run": "other"}}})
        """,
    )
    result = pytester.runpytest("-m", "kpr", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["[[]kpr[]] not deleting namespace kpr-* it does not carry this run's labels"])
    assert [n for n in events(pytester)["namespaces"] if n.startswith("kpr-")]


def test_an_unknown_known_gap_id_fails_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\n@pytest.mark.kpr_known_gap('no-such-gap')\ndef test_x(): pass\n")
    result = pytester.runpytest("-m", "kpr")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *test_x: @pytest.mark.kpr_known_gap('no-such-gap'): no such gap in clusters/known-gaps.yaml (known: frontend-conflict-requeue)"])


def test_a_known_gap_is_strict_xfail_only_on_the_versions_it_lists(pytester: pytest.Pytester) -> None:
    use_fake_cluster(pytester, config="cilium_version='1.17.6'")
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.kpr
        @pytest.mark.kpr_known_gap("frontend-conflict-requeue")
        def test_gap_applies_from_118():
            assert False, "fails on 1.17 as a plain failure: the gap is declared for >=1.18.0 only"
        """
    )
    result = pytester.runpytest("-m", "kpr")
    result.assert_outcomes(failed=1)


def _fake_kube(**kw: object) -> object:
    from pytest_kpr.testing import FakeCluster, FakeConfig

    f = FakeCluster(FakeConfig(pod_ready_ticks=0))
    return f


@pytest.mark.parametrize(("namespace", "extra", "words"), [
    ("kube-system", None, None),
    ("cilium", None, "no cilium-agent DaemonSet in namespace cilium (labels k8s-app=cilium or app.kubernetes.io/name=cilium-agent); "
                     "pass --kpr-cilium-namespace if Cilium runs elsewhere"),
    ("kube-system", "cilium-canary", "2 DaemonSets in namespace kube-system look like cilium-agent (cilium, cilium-canary); pytest-kpr needs exactly one"),
])
def test_the_agents_are_found_by_their_daemonset_in_one_namespace(namespace: str, extra: str | None, words: str | None) -> None:
    import pytest_kpr.cluster.agents as agent
    from pytest_kpr.cluster.agents import NoAgent, locate_agents

    kube = _fake_kube()
    if extra:
        kube.create({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": extra, "namespace": "kube-system",
                                                                               "labels": {"app.kubernetes.io/name": "cilium-agent"}},
                     "spec": {"selector": {"matchLabels": {"app": extra}}, "template": {"metadata": {"labels": {"app": extra}},
                                                                                      "spec": {"containers": [{"name": "x"}]}}}})
    saved = (agent.CILIUM_NAMESPACE, agent.AGENT_SELECTOR)
    try:
        if words is None:
            assert locate_agents(kube, namespace) == "kube-system/cilium"
            assert (agent.CILIUM_NAMESPACE, agent.AGENT_SELECTOR) == ("kube-system", "k8s-app=cilium")
            assert len(agent.agent_pods(kube)) == 3
        else:
            with pytest.raises(NoAgent) as e:
                locate_agents(kube, namespace)
            assert str(e.value) == words
    finally:
        agent.CILIUM_NAMESPACE, agent.AGENT_SELECTOR = saved


def test_test_namespaces_carry_the_pod_security_level_their_pods_need(pytester: pytest.Pytester) -> None:
    """privileged only for the datapath probes (NET_RAW, a host-network probe) and the node shells; baseline elsewhere."""
    from pytest_kpr.plugin.session import PRIVILEGED_NAMESPACES

    assert PRIVILEGED_NAMESPACES == {"datapath", "nodeshell"}
    use_fake_cluster(pytester, "pod_ready_ticks=0")
    pytester.makepyfile(textwrap.dedent("""
        import pytest
        pytestmark = pytest.mark.kpr

        def test_levels(kpr_session, kpr_cluster, lab, kpr_namespace):
            kube = kpr_cluster.kube
            level = lambda ns: kube.get("Namespace", ns)["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
            assert level(lab.ns) == "privileged" and level(kpr_namespace) == "baseline"
    """))
    pytester.runpytest("-m", "kpr", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_an_image_pull_secret_is_copied_and_named_by_every_pod(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(textwrap.dedent(FAKE_CONFTEST.format(config="pod_ready_ticks=0", created=True, unavailable=None)) + textwrap.dedent("""

        FAKE.create({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
                     "metadata": {"name": "regcred", "namespace": "default"}, "data": {".dockerconfigjson": "e30="}})
    """))
    pytester.makepyfile(textwrap.dedent("""
        import pytest
        pytestmark = pytest.mark.kpr

        def test_pull_secret(kpr_cluster, lab, kpr_lab, probe):
            kube = kpr_cluster.kube
            for ns in (lab.ns, kpr_lab.ns):  # the suite's namespace and the shared workloads'
                assert kube.get("Secret", "regcred", ns)["data"] == {".dockerconfigjson": "e30="}
            pods = kube.list("Pod", kpr_lab.ns)
            assert pods and all(p["spec"]["imagePullSecrets"] == [{"name": "regcred"}] for p in pods)
    """))
    pytester.runpytest("-m", "kpr", "--kpr-image-pull-secret=default/regcred", "-p", "no:cacheprovider").assert_outcomes(passed=1)


NS_CONFTEST = """
import json, pathlib
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

FAKE = FakeCluster(FakeConfig())
FAKE.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"owner": "platform"}}})
FAKE.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep-me", "namespace": "team-a"}, "data": {}})
FAKE.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred", "namespace": "kube-public"}, "data": {}})
PROVIDER = FakeProvider(FAKE)

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    pathlib.Path("after.json").write_text(json.dumps({
        "namespaces": {o["metadata"]["name"]: o["metadata"].get("labels") or {} for o in FAKE.list("Namespace")},
        "team_a": sorted(f"{o['kind']}/{o['metadata']['name']}" for k in ("ConfigMap", "Pod", "Deployment", "Service", "Secret")
                         for o in [dict(x, kind=k) for x in FAKE.list(k, "team-a")]),
    }))
"""

NS_SUITE = """
import json, pathlib
import pytest
from conftest import FAKE

pytestmark = pytest.mark.kpr(property="namespaces")

def test_the_run_puts_its_objects_where_it_was_told(lab):
    lab.deploy_web(2)
    pods = FAKE.list("Pod", lab.ns)
    pathlib.Path("during.json").write_text(json.dumps({
        "ns": lab.ns,
        "pods": [{"labels": p["metadata"].get("labels"), "tolerations": p["spec"].get("tolerations"),
                  "nodeSelector": p["spec"].get("nodeSelector"), "secrets": p["spec"].get("imagePullSecrets")} for p in pods],
        "web": [o["metadata"].get("labels") for o in FAKE.list("Service", lab.ns)],
    }))
"""


def _ns_run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict, dict]:
    pytester.makeconftest(NS_CONFTEST)
    pytester.makepyfile(test_ns=NS_SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "--kpr-artifacts=art", *args)
    during = json.loads((pytester.path / "during.json").read_text()) if (pytester.path / "during.json").exists() else {}
    return result, during, json.loads((pytester.path / "after.json").read_text())


def test_a_namespace_prefix_names_every_namespace_the_run_creates(pytester: pytest.Pytester) -> None:
    result, during, after = _ns_run(pytester, "--kpr-namespace=ci-", "--kpr-namespace-labels=cost-center=net,pod-security.kubernetes.io/warn=baseline",
                                    "--kpr-pod-tolerations=dedicated=ci:NoSchedule", "--kpr-pod-node-selector=pool=ci",
                                    "--kpr-image-pull-secret=kube-public/regcred")
    result.assert_outcomes(passed=1)
    assert during["ns"].startswith("ci-suite-ns-")
    assert all(p["labels"]["kpr.cilium.io/run"] and p["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "ci",
               "effect": "NoSchedule"}] and p["nodeSelector"] == {"pool": "ci"} and p["secrets"] == [{"name": "regcred"}] for p in during["pods"])
    assert all(labels.get("kpr.cilium.io/run") for labels in during["web"])
    assert not [n for n in after["namespaces"] if n.startswith(("ci-", "kpr-"))], after["namespaces"]  # all created, all deleted


def test_a_named_namespace_is_used_never_created_and_left_as_found(pytester: pytest.Pytester) -> None:
    result, during, after = _ns_run(pytester, "--kpr-namespace=team-a", "--kpr-image-pull-secret=kube-public/regcred")
    result.assert_outcomes(passed=1)
    assert during["ns"] == "team-a"
    assert not [n for n in after["namespaces"] if n.startswith("kpr-")], after["namespaces"]  # none created
    assert after["namespaces"]["team-a"] == {"owner": "platform"}  # not relabelled
    assert after["team_a"] == ["ConfigMap/keep-me"], after["team_a"]  # the run's objects (and its copy of the secret) are gone


def test_a_named_namespace_that_does_not_exist_is_one_line(pytester: pytest.Pytester) -> None:
    result, _, _ = _ns_run(pytester, "--kpr-namespace=team-b")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["pytest-kpr: --kpr-namespace team-b: no such namespace (a named namespace is used, never created*"])


def test_node_shells_get_the_pull_secret_and_tolerations_but_no_node_selector() -> None:
    """The node shells are the run's pods too: its labels, its pull secret and tolerations; never the node selector (each
    runs on the node the suites look at, whatever its labels)."""
    from pytest_kpr.cluster.nodeshell import node_shell_pod
    from pytest_kpr.run.ownership import RunObjectsKube

    made: list[dict] = []

    class Inner:
        def create(self, obj: dict) -> dict:
            made.append(obj)
            return obj

    kube = RunObjectsKube(Inner(), lambda ns: ns == "ours", {"kpr.cilium.io/run": "r1"}, "regcred", (("gpu", "", "NoExecute"),), (("pool", "ci"),))
    kube.create(node_shell_pod("node-shell-a", "ours", "a", "busybox:1.36.1"))
    kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ours"}, "spec": {}})
    kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "theirs"}, "spec": {}})
    shell, pod, other = made
    assert shell["spec"]["imagePullSecrets"] == [{"name": "regcred"}] and "nodeSelector" not in shell["spec"]
    assert {"key": "gpu", "operator": "Exists", "effect": "NoExecute"} in shell["spec"]["tolerations"]
    assert shell["metadata"]["labels"]["kpr.cilium.io/run"] == "r1"
    assert pod["spec"]["nodeSelector"] == {"pool": "ci"} and pod["metadata"]["labels"]["kpr.cilium.io/run"] == "r1"
    # not in the run's namespaces: its spec untouched; labelled as the run's (the gate lets the run delete it again)
    assert other["spec"] == {} and other["metadata"]["labels"] == {"kpr.cilium.io/run": "r1"}
    assert kube.created == [("Pod", "node-shell-a", "ours"), ("Pod", "p", "ours")]


NO_SHELL_CONFTEST = """
import json, pathlib
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig

FAKE = FakeCluster(FakeConfig())

def pytest_kpr_kube_client(config, kubeconfig, context):
    return FAKE

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    pathlib.Path("created.json").write_text(json.dumps([list(c[:4]) for c in FAKE.calls if c[:2] == ("create", "Pod")]))
"""


def test_without_the_node_shell_no_privileged_pod_is_made_and_its_tests_say_why(pytester: pytest.Pytester) -> None:
    """--kpr-no-node-shell on an existing cluster: no node shell pod is created, and the tests that read a node's own
    rules or sockets are skipped with the privileges they would have needed; the rest run."""
    cfg = pytester.path / "kubeconfig"
    cfg.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                   "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n")
    pytester.makeconftest(NO_SHELL_CONFTEST)
    shutil.copytree(Path(__file__).resolve().parents[2] / "suites", pytester.path / "suites")
    result = pytester.runpytest("suites/test_nodeport.py", "suites/test_socket_lb.py", "-m", "kpr", "--kpr-provider=existing",
                                f"--kpr-kubeconfig={cfg}", "--kpr-no-node-shell", "--kpr-artifacts=art", "-rs", "--import-mode=importlib",
                                "--kpr-probe-image=pytest-kpr-probe:0.1.0")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0 and outcomes.get("passed", 0) > 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] suites/test_nodeport.py:*: needs the node shell: one pod per node, privileged, with host "
                                 "network and host PID, to read the node's own iptables/nft rules, listening sockets (ss) and "
                                 "/proc/net/ip_vs; disabled by --kpr-no-node-shell"])
    created = json.loads((pytester.path / "created.json").read_text())
    assert created and not [c for c in created if c[3].startswith("node-shell-")], created


def test_the_fake_provider_answers_the_provider_hook_after_a_conftests_own(pytester: pytest.Pytester) -> None:
    """--kpr-provider=fake is a plugin answering pytest_kpr_provider (last): a conftest that returns a provider of its
    own is used instead; one that returns None leaves the run to the fake."""
    pytester.makepyfile(test_which=textwrap.dedent("""
        import pathlib
        import pytest
        pytestmark = pytest.mark.kpr(property="which")

        def test_which(kpr_facts, kpr_session):
            pathlib.Path("which.txt").write_text(f"{kpr_facts.cilium_version} {kpr_session.config.pluginmanager.has_plugin('kpr-fake-provider')}")
    """))
    own = textwrap.dedent("""
        from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

        def pytest_kpr_provider(config, settings, timeouts, kube_factory):
            return {answer}
    """)
    for answer, version in (("FakeProvider(FakeCluster(FakeConfig(cilium_version='1.18.3')))", "1.18.3"), ("None", None)):
        pytester.makeconftest(own.format(answer=answer))
        pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "--kpr-cilium-version=1.19.8", "-p", "no:cacheprovider").assert_outcomes(passed=1)
        seen, registered = (pytester.path / "which.txt").read_text().split()
        assert registered == "True" and seen == (version or "1.19.8"), (answer, seen)


FOREIGN_CONFTEST = NS_CONFTEST.replace('PROVIDER = FakeProvider(FAKE)', '''FAKE.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "term-a", "namespace": "team-a", "labels": {"app": "users"}},
             "spec": {"containers": [{"name": "c", "image": "users:1"}]}})
FAKE.create({"apiVersion": "v1", "kind": "KIND", "metadata": {"name": "NAME", "namespace": "team-a", "labels": {"app": "users"}},
             "spec": {"ports": [{"port": 80}]}} if "KIND" == "Service" else {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "unused", "namespace": "team-a"}, "data": {}})
PROVIDER = FakeProvider(FAKE)''').replace('"team_a": sorted(', '"term_a": (FAKE.get("Pod", "term-a", "team-a") or {}).get("spec"),\n        "svc": (FAKE.get("Service", "term", "team-a") or {}).get("spec"),\n        "team_a": sorted(')


def test_a_users_pod_named_like_a_suites_is_never_touched_the_runs_carries_the_run_id(pytester: pytest.Pytester) -> None:
    """--kpr-namespace=team-a holds the user's pod term-a, the name the terminating suite gives its first backend: the
    run's pod is term-a-<run id> in the API (the suite still calls it term-a), the suites pass, and the user's pod is
    still there as it was -- never read as the suite's, never deleted by its clean-up."""
    import shutil

    from tests.test_suites_vs_fake import SUITES

    pytester.makeconftest(FOREIGN_CONFTEST.replace("KIND", "ConfigMap").replace("NAME", "unused"))
    shutil.copytree(SUITES, pytester.path / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("suites/test_terminating.py", "suites/test_nodeport.py", "-m", "kpr", "--kpr-provider=fake",
                                "--kpr-artifacts=art", "--kpr-namespace=team-a", "-p", "no:cacheprovider", "--import-mode=importlib")
    assert result.ret == 0, result.stdout.str()[-3000:]
    after = json.loads((pytester.path / "after.json").read_text())
    assert after["term_a"]["containers"] == [{"name": "c", "image": "users:1"}]  # (the fake scheduled it)
    assert "Pod/term-a" in after["team_a"] and not [o for o in after["team_a"] if o.startswith("Pod/term-a-")]  # the run's went


def test_a_users_service_named_like_a_suites_stops_the_run_before_anything_touches_it(pytester: pytest.Pytester) -> None:
    """A Service keeps its name in a shared namespace (the agents report Services by name): the user's Service `term`,
    the terminating suite's name, makes the suite's create refused in one line, the run stops there with exit 3 (a set-up
    problem, not a datapath verdict: the gate never sees a FAIL), and the Service is still there as it was."""
    import shutil

    from tests.test_suites_vs_fake import SUITES

    pytester.makeconftest(FOREIGN_CONFTEST.replace("KIND", "Service").replace("NAME", "term"))
    shutil.copytree(SUITES, pytester.path / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("suites/test_terminating.py", "suites/test_nodeport.py", "-m", "kpr", "--kpr-provider=fake",
                                "--kpr-artifacts=art", "--kpr-namespace=team-a", "-p", "no:cacheprovider", "--import-mode=importlib")
    assert result.ret == 3, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["pytest-kpr: stopped: not * Service team-a/term: it is not this run's (not made by pytest-kpr; "
                                 "this run is *); rename or remove it, or give the run a namespace of its own (--kpr-namespace=PREFIX-) "
                                 "(exit status 3)"])
    after = json.loads((pytester.path / "after.json").read_text())
    assert after["svc"]["ports"][0]["port"] == 80 and "selector" not in after["svc"]  # as the user made it
    assert not [line for line in result.stdout.lines if line.startswith("suites/test_nodeport.py") or "test_nodeport.py ." in line]
    results = json.loads(next((pytester.path / "art").rglob("results.json")).read_text())
    assert results["run"]["exit_status"] == 3 and results["run"]["complete"] is False


FOREIGN_POOL_CONFTEST = NS_CONFTEST.replace('PROVIDER = FakeProvider(FAKE)', '''FAKE.create({"apiVersion": "cilium.io/v2", "kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "public"},
             "spec": {"blocks": [{"cidr": "203.0.113.0/30"}]}})
PROVIDER = FakeProvider(FAKE)''')


def test_a_vip_from_another_pool_is_never_routed_and_the_run_stops_on_it(pytester: pytest.Pytester) -> None:
    """A cluster-wide pool with no selector (someone else's, created before the run) hands the north-south suite's
    Service a public address: the run routes nothing, says so in one line and stops with exit 3 (no FAIL for the gate)."""
    import shutil

    from tests.test_suites_vs_fake import SUITES

    pytester.makeconftest(FOREIGN_POOL_CONFTEST)
    shutil.copytree(SUITES, pytester.path / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("suites/test_north_south.py", "-m", "kpr", "--kpr-provider=fake", "--kpr-artifacts=art",
                                "-p", "no:cacheprovider", "--import-mode=importlib")
    assert result.ret == 3, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["pytest-kpr: stopped: not routing 203.0.113.*: Service ns-* VIP is not from this run's pool "
                                 "* (198.18.21.10-198.18.21.19) nor its spare address: another pool selects the run's Services *"
                                 "(exit status 3)"])
    assert "FAILED" not in result.stdout.str()


@pytest.mark.parametrize(("args", "shown"), [((), True), (("-rN",), False), (("-rf",), True)])
def test_a_kpr_run_shows_why_each_test_was_skipped(pytester: pytest.Pytester, args: tuple[str, ...], shown: bool) -> None:
    """From the wheel there is no project -ra: the plugin asks pytest for the skip (and xfail) reasons of a kpr run
    itself, adding to what -r asks for; -rN (none) is respected."""
    pytester.makepyfile(test_skips=textwrap.dedent("""
        import pytest
        pytestmark = pytest.mark.kpr(property="skips")

        def test_needs_a_feature(kpr_facts):
            pytest.skip("needs the feature X of Cilium 1.21")
    """))
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "-p", "no:cacheprovider", "--kpr-allow-all-skipped", *args)
    out = result.stdout.str()
    assert ("SKIPPED [1] test_skips.py:5: needs the feature X of Cilium 1.21" in out) is shown, out[-2000:]


def test_a_space_separated_kubeconfig_keeps_the_evidence_where_pytest_started(tmp_path: Path) -> None:
    """`--kpr-kubeconfig ~/.kube/config` (a space, not `=`) in a project without an ini file: pytest takes the rootdir
    from the command line's paths, the kubeconfig's included, so it moved to their common parent and the evidence with
    it. The evidence stays under the directory pytest was started in."""
    import subprocess
    import sys

    proj, kube = tmp_path / "proj", tmp_path / "home" / ".kube"
    proj.mkdir()
    kube.mkdir(parents=True)
    (kube / "config").write_text("apiVersion: v1\n")
    (proj / "test_a.py").write_text("import pytest\npytestmark = pytest.mark.kpr\ndef test_x():\n    pass\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "test_a.py", "--kpr-kubeconfig", str(kube / "config"), "-m", "kpr",
                        "--kpr-provider=existing", "--kpr-suites=none", "-p", "no:cacheprovider"], cwd=proj, capture_output=True,
                       text=True, timeout=120, env={**__import__("os").environ, "PYTEST_ADDOPTS": ""})
    header = next(line for line in p.stdout.splitlines() if line.startswith("kpr: provider existing"))
    assert f"artifacts {proj}/kpr-artifacts/" in header, p.stdout[-2000:]
    assert not (tmp_path / "kpr-artifacts").exists()
