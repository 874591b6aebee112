"""Upgrade gating end to end against the fake cluster (pytester): the fake rolls its agents node by node, the
upgrade suite passes on a conforming roll, each upgrade fault fails exactly the verdict that names it, and
unsupported upgrades are refused before anything changes."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from helpers import holds_schema

SUITES = Path(__file__).resolve().parent.parent / "suites"
CONFTEST = """
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider, Faults
from pytest_kpr.testing.faults import Row

PROVIDER = FakeProvider(FakeCluster(FakeConfig(pod_ready_ticks=2, cilium_version="1.19.8", agent_restart_s=0.1, {config})), {provider})

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""
ARGS = ("-m", "kpr", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider", "--import-mode=importlib",
        "--kpr-cilium-version=1.19.8", "--kpr-upgrade-to=1.20.2")
VERDICTS = ["test_no_flow_was_reset_closed_or_stalled", "test_no_flow_saw_a_gap_longer_than_allowed",
            "test_no_service_or_backend_id_changed_or_was_reused", "test_the_flows_conntrack_entries_survive", "test_no_datapath_property_regressed"]


def run(pytester: pytest.Pytester, config: str = "", provider: str = "", *args: str) -> pytest.RunResult:
    shutil.copytree(SUITES, pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config=config, provider=provider)))
    return pytester.runpytest(str(pytester.path / "suites" / "test_upgrade.py"), *ARGS, *args)


def failed_ids(result: pytest.RunResult) -> list[str]:
    """The failed tests' ids (``test_x[upgrade-IPv6]``), sorted."""
    return sorted({line.split("::")[1].split(" ")[0] for line in result.stdout.lines if line.startswith("FAILED ")})


def upgrade_json(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "artifacts" / "fake" / "upgrade.json").read_text())


def test_a_conforming_roll_passes_and_upgrade_json_has_the_timeline_the_flows_and_the_diff(pytester: pytest.Pytester) -> None:
    result = run(pytester, "", "", "--kpr-downgrade")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(["pass  upgrade         upgrade 1.19.8 -> 1.20.2: 0/5 flows broken, longest gap 0.01 s (*) of 1 s allowed "
                                 "(pytest-kpr policy), service IDs stable, 0 backend IDs changed; downgrade 1.20.2 -> 1.19.8: 0/5 flows broken*"])
    data = upgrade_json(pytester)
    holds_schema(data, "upgrade.json")
    up, down = data["transitions"]
    assert (up["from"], up["to"], down["from"], down["to"]) == ("1.19.8", "1.20.2", "1.20.2", "1.19.8")
    assert [s["node"] for s in up["timeline"]] == ["fake-control-plane", "fake-worker", "fake-worker2"], "node by node"
    assert all(s["new_pod"] != s["old_pod"] and s["ready_at"] >= s["down_at"] for s in up["timeline"]), up["timeline"]
    assert set(up["flows"]) == {"pod->ClusterIP", "hostnet->ClusterIP", "pod->NodePort", "hostnet(no backend)->NodePort", "udp pod->ClusterIP"}
    assert all(f["report"]["sent"] > 20 and f["report"]["lost"] == 0 for f in up["flows"].values()), up["flows"]
    assert up["flows"]["pod->ClusterIP"]["ct_survived"] is True
    assert up["before"]["backends"] and all(up["before"]["backends"].values()), "backend IDs read from lb/maps-dump"
    assert up["after"]["properties"]["kube_proxy_replacement"] == "True" and up["after"]["properties"]["backend_slots_match"] == {"IPv4": True}
    assert set(up["diff"]["families"]) == {"IPv4"} and all(f["path"]["family"] == "IPv4" for f in up["flows"].values())
    cluster = json.loads((pytester.path / "artifacts" / "fake" / "cluster.json").read_text())
    assert cluster["cilium_version"] == "1.19.8", "the facts are re-read after each transition (back at 1.19.8 after the downgrade)"


def _upgrade_rows() -> list:
    """The upgrade faults' rows (declared beside them in pytest_kpr.testing.upgrade: ``Fault(..., fails=Fails(...))``)."""
    from test_faults import UPGRADE_ROWS

    return [pytest.param(row, id=row.name) for row in UPGRADE_ROWS]


@pytest.mark.parametrize("row", _upgrade_rows())
def test_each_upgrade_fault_fails_the_verdict_that_names_it(pytester: pytest.Pytester, row: Row) -> None:
    """Each upgrade fault, in one upgrade run (a dual-stack one for a fault set for one family, which fails that family's
    verdict only): exactly the row's verdicts fail, with its words."""
    dual = ("--kpr-ip-families=IPv4,IPv6",) if "ip_families" in row.config else ()
    result = run(pytester, row.config, "", *dual, "-rf")
    assert failed_ids(result) == sorted(t.split("::", 1)[1] for t in row.failing), result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(list(row.messages))


DUAL = ("ip_families=('IPv4', 'IPv6')", "--kpr-ip-families=IPv4,IPv6")
FLOWS = ["pod->ClusterIP", "hostnet->ClusterIP", "pod->NodePort", "hostnet(no backend)->NodePort", "udp pod->ClusterIP"]


def test_a_dual_stack_roll_carries_every_flow_in_both_families_and_judges_each_family(pytester: pytest.Pytester) -> None:
    """One roll, ten flows: each path in IPv4 and in IPv6 (the Services' IPv6 ClusterIP, the nodes' IPv6 address); the flow,
    ID and conntrack verdicts run per family, the datapath properties once."""
    result = run(pytester, DUAL[0], "", DUAL[1], "--kpr-downgrade", "-rA")
    result.assert_outcomes(passed=18)  # 4 family verdicts x 2 families x 2 transitions + the properties' verdict x 2
    passed = {line.split("::")[1] for line in result.stdout.lines if line.startswith("PASSED ")}
    assert {f"{v}[{k}-{f}]" for v in VERDICTS[:4] for k in ("upgrade", "downgrade") for f in ("IPv4", "IPv6")} <= passed, sorted(passed)
    up = upgrade_json(pytester)["transitions"][0]
    holds_schema(upgrade_json(pytester), "upgrade.json")
    assert set(up["flows"]) == {*FLOWS, *(f"{f} (IPv6)" for f in FLOWS)}
    v6 = {name: f["path"] for name, f in up["flows"].items() if name.endswith("(IPv6)")}
    assert all(p["family"] == "IPv6" and p["target"].startswith("[") for p in v6.values()), v6
    assert v6["pod->ClusterIP (IPv6)"]["target"].startswith("[fd00:10:96::") and v6["pod->NodePort (IPv6)"]["target"].startswith("[fc00:")
    assert v6["pod->ClusterIP (IPv6)"]["client"] == "flow-pod-clusterip-ipv6"
    assert up["flows"]["pod->ClusterIP (IPv6)"]["ct_survived"] is True, "the IPv6 flow's conntrack entry is found by its IPv6 pod address"
    assert all(f["report"]["sent"] > 20 and f["report"]["lost"] == 0 for f in up["flows"].values())
    assert set(up["diff"]["families"]) == {"IPv4", "IPv6"} and up["after"]["properties"]["backend_slots_match"] == {"IPv4": True, "IPv6": True}
    assert any(k.startswith("[fd00:10:96::") for k in up["before"]["services"]["fake-worker"]), "the IPv6 frontends' IDs are compared too"
    results = json.loads((pytester.path / "artifacts" / "fake" / "results.json").read_text())
    assert {t.get("family") for t in results["tests"] if t["property"] == "upgrade"} == {"IPv4", "IPv6", None}, "None: the properties verdict"
    assert results["properties"]["upgrade"]["families"] == {"IPv4": "pass", "IPv6": "pass"}


def test_an_ipv6_only_roll_carries_the_flows_in_ipv6(pytester: pytest.Pytester) -> None:
    """On an IPv6-only cluster the five flows are IPv6 ones (the only family the agents serve), judged as [IPv6]."""
    result = run(pytester, "ip_families=('IPv6',)", "", "--kpr-ip-families=IPv6", "-rA")
    result.assert_outcomes(passed=5, skipped=5)  # the downgrade's five: no --kpr-downgrade
    up = upgrade_json(pytester)["transitions"][0]
    assert set(up["flows"]) == {f"{f} (IPv6)" for f in FLOWS} and set(up["diff"]["families"]) == {"IPv6"}
    assert all(f["path"]["target"].startswith("[") and f["report"]["lost"] == 0 for f in up["flows"].values())
    assert up["flows"]["pod->ClusterIP (IPv6)"]["ct_survived"] is True


def test_a_hostns_only_roll_carries_the_flows_on_the_per_packet_plane(pytester: pytest.Pytester) -> None:
    """Under the hostns-only profile pods take the per-packet plane, also to a NodePort (datapath.plane_for: bpf_lxc for
    this node's own address, bpf_host on the other node): the upgrade suite runs and passes, naming each flow's plane."""
    result = run(pytester, "socket_lb_hostns_only=True", "", "-rA")
    result.assert_outcomes(passed=5, skipped=5)
    up = upgrade_json(pytester)["transitions"][0]
    assert {name: f["path"]["plane"] for name, f in up["flows"].items()} == {
        "pod->ClusterIP": "per-packet", "hostnet->ClusterIP": "socket", "pod->NodePort": "per-packet",
        "hostnet(no backend)->NodePort": "socket", "udp pod->ClusterIP": "per-packet"}, up["flows"]
    assert all(f["report"]["lost"] == 0 for f in up["flows"].values())


@pytest.mark.parametrize(("config", "provider", "line"), [
    ("kernel='6.1.0-50-amd64'", "", "node fake-control-plane runs kernel 6.1.0-50-amd64, below Cilium 1.20's floor 6.6*"),
    ("", "values={'loadBalancer': {'experimental': True}}", "the Helm values set loadBalancer.experimental, which Cilium 1.18 removed*"),
], ids=["kernel-floor", "removed-option"])
def test_an_unsupported_upgrade_is_refused_before_anything_changes(pytester: pytest.Pytester, config: str, provider: str, line: str) -> None:
    """Every supported minor (1.18+) has the 5.10 floor, and a cluster below its own floor is refused at start; so the
    kernel case uses a copy of clusters/ in which the target (1.20) has a higher floor, as a future minor may."""
    clusters = pytester.path / "clusters"
    shutil.copytree(SUITES.parent / "clusters", clusters)
    kernels = clusters / "kernels.yaml"
    kernels.write_text(kernels.read_text().replace('- cilium: "1.20"\n    kernel: "5.10"', '- cilium: "1.20"\n    kernel: "6.6"'))
    assert 'kernel: "6.6"\n    source: "unchanged from 1.18' in kernels.read_text()
    result = run(pytester, config, provider, f"--kpr-clusters-dir={clusters}")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*the upgrade is refused, nothing was changed:*", f"*  - {line}"])
    assert not (pytester.path / "artifacts" / "fake" / "upgrade.json").exists()


def test_a_removal_only_its_deprecation_shows_is_told_and_the_upgrade_goes_on(pytester: pytest.Pytester) -> None:
    """clusters/removed-options.yaml kind: notice (cilium/cilium#42576: the clustermesh TLS cert/key values): the run says
    so and upgrades; upgrade.json keeps the notice. A notice never fails a healthy upgrade."""
    values = "values={'clustermesh': {'apiserver': {'tls': {'server': {'cert': 'LS0t', 'extraDnsNames': ['m.example']}}}}}"
    result = run(pytester, "", values)
    result.assert_outcomes(passed=5, skipped=5)  # the downgrade's verdicts: no --kpr-downgrade
    result.stdout.fnmatch_lines(["*notice: the Helm values set clustermesh.apiserver.tls.server.cert; removed in Cilium 1.20 per "
                                 "cilium/cilium#42576*"])
    assert [n.split(";")[0] for n in upgrade_json(pytester)["notices"]] == ["the Helm values set clustermesh.apiserver.tls.server.cert"]


def test_upgrading_a_cluster_the_run_did_not_create_needs_allow_disruptive(pytester: pytest.Pytester) -> None:
    shutil.copytree(SUITES, pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config="", provider="created=False")))
    result = pytester.runpytest(str(pytester.path / "suites" / "test_upgrade.py"), *ARGS)
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*--kpr-upgrade-to changes Cilium on a cluster this run did not create; pass --kpr-allow-disruptive*"])


def test_more_than_one_minor_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config="", provider="")))
    result = pytester.runpytest("--kpr-cilium-version=1.18.14", "--kpr-upgrade-to=1.20.2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kpr-upgrade-to: Cilium 1.20.2 is more than one minor ahead of 1.18.14: upgrade one minor at a time*"])


def test_the_suites_after_an_upgrade_judge_the_upgraded_clusters_facts(pytester: pytest.Pytester) -> None:
    """kpr_facts is first requested after the upgrade phase: a suite that reads it sees the target version."""
    shutil.copytree(SUITES, pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config="", provider="")))
    (pytester.path / "suites" / "test_facts_after.py").write_text(textwrap.dedent("""
        import pytest
        pytestmark = pytest.mark.kpr

        def test_facts(kpr_facts, lab):
            assert kpr_facts.cilium_version == "1.20.2" and lab.facts.cilium_version == "1.20.2" and lab.minor == (1, 20)
    """))
    result = pytester.runpytest(str(pytester.path / "suites" / "test_facts_after.py"), *ARGS)
    result.assert_outcomes(passed=1)


def test_the_upgrades_progress_shows_without_dash_s(pytester: pytest.Pytester) -> None:
    """The upgrade runs inside a fixture, under pytest's output capture: its progress lines still reach the terminal as
    they happen (a real roll takes minutes), in a process of its own so capture is pytest's default (fd)."""
    shutil.copytree(SUITES, pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config="", provider="")))
    result = pytester.runpytest_subprocess(str(pytester.path / "suites" / "test_upgrade.py"), *ARGS)
    assert "-s" not in ARGS and "--capture=no" not in ARGS
    result.stdout.fnmatch_lines(["[[]kpr[]] fake cluster: rolling the agents from Cilium 1.19.8 to 1.20.2"])
