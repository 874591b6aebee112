"""The conformance suites end to end, under pytester, against the in-memory fake cluster.

The fake answers every command in the real formats from its own state. For each suite: a conforming
fake passes, and a fake with that suite's fault fails with a message naming the property. A suite that
passes against its fault is a bug.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SUITES = REPO / "suites"

CONFTEST = """
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider, Faults

FAKE = FakeCluster(FakeConfig(pod_ready_ticks=2, {config}))
PROVIDER = FakeProvider(FAKE)

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""

# The fake answers at once; a fault that never converges runs into the named timeouts, so scale them
# down (Timeouts x 0.01: 2.4 s for pods + convergence) to keep the negative runs short.
FAST = ("--kpr-timeout-scale=0.01",)


def run_suites(pytester: pytest.Pytester, config: str = "", *only: str, args: tuple[str, ...] = ()) -> pytest.RunResult:
    dest = pytester.path / "suites"
    shutil.copytree(SUITES, dest)
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config=config)))
    targets = [str(dest / f"test_{name}.py") for name in only] or [str(dest)]
    # importlib mode: the outer session has imported the real suites under the same module names
    return pytester.runpytest(*targets, "-m", "kpr", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider", "--import-mode=importlib", *FAST, *args)


def evidence(pytester: pytest.Pytester, name: str) -> dict:
    return json.loads((pytester.path / "artifacts" / "fake" / name).read_text())


ALL = {"passed": 32, "xfailed": 2}  # the two xfails: the known gap frontend-conflict-requeue, one per way


def test_every_suite_passes_on_a_conforming_cluster(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester)
    result.assert_outcomes(**ALL)
    result.stdout.fnmatch_lines(["*= kpr properties =*"])
    result.stdout.fnmatch_lines_random([
        "pass  iptables        0 KUBE-SVC, 0 ClusterIP lines on 3 nodes*",
        "pass  backend slots   4 slots on 3 agents in *s*",
        "pass  socket LB       getpeername 10.96.*:80, socket 10.244.*:8080 (Full)*",
        "pass  NodePort        HTTP 200 on 172.18.0.3:30780, 0 listeners, 0 iptables lines*",
        "pass  no backend      curl exit 7 in 0.00s, raw SYN icmp-unreachable ICMP 3/3 (reject)*",
        "pass  shared VIP      claimant rejected, owner HTTP 200; appeared by itself: False  (10 passed, 2 xfailed)",
    ])
    art = pytester.path / "artifacts" / "fake"
    assert sorted(p.name for p in art.iterdir() if p.is_file()) == sorted(
        ["cluster.json", "iptables.json", "svc.json", "scale.json", "ct.json", "prog.json", "nodeport.json", "ghost.json", "sharedvip.json", "report.txt"])


@pytest.mark.parametrize(
    ("config", "suites", "outcomes"),
    [
        # pods take the per-packet path; the socket-LB expectations flip
        ("socket_lb_hostns_only=True", ("socket_lb",), {"passed": 4}),
        # no-backend expectations flip to timeouts; the other ICMP code Cilium versions answer with
        ("no_backend_response='drop'", ("no_backend",), {"passed": 4}),
        ("no_backend_icmp_code=1", ("no_backend",), {"passed": 4}),
        # no /PROTO in addresses, legacy tc, cilium_policy_NNNNN; the shared-VIP suite needs 1.18 and skips
        ("cilium_version='1.16.19', attach_mode='tc'", (), {"passed": 22, "skipped": 12}),
        # NatPort conntrack tail
        ("cilium_version='1.19.6', kernel='6.12.0'", (), ALL),
    ],
    ids=["hostns-only", "drop", "icmp-host-unreachable", "cilium-1.16-legacy-tc", "cilium-1.19"],
)
def test_suites_pass_on_other_conforming_configurations(pytester: pytest.Pytester, config: str, suites: tuple[str, ...], outcomes: dict) -> None:
    result = run_suites(pytester, config, *suites)
    result.assert_outcomes(**outcomes)
    result.stdout.no_fnmatch_line("FAIL  *")


def test_hostns_only_coverage_is_recorded_with_the_per_packet_view(pytester: pytest.Pytester) -> None:
    run_suites(pytester, "socket_lb_hostns_only=True", "socket_lb").assert_outcomes(passed=4)
    ct = evidence(pytester, "ct.json")
    assert ct["socket_lb_coverage"] == "Hostns-only" and ct["svc_entries"] == 1 and ct["socket_peer"] == ct["app_peer"]


def test_drop_records_curl_timing_out(pytester: pytest.Pytester) -> None:
    run_suites(pytester, "no_backend_response='drop'", "no_backend").assert_outcomes(passed=4)
    ghost = evidence(pytester, "ghost.json")
    assert (ghost["curl_exit"], ghost["no_backend_response"], ghost["raw_syn"]["verdict"]) == (28, "drop", "timeout")
    assert ghost["seconds"] == pytest.approx(5.0)


FAULTS = [
    ("iptables", "faults=Faults(kube_proxy_rules='nft')", 2,
     ["*iptables: kube-proxy's service rules are on the nodes*KUBE-SVC*", "*iptables: rules name web's ClusterIP 10.96.*"]),
    ("iptables", "faults=Faults(kube_proxy_rules='legacy')", 2,
     ["*iptables: kube-proxy's service rules are on the nodes*(iptables-legacy)*"]),
    ("backend_slots", "faults=Faults(slots_cap=3)", 1,
     ["*backend slots did not converge after scaling web to 4: timed out after *waiting for 4 Ready web pods whose addresses fill web's BPF LB slots on every agent; last observed: 4/4 pods Ready*fake-worker: 3 slots*"]),
    ("socket_lb", "faults=Faults(socket_lb_broken=True)", 2,
     ["*socket LB (agent reports coverage Full): the socket's peer is the service address*not rewritten at connect()*service translation entries exist*"]),
    ("nodeport", "faults=Faults(nodeport_listener=True)", 1,
     ["*NodePort: 1 sockets listen on :30780 on the node; the answer must come from BPF, not a process*"]),
    ("no_backend", "faults=Faults(no_backend_silent_drop=True)", 3,
     ["*no backend: the agent says ServiceNoBackendResponse=reject, but curl to ghost exited 28 after 5.00s*silently dropped*"]),
]


@pytest.mark.parametrize(("suite", "config", "failed", "messages"), FAULTS, ids=[f"{s}-{c.split('(')[1].split('=')[0]}" + ("-legacy" if "legacy" in c else "") for s, c, _, _ in FAULTS])
def test_each_suite_fails_on_its_fault_naming_the_property(pytester: pytest.Pytester, suite: str, config: str, failed: int, messages: list[str]) -> None:
    result = run_suites(pytester, config, suite)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == failed, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(messages)
    result.stdout.fnmatch_lines(["FAIL  *"])
    failures = list((pytester.path / "artifacts" / "fake" / "failures").iterdir())
    assert failures, "a failure bundle was saved"
    files = {p.name for p in failures[0].iterdir()}
    assert {"pods.txt", "fake-worker-service-list.txt", "fake-worker-bpf-lb-list.txt", "fake-worker-bpf-ct-list-global.txt"} <= files
    result.stdout.fnmatch_lines(["*kpr: fake-worker: bpf lb list*"])


def test_a_fault_in_one_suite_does_not_fail_the_others(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "faults=Faults(nodeport_listener=True)")
    result.assert_outcomes(passed=31, failed=1, xfailed=2)
    result.stdout.fnmatch_lines_random(["FAIL  NodePort *", "pass  iptables *", "pass  socket LB *"])


FIELDS = {
    "iptables.json": {"cluster_ip", "kube_svc_lines", "cluster_ip_lines", "cilium_lines", "kube_proxy_replacement"},
    "svc.json": {"service_id", "frontend", "backends", "backend_pods"},
    "scale.json": {"backends", "new_backends", "convergence_seconds"},
    "ct.json": {"client", "app_peer", "socket_peer", "backend", "backend_pod", "svc_entries", "socket_lb_coverage"},
    "prog.json": {"endpoint_id", "interface", "ifindex", "attach", "program", "policy_map", "tc_filter_lines"},
    "nodeport.json": {"node_ip", "node_port", "http_code", "iptables_lines", "listen_sockets", "service_id"},
    "ghost.json": {"cluster_ip", "backends", "curl_exit", "seconds", "no_backend_response"},
}


def test_evidence_files_carry_the_labs_fields_with_numbers_as_numbers(pytester: pytest.Pytester) -> None:
    run_suites(pytester).assert_outcomes(**ALL)
    for name, fields in FIELDS.items():
        data = evidence(pytester, name)
        assert fields <= set(data), f"{name} lacks {sorted(fields - set(data))}"
    assert isinstance(evidence(pytester, "iptables.json")["kube_svc_lines"], int)
    svc, scale = evidence(pytester, "svc.json"), evidence(pytester, "scale.json")
    assert len(svc["backends"]) == 2 and all(p and p.startswith("web-") for p in svc["backend_pods"])
    assert len(scale["backends"]) == 4 and set(scale["new_backends"]) == set(scale["backends"]) - set(svc["backends"])
    ct = evidence(pytester, "ct.json")
    assert ct["client"].endswith(":40404") and ct["socket_peer"] == ct["backend"] and ct["svc_entries"] == 0
    np_ = evidence(pytester, "nodeport.json")
    assert (np_["node_port"], np_["http_code"], np_["listen_sockets"], np_["iptables_lines"]) == (30780, 200, 0, 0)
    report = dict(line.split("=", 1) for line in (pytester.path / "artifacts" / "fake" / "report.txt").read_text().splitlines())
    assert list(report) == ["kube_proxy_replacement", "socket_lb_coverage", "web_backends", "holder_backend", "holder_program",
                            "nodeport_iptables_lines", "ghost_no_backend_response"]
    assert report["web_backends"] == "2", "read from the current state (scaled back to 2), not copied from scale.json"
    assert report["holder_program"] == "cil_from_container" and report["ghost_no_backend_response"] == "reject"


def test_a_taken_nodeport_is_a_clear_setup_error(pytester: pytest.Pytester) -> None:
    squatter = """
FAKE.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
FAKE.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "squatter", "namespace": "other"},
             "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [{"port": 1, "nodePort": 30780}]}})
"""
    shutil.copytree(SUITES, pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config="")) + squatter)
    result = pytester.runpytest(str(pytester.path / "suites" / "test_nodeport.py"), "-m", "kpr", "-p", "no:cacheprovider", "--import-mode=importlib", *FAST)
    result.assert_outcomes(errors=5)
    result.stdout.fnmatch_lines(["*NodePort 30780 is already allocated in this cluster; pick a free one with --kpr-nodeport*"])


def test_shared_vip_with_cilium_118_behaviour_records_the_gap_and_the_recovery(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "", "shared_vip", args=("-rx",))
    result.assert_outcomes(passed=10, xfailed=2)
    result.stdout.fnmatch_lines(["XFAIL *test_claimant_frontend_appears_after_the_owner_is_deleted* - known gap frontend-conflict-requeue in Cilium 1.18.12 (>=1.18.0)*"])
    data = evidence(pytester, "sharedvip.json")
    for way in ("external-ips", "lb-ipam"):
        steps = {s["step"]: s for s in data[way]["steps"]}
        assert steps["claim"]["owner_of_vip"].endswith("vip-owner-" + ("eip" if way == "external-ips" else "lbipam"))
        assert steps["owner-deleted"]["appeared_by_itself"] is False and steps["follow-up"]["installed"] is True
    assert data["claim-before-release"]["predicted_owner"] is None and data["claim-before-release"]["observed_owner"] is None
    assert data["generated"]["seed"] and len(data["generated"]["steps"]) >= 4 and data["generated"]["sequence"]


def test_a_fixed_cilium_turns_the_strict_xfail_into_a_reported_fix(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "lb_variant='requeue'", "shared_vip")
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] known gap frontend-conflict-requeue in Cilium 1.18.12*"])
    failed = {line.split("::")[-1].split("[")[0].split(" ")[0] for line in result.stdout.lines if line.startswith("FAILED")}
    assert "test_claimant_frontend_appears_after_the_owner_is_deleted" in failed
    assert result.parseoutcomes().get("xfailed") is None


def test_a_claimant_installed_while_the_owner_exists_fails_the_suite(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "lb_variant='steal'", "shared_vip", args=("--kpr-seed=1",))
    assert result.parseoutcomes().get("failed", 0) >= 2
    result.stdout.fnmatch_lines(["*shared VIP (external-ips): while the owner exists 198.18.10.80:80/TCP belongs to *vip-claimant-eip; the claimant must be rejected*"])
    result.stdout.fnmatch_lines(["*shared VIP model vs cluster (seed 1, --kpr-seed=1 replays it): sequence *; after event * the model (cilium-1.18) says {*}, the agent {*}*"])


def test_lbipam_avoiding_the_conflict_skips_that_way_with_the_ips(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "lbipam_reassigns_on_conflict=True", "shared_vip", args=("-rs",))
    result.assert_outcomes(passed=6, skipped=5, xfailed=1)
    result.stdout.fnmatch_lines(["SKIPPED * lb-ipam: LB-IPAM avoided the conflict: the claimant moved from 198.18.20.10 to 198.18.20.11 when it asked for port 80 (owner keeps 198.18.20.10)"])
