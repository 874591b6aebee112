"""Suites cannot see each other's objects: each suite (test module) creates in its own namespace, which is deleted when
the suite ends (plugin.fixtures.lab, observe.lab.Lab.for_suite); only the shared workloads (web, probe, ...) live for
the run. Against the fake cluster, which keeps namespaces apart as Kubernetes does and drops a deleted Service's
frontends from the agents' tables."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

from test_suites_vs_fake import SUITES, run_suites

FIRST = '''
import json, pathlib
import pytest

pytestmark = pytest.mark.kpr(property="first")


def test_first_makes_twin(lab, probe):
    svc = lab.create_service("twin", {"app": "twin"})
    lab.create_web_pod("twin", {"app": "twin"}, lab.client_node)
    fe = lab.frontend("twin")
    lab.wait_programmed(lab.client_node, fe, "twin programmed")
    pathlib.Path("first.json").write_text(json.dumps({"ns": lab.ns, "ip": svc["spec"]["clusterIP"], "shared": lab.where("Pod", "probe")}))
    assert lab.probe("connect", fe.host_port(), 2.0).verdict == "connected"
'''

SECOND = '''
import json, pathlib
import pytest

pytestmark = pytest.mark.kpr(property="second")


def test_second_sees_none_of_the_first(lab, kpr_cluster):
    first = json.loads(pathlib.Path("first.json").read_text())
    lab.create_service("twin", {"app": "twin"})  # the same name: no conflict, another namespace
    kube = kpr_cluster.kube
    seen = {
        "ns": lab.ns,
        "first_ns_left": kube.get("Namespace", first["ns"]) is not None,
        "first_twin_left": kube.get("Service", "twin", first["ns"]) is not None,
        "services_here": sorted(s["metadata"]["name"] for s in kube.list("Service", lab.ns)),
        "pods_here": sorted(p["metadata"]["name"] for p in kube.list("Pod", lab.ns)),
        "first_frontend_on_agents": [a.node for a in lab.all_agents()
                                     if any(s.frontend.ip == first["ip"] for s in a.services())],
        "probe_ns": lab.where("Pod", "probe"),
    }
    pathlib.Path("second.json").write_text(json.dumps(seen))
'''


@pytest.fixture
def two_suites(pytester: pytest.Pytester) -> tuple[dict, dict]:
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "test_a_first.py").write_text(textwrap.dedent(FIRST))
    (pytester.path / "suites" / "test_b_second.py").write_text(textwrap.dedent(SECOND))
    run_suites(pytester, "", "a_first", "b_second").assert_outcomes(passed=2)
    return json.loads((pytester.path / "first.json").read_text()), json.loads((pytester.path / "second.json").read_text())


def test_a_suite_sees_nothing_another_suite_made(two_suites: tuple[dict, dict]) -> None:
    """The second suite creates a Service of the same name as the first's (no conflict: its own namespace), finds only its
    own objects there, and the first suite's namespace, Service and frontend are gone by the time it runs."""
    first, second = two_suites
    assert first["ns"] != second["ns"] and first["ns"].startswith("kpr-suite-a-first-") and second["ns"].startswith("kpr-suite-b-second-")
    assert second["services_here"] == ["twin"] and second["pods_here"] == [], second
    assert not second["first_ns_left"], f"the first suite's namespace {first['ns']} outlived it"
    assert not second["first_twin_left"], "the first suite's Service outlived it"
    assert second["first_frontend_on_agents"] == [], "the first suite's ClusterIP is still programmed after it ended"


def test_the_shared_workloads_stay_in_the_session_namespace(two_suites: tuple[dict, dict]) -> None:
    """The probe pod, a shared workload, is read in the run's datapath namespace from every suite."""
    first, second = two_suites
    assert first["shared"] == second["probe_ns"] and first["shared"].startswith("kpr-datapath-")


def test_the_map_pressure_count_is_the_same_after_another_suite(pytester: pytest.Pytester) -> None:
    """The review's finding: a suite's control Service changed the map-pressure count (12 to 15). The maps suite now counts
    the same entries whether another suite ran before it or not."""
    practice = '''
import pytest

pytestmark = pytest.mark.kpr(property="practice")


def test_control(lab):
    for i in range(3):
        lab.create_service(f"control-{i}", {"app": "control"})
'''

    def used() -> str:
        figure = json.loads((pytester.path / "artifacts" / "fake" / "results.json").read_text())["properties"]["map pressure"]["figure"]
        return str(figure).split("(", 1)[1].split(" used", 1)[0]

    run_suites(pytester, "", "maps").assert_outcomes(passed=3, skipped=1)
    alone = used()
    (pytester.path / "suites" / "test_a_practice.py").write_text(textwrap.dedent(practice))
    shutil.rmtree(pytester.path / "artifacts")
    run_suites(pytester, "", "a_practice", "maps").assert_outcomes(passed=4, skipped=1)
    assert used() == alone, f"the map-pressure suite counted {used()} entries after the practice suite, {alone} alone"


def test_a_suite_end_waits_for_its_services_and_the_run_end_for_its_namespace(pytester: pytest.Pytester) -> None:
    """On a real cluster a deleted namespace stays Terminating while its pods end their grace periods. A suite's end waits
    only until its Services are gone (what another suite could see); the next suite starts meanwhile, and the run's end
    waits for the namespace. Here the fake keeps a deleted suite namespace Terminating for 30 s of its virtual clock."""
    pytester.makeconftest(textwrap.dedent('''
        import json, pathlib
        import pytest
        from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

        FAKE = FakeCluster(FakeConfig(pod_ready_ticks=0))
        PROVIDER = FakeProvider(FAKE)
        _delete, _get = FAKE.delete, FAKE.get
        GONE_AT = {}  # a deleted suite namespace -> when (the fake's virtual clock) it is finally gone: 30 s of Terminating

        def delete(kind, name, namespace=None, grace_period_seconds=None):
            if kind == "Namespace" and name.startswith("kpr-suite-"):
                GONE_AT.setdefault(name, FAKE.clock.time() + 30)  # its Services go at once, the namespace stays Terminating
                for svc in FAKE.list("Service", name):
                    _delete("Service", svc["metadata"]["name"], name)
                return None
            return _delete(kind, name, namespace, grace_period_seconds)

        def get(kind, name, namespace=None):
            if kind == "Namespace" and name in GONE_AT and FAKE.clock.time() >= GONE_AT[name]:
                _delete("Namespace", name)
            return _get(kind, name, namespace)

        FAKE.delete, FAKE.get = delete, get

        def pytest_kpr_provider(config, settings, timeouts, kube_factory):
            return PROVIDER

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(session):
            pathlib.Path("end.json").write_text(json.dumps({"left": [o["metadata"]["name"] for o in FAKE.list("Namespace")
                                                                     if o["metadata"]["name"].startswith("kpr-suite-")]}))
    '''))
    (pytester.path / "test_a_first.py").write_text(textwrap.dedent(FIRST).replace(
        "def test_first_makes_twin(lab, probe):", "def test_first_makes_twin(lab):").replace(
        "    assert lab.probe(\"connect\", fe.host_port(), 2.0).verdict == \"connected\"\n", ""))
    (pytester.path / "test_b_second.py").write_text(textwrap.dedent(SECOND))
    result = pytester.runpytest("-m", "kpr", "-p", "no:cacheprovider", "--kpr-artifacts=art", "test_a_first.py", "test_b_second.py")
    result.assert_outcomes(passed=2)
    second = json.loads((pytester.path / "second.json").read_text())
    assert second["first_ns_left"] and not second["first_twin_left"] and second["first_frontend_on_agents"] == [], second
    assert json.loads((pytester.path / "end.json").read_text())["left"] == [], "the run's end did not delete the suites' namespaces"
    result.stdout.fnmatch_lines(["*deleting namespaces *kpr-suite-a-first-*"])
