"""The conformance suites end to end, under pytester, against the in-memory fake cluster.

The fake answers every command in the real formats from its own state. Here: the suites pass on every
conforming configuration, with complete evidence; tests/test_faults.py shows each fault failing exactly
the tests that check it.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from unittest import mock

import pytest

from helpers import ALL_SKIPPED, assert_the_rest_passed, holds_schema, selected
from pytest_kpr.plugin.markers import suites_in

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

# The fake runs on a virtual clock (pytest_kpr.core.clock): a wait costs no real time and cannot end early on a busy
# machine, so the timeouts need no scaling for speed. They are scaled for CPU: a fault that never converges is polled
# at a fixed cadence for its whole bound (the backend-slots watch reads every agent every 250 ms: 960 reads for the
# 240 s of PODS_READY + DATAPATH_CONVERGENCE, about 15 ms of CPU each); x 0.05 leaves 48.
BOUND = ("--kpr-timeout-scale=0.05",)


def run_suites(pytester: pytest.Pytester, config: str = "", *only: str, args: tuple[str, ...] = ()) -> pytest.RunResult:
    dest = pytester.path / "suites"
    shutil.copytree(SUITES, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))  # compiled again there anyway
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config=config)))
    targets = [str(dest / f"test_{name}.py") for name in only] or [str(dest)]
    if "ip_families=" in config:  # the families the fake serves are the ones the family-dependent suites run for
        fams = re.search(r"ip_families=\(([^)]*)\)", config)
        assert fams is not None, config
        args = (f"--kpr-ip-families={','.join(f.strip(' ,') for f in fams.group(1).replace(chr(39), '').split(',') if f.strip(' ,'))}", *args)
    # importlib mode: the outer session has imported the real suites under the same module names
    return pytester.runpytest(*targets, "-m", "kpr", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider", "--import-mode=importlib", *BOUND, *args)


def evidence(pytester: pytest.Pytester, name: str) -> dict:
    return _read(pytester.path / "artifacts" / "fake", name)


def _read(art: Path, name: str) -> dict:
    return json.loads((art / name).read_text())


#: every suite, conforming: helpers.assert_the_rest_passed (the known skips and xfails, every other selected test passed)
ALL: dict = {}

#: the tests that only read the healthy run (tests/conftest.py sends them to one xdist worker, which runs it once)
HEALTHY_READERS = ("test_every_suite_passes_on_a_conforming_cluster", "test_evidence_files_carry_the_labs_fields_with_numbers_as_numbers")

_SHARED: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[pytest.RunResult, Path]] = {}


def shared_run(pytester: pytest.Pytester, config: str = "", *only: str, args: tuple[str, ...] = ()) -> tuple[pytest.RunResult, Path]:
    """A run of the suites (``only`` these, else every one) that several tests only read (its output, its evidence): the
    first of them runs it, in its pytester directory; the others get the same result and evidence directory. Under xdist
    the readers go to one worker (tests/conftest.py, pytest_xdist_make_scheduler); readers that land apart still pass,
    each worker runs it once."""
    key = (config, only, args)
    if key not in _SHARED:
        _SHARED[key] = (run_suites(pytester, config, *only, args=args), pytester.path / "artifacts" / "fake")
    return _SHARED[key]


def healthy_run(pytester: pytest.Pytester) -> tuple[pytest.RunResult, Path]:
    """One run of every suite against the conforming fake, shared by the tests that only read it."""
    return shared_run(pytester)


def test_every_suite_passes_on_a_conforming_cluster(pytester: pytest.Pytester) -> None:
    result, art = healthy_run(pytester)
    n = assert_the_rest_passed(result)
    result.stdout.fnmatch_lines(["cluster cost: * agent execs, * node commands, * other pod execs, * API calls (* commands); most: * in suites/*"])
    cost = _read(art, "cluster.json")["cost"]
    line = next(line for line in result.stdout.lines if line.startswith("cluster cost: "))
    assert line.startswith(f"cluster cost: {cost['run']['agent_execs']} agent execs, {cost['run']['node_commands']} node commands, "
                           f"{cost['run']['pod_execs']} other pod execs, {cost['run']['api_calls']} API calls"), "summary and cluster.json agree"
    assert cost["run"]["agent_execs"] > 0 and cost["run"]["commands"] == sum(cost["run"][k] for k in ("agent_execs", "pod_execs", "node_commands"))
    assert cost["tests"] == n and cost["most_commands"][0]["commands"] > 0
    result.stdout.fnmatch_lines(["*= kpr properties =*"])
    # the waits ran on the fake's virtual clock, and the evidence says so
    result.stdout.fnmatch_lines(["evidence: * (durations on the fake cluster's virtual clock)"])
    assert _read(art, "cluster.json")["clock"] == "virtual" and _read(art, "results.json")["run"]["clock"] == "virtual"
    for name in ("cluster.json", "results.json"):  # the schemas kpr matrix reads with and the documentation publishes
        holds_schema(_read(art, name), name)
    result.stdout.fnmatch_lines_random([
        "pass  iptables        0 KUBE-SVC, 0 KUBE-SEP, 0 ClusterIP lines on 3 nodes*",
        "pass  backend slots   4 slots on 3 agents in *s*",
        "pass  socket LB       getpeername 10.96.*:80, socket 10.244.*:8080 (Full)*",
        "pass  NodePort        HTTP 200 on 172.18.0.3:30780, 0 listeners, 0 iptables lines*",
        "pass  no backend      pod curl exit 7 in 0.00s (socket), NodePort raw SYN icmp-unreachable ICMP 3/3 (reject)  (5 passed, 1 skipped)",
        "pass  shared VIP      claimant rejected, owner HTTP 200; appeared by itself: False  (12 passed, 2 xfailed)",
    ])
    # every suite's declared evidence (its pytest.mark.kpr contract), but Maglev's (skipped: the fake's agents report Random),
    # trafficDistribution's (skipped: service topology off), forwarding mode's (skipped: bpf-lb-mode-annotation off), local
    # redirect's (skipped: Local Redirect Policy off), the upgrade's (collected only with --kpr-upgrade-to), and the run's own files
    declared = {e for suite, _ in suites_in(SUITES).values() for e in suite.evidence} - {
        "maglev.json", "traffic-distribution.json", "forwarding-mode.json", "local-redirect.json", "upgrade.json"}
    assert sorted(p.name for p in art.iterdir() if p.is_file()) == \
        sorted(declared | {"cluster.json", "report.txt", "results.json", "recording.jsonl.gz"})


NO_BACKEND_PASS = {"passed": 5, "skipped": 1}  # Full coverage: the pod's raw SYN is recorded only
NO_BACKEND_ALL_JUDGED = {"passed": 6}  # Hostns-only: bpf_lxc handles the pod's raw SYN, so it is judged too


@pytest.mark.parametrize(
    ("config", "suites", "outcomes"),
    [
        # pods take the per-packet path (bpf_lxc): the socket-LB and no-backend expectations follow
        # (the UDP suite needs socket LB in pod namespaces: it skips, with the reason)
        ("socket_lb_hostns_only=True", ("socket_lb", "no_backend", "udp"), {"passed": 5 + 6, "skipped": 4}),
        # drop: the socket plane still fails at once; the per-packet plane's answers become timeouts
        ("no_backend_response='drop'", ("no_backend", "udp"), {"passed": 5 + 4, "skipped": 1}),
        ("no_backend_response='drop', socket_lb_hostns_only=True", ("no_backend",), NO_BACKEND_ALL_JUDGED),
        # below kernel 6.1 the socket hook cannot set the errno: connect() fails with EPERM (datapath.SOCKET_NO_BACKEND_OLD_KERNEL)
        ("kernel='5.15.0-127-generic'", ("no_backend", "udp"), {"passed": 5 + 4, "skipped": 1}),
        # enable-no-service-endpoints-routable=false: the per-packet plane hands the SYN to the node's stack, which resets
        ("no_service_endpoints_routable=False", ("no_backend",), NO_BACKEND_PASS),
        ("no_service_endpoints_routable=False, no_backend_response='drop'", ("no_backend", "etp"), {"passed": 5 + 4, "skipped": 1}),
        # ... and under hostns-only coverage a pod's SYN to the ClusterIP continues untranslated: nothing answers it
        ("no_service_endpoints_routable=False, socket_lb_hostns_only=True", ("no_backend",), NO_BACKEND_ALL_JUDGED),
        # the oldest supported minor, with legacy tc attachments
        # (the wildcard drop of an unknown port on a VIP is 1.19's: recorded, skipped; on 1.18 a Service's ranges hold on every
        # frontend type, its NodePort and externalIPs judged too)
        ("cilium_version='1.18.14', attach_mode='tc'", (), {"rest_skipped": ALL_SKIPPED + 1}),
        # NatPort conntrack tail
        # (1.19.2 and later 1.19 releases carry the EPERM regression #45184 reports: the fault table's cilium-1.19.8 row)
        # (before 1.20 whether the ranges hold on an externalIPs address is not known: recorded, skipped)
        ("cilium_version='1.19.1', kernel='6.12.0'", (), {"rest_skipped": ALL_SKIPPED + 1}),
        # the dsr profile (native routing): the backend sees the outside client's address; eTP=Local and the rest are unchanged
        ("nodeport_mode='DSR', routing_mode='Native'", ("dsr", "etp", "nodeport"), {"passed": 1 + 4 + 5}),
        # SNAT in native routing: the backend sees the receiving node's InternalIP (tunnel, the default: its CiliumInternalIP)
        ("routing_mode='Native'", ("dsr",), {"passed": 1}),
        # eTP=Local under drop: the node without a local backend drops instead of rejecting; still not served
        ("no_backend_response='drop'", ("etp",), {"passed": 4}),
        # the maglev profile: one seed, balanced tables, the same backend through every node, little remapping
        ("lb_algorithm='Maglev', maglev_seed='a3ByLW1hZ2xldnNk'", ("maglev", "nodeport", "etp"), {"passed": 5 + 5 + 4}),
        # enable-internal-traffic-policy false: Cilium ignores internalTrafficPolicy, and the iTP suite skips, saying so
        ("cilium_version='1.18.14', enable_internal_traffic_policy='false'", ("itp",), {"skipped": 3}),
        # from 1.19 the option is gone: a leftover value does not switch the policy off, and the suite runs
        ("enable_internal_traffic_policy='false'", ("itp",), {"passed": 3}),
        # enable-k8s-terminating-endpoint false: with only terminating backends the Service has none (the no-backend answer)
        ("k8s_terminating_endpoint='false'", ("terminating",), {"passed": 3}),
        # the small-maps profile: the suite fills the 512-entry map on purpose; the overflow is the expected failure, shown
        ("lb_map_max=512", ("maps",), {"passed": 3, "xfailed": 1}),
        # a smaller reverse-NAT map fills first (its entry is written before the master): the overflow is shown with its error
        ("lb_map_max=512, lb_rev_nat_map_max=200", ("maps",), {"passed": 3, "xfailed": 1}),
        # no wildcard entry where the rule says none (datapath.SRC_WILDCARD): before 1.19, with them turned off, and with a
        # default LB class other than LB-IPAM's; the suite expects none and sees none
        ("cilium_version='1.18.14'", ("maps",), {"passed": 3, "skipped": 1}),
        ("lb_wildcard_entries='false'", ("maps",), {"passed": 3, "skipped": 1}),
        ("default_lb_service_ipam='nodeipam'", ("maps",), {"passed": 3, "skipped": 1}),
        # the topology profile: trafficDistribution honoured; the other suites' Services have none, so they are unchanged
        ("service_topology=True", ("traffic_distribution", "nodeport", "affinity"), {"passed": 3 + 5 + 6}),
        # the topology profile, both families
        ("service_topology=True, ip_families=('IPv4', 'IPv6')", ("traffic_distribution",), {"passed": 6}),
        # per packet over IPv6 a pod reaching itself needs the IPv6 service loopback of 1.19 (SRC_HAIRPIN_LOOPBACK6): on 1.18
        # the IPv6 hairpin is recorded and skipped, from 1.19 judged
        ("socket_lb_hostns_only=True, ip_families=('IPv4', 'IPv6'), cilium_version='1.18.14'", ("hairpin",), {"passed": 2, "skipped": 2}),
        ("socket_lb_hostns_only=True, ip_families=('IPv4', 'IPv6'), cilium_version='1.19.8'", ("hairpin",), {"passed": 4}),
        # bpf-lb-source-range-all-types: the ranges hold on the NodePort too (SRC_SOURCE_RANGES_TYPES); before 1.20 whether they
        # hold on an externalIPs address is not known on 1.19 (not judged); 1.18 checks every frontend type
        ("lb_source_range_all_types=True", ("source_ranges",), {"passed": 8}),
        ("cilium_version='1.19.8'", ("source_ranges",), {"passed": 7, "skipped": 1}),
        ("cilium_version='1.18.14'", ("source_ranges",), {"passed": 8}),
        # the agents' own mode SNAT with the annotations counted: fm-dsr is DSR, fm-snat SNAT
        ("routing_mode='Native', lb_mode_annotation=True", ("forwarding_mode",), {"passed": 2}),
        # a redirect per family
        ("local_redirect_policy=True, ip_families=('IPv4', 'IPv6')", ("local_redirect",), {"passed": 2}),
    ],
    ids=["hostns-only", "drop", "drop-hostns-only", "kernel-5.15-eperm", "not-routable", "not-routable-drop", "not-routable-hostns-only",
         "cilium-1.18-legacy-tc",
         "cilium-1.19", "dsr", "snat-native", "etp-drop", "maglev", "itp-disabled-1.18", "itp-option-left-on-1.20", "terminating-option-off", "small-maps", "small-rev-nat-map",
         "no-wildcard-before-1.19", "wildcard-entries-off", "default-class-nodeipam", "topology", "topology-dual-stack",
         "hairpin6-per-packet-1.18", "hairpin6-per-packet-1.19", "source-ranges-all-types", "source-ranges-1.19", "source-ranges-1.18",
         "forwarding-mode-under-snat", "local-redirect-dual-stack"],
)
def test_suites_pass_on_other_conforming_configurations(pytester: pytest.Pytester, config: str, suites: tuple[str, ...], outcomes: dict) -> None:
    result = run_suites(pytester, config, *suites)
    if outcomes is ALL:
        assert_the_rest_passed(result)
    elif "rest_skipped" in outcomes:
        assert_the_rest_passed(result, skipped=outcomes["rest_skipped"])
    else:
        result.assert_outcomes(**outcomes)
    result.stdout.no_fnmatch_line("FAIL  *")


#: what each profile changes, and the suites it changes (issue 55: each passes, as a healthy cluster of that profile answers,
#: on every supported minor)
PROFILE_SUITES = {"netkit": ("socket_lb",), "xdp": ("nodeport", "north_south", "affinity"), "topology": ("traffic_distribution",),
                  "dsr": ("forwarding_mode", "dsr"), "lrp": ("local_redirect",)}


def _profile_config(profile: str, version: str, **extra: object) -> str:
    from pytest_kpr.testing import PROFILE_CONFIG

    return ", ".join(f"{k}={v!r}" for k, v in {**PROFILE_CONFIG[profile], "cilium_version": version, **extra}.items())


@pytest.mark.parametrize("version", ["1.18.14", "1.19.8", "1.20.5"])
@pytest.mark.parametrize("profile", sorted(PROFILE_SUITES))
def test_each_profile_passes_on_every_supported_minor(pytester: pytest.Pytester, profile: str, version: str) -> None:
    """netkit: the pod's program is the netkit peer's (datapath.SRC_NETKIT_ATTACH); xdp on kind: the requests a node would
    forward to another node skip, saying why (SRC_XDP_KIND); topology: PreferSameNode is judged from 1.20 only
    (SRC_PREFER_SAME_SINCE), PreferClose everywhere; dsr: the forwarding-mode annotations count (bpf-lb-mode-annotation);
    lrp: Local Redirect Policies are honoured."""
    result = run_suites(pytester, _profile_config(profile, version), *PROFILE_SUITES[profile], args=("-rs",))
    outcomes = result.parseoutcomes()
    assert not outcomes.get("failed") and not outcomes.get("errors"), result.stdout.str()[-3000:]
    if profile == "netkit":
        assert evidence(pytester, "prog.json")["attach"] == "netkit/peer"
    if profile == "xdp":
        assert outcomes["skipped"] == 1 + 2 + 3, outcomes  # NodePort 1, north-south 2, affinity from outside 3
        result.stdout.fnmatch_lines(["SKIPPED [[]6[]] *requires feature cross-node-forward, which is disabled on this cluster: on kind "
                                     "with NodePort XDP acceleration (Native) a node forwards such a request with XDP_TX*"])
    if profile == "topology":
        same_node = "requires Cilium >= 1.20, cluster runs " + version
        assert (same_node in result.stdout.str()) == (version < "1.20"), "PreferSameNode is judged from 1.20 only"
        assert outcomes["passed"] == (1 if version < "1.20" else 3), outcomes
    if profile in ("dsr", "lrp"):  # the suites each profile turns on run, none skipped
        assert outcomes == {"passed": 2 + 1 if profile == "dsr" else 1}, outcomes


def test_xdp_off_kind_forwards_across_nodes_and_the_outside_tests_run(pytester: pytest.Pytester) -> None:
    """The same profile on nodes that are not kind's (no kind:// provider ID): nothing is skipped for it, all pass."""
    result = run_suites(pytester, _profile_config("xdp", "1.20.5", node_provider=""), "nodeport", "north_south")
    result.assert_outcomes(passed=5 + 4)


def test_hostns_only_coverage_is_recorded_with_the_per_packet_view(pytester: pytest.Pytester) -> None:
    run_suites(pytester, "socket_lb_hostns_only=True", "socket_lb").assert_outcomes(passed=5)
    ct = evidence(pytester, "ct.json")
    assert ct["socket_lb_coverage"] == "Hostns-only" and ct["svc_entries"] == 1 and ct["socket_peer"] == ct["app_peer"]


def test_drop_fails_pods_at_once_and_times_out_only_on_the_per_packet_plane(pytester: pytest.Pytester) -> None:
    """Item 2 of the fidelity review: the old suite expected curl exit 28 under drop; the socket plane ignores
    ServiceNoBackendResponse (bpf_sock.c), so a pod's curl exits 7 at once and only the NodePort SYN times out."""
    run_suites(pytester, "no_backend_response='drop'", "no_backend").assert_outcomes(**NO_BACKEND_PASS)
    ghost = evidence(pytester, "ghost.json")
    at = ghost["attempts"]
    assert (ghost["curl_exit"], ghost["no_backend_response"]) == (7, "drop") and ghost["seconds"] < 1.0
    assert ghost["curl_exit"] != 28, "the old expectation (curl 28 under drop) would fail against the sourced behaviour"
    assert (at["pod_curl"]["plane"], at["pod_connect"]["verdict"], at["pod_connect"]["errno"]) == ("socket", "unreachable", "EHOSTUNREACH")
    assert (at["nodeport_raw_syn"]["plane"], at["nodeport_raw_syn"]["verdict"]) == ("per-packet", "timeout")
    assert "bpf_sock.c" in at["pod_curl"]["rule"] and "bpf_host" in at["nodeport_raw_syn"]["rule"]


def test_the_reject_is_measured_where_the_per_packet_plane_runs(pytester: pytest.Pytester) -> None:
    """Item 1: the old suite judged a pod's raw SYN to the ClusterIP (expecting ICMP); under Full coverage
    bpf_lxc has no per-packet LB and nothing answers it. The NodePort SYN from another node gets ICMP 3/3."""
    run_suites(pytester, "", "no_backend", args=("-rs",)).assert_outcomes(**NO_BACKEND_PASS)
    at = evidence(pytester, "ghost.json")["attempts"]
    assert (at["pod_raw_syn"]["plane"], at["pod_raw_syn"]["verdict"]) == ("none", "timeout")
    assert at["pod_raw_syn"]["verdict"] != "icmp-unreachable", "the old expectation would fail against the sourced behaviour"
    assert (at["nodeport_raw_syn"]["verdict"], at["nodeport_raw_syn"]["icmp"]) == ("icmp-unreachable", [3, 3])
    assert at["nodeport_raw_syn"]["path"].startswith("raw SYN from fake-worker's host network to fake-worker2's NodePort 172.18.0.4:")
    assert (at["runner_raw_syn"]["verdict"], at["runner_raw_syn"]["icmp"]) == ("icmp-unreachable", [3, 3])


def test_a_fault_in_one_suite_does_not_fail_the_others(pytester: pytest.Pytester) -> None:
    """Beside the suite it breaks, two others in the same run pass (make test-reach runs every fault group under every
    suite its rows do not declare)."""
    result = run_suites(pytester, "faults=Faults(nodeport_listener=True)", "nodeport", "iptables", "socket_lb")
    result.assert_outcomes(passed=5 + 3 + 5 - 1, failed=1)
    result.stdout.fnmatch_lines_random(["FAIL  NodePort *", "pass  iptables *", "pass  socket LB *"])


FIELDS = {
    "iptables.json": {"cluster_ip", "kube_svc_lines", "kube_sep_lines", "kube_proxy_lines", "cluster_ip_lines", "cilium_lines",
                      "kube_proxy_replacement"},
    "svc.json": {"service_id", "frontend", "backends", "backend_pods"},
    "scale.json": {"backends", "new_backends", "convergence_seconds"},
    "ct.json": {"client", "app_peer", "socket_peer", "backend", "backend_pod", "svc_entries", "socket_lb_coverage"},
    "prog.json": {"endpoint_id", "interface", "ifindex", "attach", "program", "policy_map", "tc_filter_lines"},
    "nodeport.json": {"node_ip", "node_port", "http_code", "iptables_lines", "listen_sockets", "service_id"},
    "ghost.json": {"cluster_ip", "node_port", "backends", "curl_exit", "seconds", "no_backend_response", "socket_lb_coverage", "attempts"},
}


def test_evidence_files_carry_the_labs_fields_with_numbers_as_numbers(pytester: pytest.Pytester) -> None:
    result, art = healthy_run(pytester)
    assert_the_rest_passed(result)
    for name, fields in FIELDS.items():
        data = _read(art, name)
        assert fields <= set(data), f"{name} lacks {sorted(fields - set(data))}"
    assert isinstance(_read(art, "iptables.json")["kube_svc_lines"], int)
    svc, scale = _read(art, "svc.json"), _read(art, "scale.json")
    assert len(svc["backends"]) == 2 and all(p and p.startswith("web-") for p in svc["backend_pods"])
    assert len(scale["backends"]) == 4 and set(scale["new_backends"]) == set(scale["backends"]) - set(svc["backends"])
    ct = _read(art, "ct.json")
    assert ct["client"].endswith(":40404") and ct["socket_peer"] == ct["backend"] and ct["svc_entries"] == 0
    np_ = _read(art, "nodeport.json")
    assert (np_["node_port"], np_["http_code"], np_["listen_sockets"], np_["iptables_lines"]) == (30780, 200, 0, 0)
    report = dict(line.split("=", 1) for line in (art / "report.txt").read_text().splitlines())
    assert list(report) == ["kube_proxy_replacement", "socket_lb_coverage", "web_backends", "holder_backend", "holder_program",
                            "nodeport_iptables_lines", "ghost_no_backend_response"]
    assert report["web_backends"] == "2", "as the backend-slots suite saw web at 2 replicas (carried on its test's report)"
    assert report["holder_program"] == "cil_from_container" and report["ghost_no_backend_response"] == "reject"


def with_a_nodeport_squatter(pytester: pytest.Pytester) -> None:
    """The suites next to a fake whose NodePort 30780 another Service already holds."""
    squatter = """
FAKE.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
FAKE.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "squatter", "namespace": "other"},
             "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [{"port": 1, "nodePort": 30780}]}})
"""
    shutil.copytree(SUITES, pytester.path / "suites")
    pytester.makeconftest(textwrap.dedent(CONFTEST.format(config="")) + squatter)


def test_a_taken_nodeport_is_a_clear_setup_error(pytester: pytest.Pytester) -> None:
    with_a_nodeport_squatter(pytester)
    result = pytester.runpytest(str(pytester.path / "suites" / "test_nodeport.py"), "-m", "kpr", "-p", "no:cacheprovider", "--import-mode=importlib")
    result.assert_outcomes(errors=5)
    result.stdout.fnmatch_lines(["*NodePort 30780 is already allocated in this cluster; pick a free one with --kpr-nodeport*"])


def test_shared_vip_with_cilium_118_behaviour_records_the_gap_and_the_recovery(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "", "shared_vip", args=("-rx",))
    result.assert_outcomes(passed=12, xfailed=2)
    result.stdout.fnmatch_lines(["XFAIL *test_claimant_frontend_appears_after_the_owner_is_deleted* - known gap frontend-conflict-requeue in Cilium 1.20.2 (>=1.18.0)*"])
    data = evidence(pytester, "sharedvip.json")
    for way in ("external-ips", "lb-ipam"):
        steps = {s["step"]: s for s in data[way]["steps"]}
        assert steps["claim"]["owner_of_vip"].endswith("vip-owner-" + ("eip" if way == "external-ips" else "lbipam"))
        assert steps["owner-deleted"]["appeared_by_itself"] is False and steps["follow-up"]["installed"] is True
    assert data["claim-before-release"]["predicted_owner"] is None and data["claim-before-release"]["observed_owner"] is None
    assert data["generated"]["seed"] and len(data["generated"]["steps"]) >= 4 and data["generated"]["sequence"]


def test_the_release_watch_ends_once_cilium_has_processed_the_deletion_plus_the_settle_window(pytester: pytest.Pytester) -> None:
    """Settle, don't sleep: the watch ends when the owner's frontend is gone and a marker Service created after
    the deletion is Done (the reflector processes its buffer in order), plus --kpr-settle; not after 30 s."""
    run_suites(pytester, "", "shared_vip", args=("--kpr-settle=0.3",)).assert_outcomes(passed=12, xfailed=2)
    data = evidence(pytester, "sharedvip.json")
    for way in ("external-ips", "lb-ipam"):
        gone = {s["step"]: s for s in data[way]["steps"]}["owner-deleted"]
        assert gone["ended_by"] == "settled" and gone["appeared_by_itself"] is False, gone
        marks = gone["marks"]
        assert set(marks) == {"owner_gone", "marker_done", "processed"}, marks
        assert marks["processed"] == max(marks["owner_gone"], marks["marker_done"])
        assert 0.3 <= gone["watched_seconds"] - marks["processed"] < 1.5, gone
        assert gone["marker"].endswith(":80/TCP") and gone["settle_seconds"] == 0.3


def test_a_claimant_that_appears_late_is_still_seen_to_appear(pytester: pytest.Pytester) -> None:
    """A re-queue that comes 3 s after the deletion (inside the 5 s settle window) is seen: the known gap's strict
    xfail turns into the reported fix, and sharedvip.json says when the frontend appeared."""
    result = run_suites(pytester, "faults=Faults(late_requeue_s=3.0)", "shared_vip", args=("--kpr-settle=5", "-k", "external-ips"))
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] known gap frontend-conflict-requeue in Cilium 1.20.2*"])
    gone = {s["step"]: s for s in evidence(pytester, "sharedvip.json")["external-ips"]["steps"]}["owner-deleted"]
    # the fake re-queues at 3 s; its batching window closes 300 ms later; the settle window is read every 1 s
    assert gone["ended_by"] == "appeared" and 3.0 <= gone["marks"]["appeared"] < 5.0, gone


def test_a_claimant_that_appears_after_the_settle_window_is_reported_as_appeared_after(pytester: pytest.Pytester) -> None:
    """A re-queue 1.5 s after the deletion with a 1 s settle window: the watch ends (settled) before it, and
    the late look (a settle window later, before any follow-up update) sees it: the test fails with
    "appeared after N s", not "did not appear", and the figure says so."""
    result = run_suites(pytester, "faults=Faults(late_requeue_s=1.5)", "shared_vip", args=("--kpr-settle=1", "-k", "external-ips", "--runxfail"))
    result.stdout.fnmatch_lines(["*shared VIP (external-ips): the claimant's 198.18.10.80:80 appeared after *s, later than the settle window*",
                                 "*appeared by itself: after * s (late)*"])
    result.stdout.no_fnmatch_line("*did not appear within*")
    steps = {s["step"]: s for s in evidence(pytester, "sharedvip.json")["external-ips"]["steps"]}
    gone, late = steps["owner-deleted"], steps["late-look"]
    assert gone["ended_by"] == "settled" and gone["watched_seconds"] < 1.5, gone
    assert late["appeared"] and late["seconds_after_deletion"] >= 1.5, late
    assert list(steps) == ["owner", "claim", "owner-deleted", "late-look", "follow-up"]


def test_the_slowest_agent_is_timed_within_the_poll_resolution(pytester: pytest.Pytester) -> None:
    """One agent programs new backends 1 s after the others: scale.json times each backend per agent (read every
    250 ms), and the summary names that agent with its lag."""
    result = run_suites(pytester, "faults=Faults(slow_agent_on='fake-worker2', slow_agent_s=1.0)", "backend_slots",
                        args=())
    result.assert_outcomes(passed=3)
    timing = evidence(pytester, "scale.json")["timing"]
    assert timing["resolution_seconds"] == 0.25 and len(timing["endpointslice"]) == 2
    assert timing["slowest"]["node"] == "fake-worker2" and 0.7 <= timing["slowest"]["lag_seconds"] <= 1.6, timing
    assert all(lag is not None and lag < 0.5 for node, lag in timing["lag_seconds"].items() if node != "fake-worker2"), timing
    result.stdout.fnmatch_lines(["pass  backend slots   4 slots on 3 agents in *s; slowest agent fake-worker2 +1.*s after the EndpointSlice*"])


def test_the_conflict_shows_as_cilium_shows_it_tally_in_status_error_in_db_health(pytester: pytest.Pytester) -> None:
    """Item 3: the tally comes from plain `status`, the error text from `db/show health`; `--verbose` prints the
    reflector's leaf as "Failure processing services" without the error and (before PR #46739) no tally, so the
    old reading (the verbose tally, or the error in the verbose tree) finds nothing."""
    run_suites(pytester, "", "shared_vip").assert_outcomes(passed=12, xfailed=2)
    data = evidence(pytester, "sharedvip.json")
    for way in ("external-ips", "lb-ipam"):
        h = {s["step"]: s for s in data[way]["steps"]}["claim"]["health"]
        assert h["degraded"] == 1 and h["error_seen"] is True
        assert h["shown_by"] == ["status: Modules Health Degraded", "db/show health: agent.controlplane.loadbalancer-reflectors.job-reflect-services-endpoints"]
        (row,) = h["reflector"]
        assert (row["level"], row["message"]) == ("Degraded", "Failure processing services")
        assert "is owned by kpr-suite-shared-vip-" in row["error"] and row["error"].startswith("frontend already owned by another service: ")
        v = h["verbose"]
        assert v["tally"] is False and v["degraded_leaves"] == [
            "agent.controlplane.loadbalancer-reflectors.job-reflect-services-endpoints: Failure processing services"]
        assert not any("already owned" in leaf for leaf in v["degraded_leaves"]), "the old reading (error text in the tree) would fail"


def test_a_port_swap_stays_rejected_and_the_release_first_handoff_recovers_it(pytester: pytest.Pytester) -> None:
    """Item 7 on the fake: both swap upserts rejected as the model predicts (and both conflict errors shown),
    then the release-first handoff ends with the ports swapped and no error left."""
    run_suites(pytester, "", "shared_vip").assert_outcomes(passed=12, xfailed=2)
    swap = evidence(pytester, "sharedvip.json")["port-swap"]
    assert swap["variant"] == "cilium-1.18" and all(step["match"] for step in swap["steps"]), swap["steps"]
    ns = swap["rejected_after_swap"][0].rsplit("/", 1)[0]
    assert swap["rejected_after_swap"] == [f"{ns}/vip-swap-0", f"{ns}/vip-swap-1"]
    assert len(swap["swapped"]["agent"]["errors"]) == 2, "each rejected upsert's conflict is visible"
    vip = swap["vip"]
    assert swap["recovered"]["agent"] == {"owners": {f"{vip}:84/TCP": f"{ns}/vip-swap-1", f"{vip}:85/TCP": f"{ns}/vip-swap-0"}, "errors": []}


def test_externalips_way_skips_with_the_reason_when_the_mitigation_is_on(pytester: pytest.Pytester) -> None:
    """Item 4: with the CVE-2020-8554 mitigation on, a pod cannot reach a non-node externalIPs address (the old
    suite then failed on the owner's HTTP check); the way skips with the reason, the LB-IPAM way still runs."""
    result = run_suites(pytester, "external_ip_mitigation=True", "shared_vip", args=("-rs",))
    result.assert_outcomes(passed=8, skipped=5, xfailed=1)
    result.stdout.fnmatch_lines(["SKIPPED * external-ips: the CVE-2020-8554 ExternalIP mitigation is on (config -a DisableExternalIPMitigation)*"
                                 "bpf.disableExternalIPMitigation=true*"])


def test_a_fixed_cilium_turns_the_strict_xfail_into_a_reported_fix(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "lb_variant='requeue'", "shared_vip")
    result.stdout.fnmatch_lines(["*[[]XPASS(strict)[]] known gap frontend-conflict-requeue in Cilium 1.20.2*"])
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
    result.assert_outcomes(passed=8, skipped=5, xfailed=1)
    result.stdout.fnmatch_lines(["SKIPPED * lb-ipam: LB-IPAM avoided the conflict: the claimant moved from 198.18.20.10 to 198.18.20.11 when it asked for port 80 (owner keeps 198.18.20.10)"])


XDIST_CONFTEST = """
import os
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider

LOG = os.path.join(os.path.dirname(__file__), "provider-events.log")


class LoggingProvider(FakeProvider):
    def _log(self, what):
        with open(LOG, "a") as f:
            f.write(f"{what} {os.environ.get('PYTEST_XDIST_WORKER', 'main')}\\n")

    def provision(self, progress):
        self._log("provision")
        return super().provision(progress)

    def attach(self, shared, progress):
        self._log("attach")
        return super().attach(shared, progress)

    def teardown(self, progress):
        self._log("teardown")
        super().teardown(progress)


PROVIDER = LoggingProvider(FakeCluster(FakeConfig(pod_ready_ticks=2)))


def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""


#: the suites the xdist run runs: a dozen modules to spread over two workers, the ones whose summary lines it reads among them
XDIST_SUITES = ("iptables", "backend_slots", "socket_lb", "nodeport", "no_backend", "shared_vip", "headless", "kube_proxy", "hostport",
                "dsr", "etp", "udp")


def test_with_xdist_one_worker_provisions_the_others_attach_and_the_run_reports_once(pytester: pytest.Pytester) -> None:
    """`pytest -m kpr -n 2`: the run's file lock lets one worker provision and the other attach, the last one
    out tears down (once); each suite module runs in one worker; the controller merges the workers' parts
    into one summary, one report.txt and one cluster.json, and removes the run's lock directory."""
    shutil.copytree(SUITES, pytester.path / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    pytester.makeconftest(XDIST_CONFTEST)
    files = [f"suites/test_{m}.py" for m in XDIST_SUITES]
    result = pytester.runpytest_subprocess(*files, "-m", "kpr", "-n", "2", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=selected(result) - 2 - 1, skipped=1, xfailed=2)  # no backend's recorded raw SYN; shared VIP's known gap
    ran_on: dict[str, set[str]] = {}
    for line in result.stdout.lines:  # "[gw1] [ 12%] PASSED suites/test_affinity.py::test_..."
        m = re.match(r"\[(gw\d+)\] .*?(?:PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR) (suites/test_\w+\.py)::", line)
        if m:
            ran_on.setdefault(m.group(2), set()).add(m.group(1))
    assert len(ran_on) >= 10 and all(len(w) == 1 for w in ran_on.values()), f"each suite module in one worker: {ran_on}"
    events = sorted((pytester.path / "provider-events.log").read_text().split("\n")[:-1])
    kinds = [e.split()[0] for e in events]
    assert sorted(kinds) == ["attach", "provision", "teardown"], events
    (_, attacher), (_, provisioner) = (e.split() for e in events[:2])
    assert {attacher, provisioner} == {"gw0", "gw1"}, events
    out = result.stdout.str()
    assert out.count("= kpr properties =") == 1 and out.count("cluster cost:") == 1
    for prop in ("iptables", "backend slots", "socket LB", "NodePort", "no backend", "shared VIP"):
        result.stdout.fnmatch_lines([f"pass  {prop}*"])
    art = pytester.path / "artifacts" / "fake"
    # the run's suites' declared evidence (their pytest.mark.kpr contracts) and the run's own files, one recording per worker
    declared = {e for name, (suite, _) in suites_in(SUITES).items() if name.removeprefix("test_").removesuffix(".py") in XDIST_SUITES
                for e in suite.evidence}
    assert sorted(p.name for p in art.iterdir() if p.is_file()) == \
        sorted(declared | {"cluster.json", "report.txt", "results.json", "recording-gw0.jsonl.gz", "recording-gw1.jsonl.gz"})
    report = dict(line.split("=", 1) for line in (art / "report.txt").read_text().splitlines())
    assert not [k for k, v in report.items() if v.startswith("n/a")], f"every value came from some worker's reports: {report}"
    cluster = json.loads((art / "cluster.json").read_text())
    assert sorted(cluster["xdist"]["workers"]) == ["gw0", "gw1"] and cluster["xdist"]["provisioned_by"] == provisioner
    workers = cluster["cost"]["workers"]
    assert cluster["cost"]["run"]["commands"] == sum(w["commands"] for w in workers.values()) > 0
    assert not (pytester.path / "artifacts" / ".kpr-xdist").exists() or not any((pytester.path / "artifacts" / ".kpr-xdist").iterdir())


def test_a_run_with_xdist_writes_the_results_a_run_without_it_writes(pytester: pytest.Pytester) -> None:
    """The reporter sums the test reports wherever the run is summed up (pytest_kpr.plugin.reporter): with -n 2 and
    without, results.json holds the same kpr tests with the same outcomes and reasons, the same verdicts and counts,
    and a figure for the same properties; the cost of every test is in cluster.json either way, and report.txt (whose
    values the suites' test reports carry) is the same file."""
    shutil.copytree(SUITES, pytester.path / "suites", ignore=shutil.ignore_patterns("__pycache__"))
    files = [f"suites/test_{m}.py" for m in XDIST_SUITES]
    runs = {}
    for name, extra in (("one", []), ("two", ["-n", "2"])):
        r = pytester.runpytest_subprocess(*files, "-m", "kpr", "--kpr-provider=fake", *extra, f"--kpr-artifacts={name}",
                                          "-p", "no:cacheprovider")
        assert r.ret == 0, r.stdout.str()[-3000:]
        runs[name] = (json.loads((pytester.path / name / "fake" / "results.json").read_text()),
                      json.loads((pytester.path / name / "fake" / "cluster.json").read_text()))
    (one, one_cluster), (two, two_cluster) = runs["one"], runs["two"]

    def tests(res: dict) -> list[dict]:
        return sorted(({k: v for k, v in t.items() if k != "evidence"} for t in res["tests"]), key=lambda t: t["test"])

    assert tests(one) == tests(two) and len(tests(one)) >= 30
    assert {p: (v["verdict"], v["counts"]) for p, v in one["properties"].items()} == \
        {p: (v["verdict"], v["counts"]) for p, v in two["properties"].items()}
    assert {p for p, v in one["properties"].items() if v["figure"]} == {p for p, v in two["properties"].items() if v["figure"]} != set()
    assert one_cluster["cost"]["tests"] == two_cluster["cost"]["tests"] == len(tests(one))
    report = {name: dict(ln.split("=", 1) for ln in (pytester.path / name / "fake" / "report.txt").read_text().splitlines())
              for name in runs}
    assert not [v for r in report.values() for v in r.values() if v.startswith("n/a")], report
    # the same values, but the holder's backend: the web pod its connection was balanced to (either one, either run)
    assert {k: v for k, v in report["one"].items() if k != "holder_backend"} == {k: v for k, v in report["two"].items() if k != "holder_backend"}
    assert all(r["holder_backend"].endswith(":8080") for r in report.values()), report


@pytest.mark.parametrize(("config", "suite", "why"), [
    ("runner_net_raw=False", "no_backend", "the runner lacks CAP_NET_RAW"),
    ("runner_reaches_nodes=False", "nodeport", "the test runner has no specific route to 172.18.0.*"),
])
def test_an_outside_view_skip_is_a_failure_under_ci(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, config: str,
                                                    suite: str, why: str) -> None:
    """Without CI the test that needs the outside view skips with the reason; under CI=true (a cluster this run creates) the
    same skip fails, naming the option -- and --kpr-require-outside=no turns it back into a skip."""
    local = run_suites(pytester, config, suite, args=("-rs",))
    assert local.parseoutcomes().get("failed", 0) == 0 and local.parseoutcomes()["skipped"] >= 1
    local.stdout.fnmatch_lines([f"SKIPPED*no outside view: {why}*"])
    monkeypatch.setenv("CI", "true")
    ci = run_suites(pytester, config, suite)
    assert ci.parseoutcomes()["failed"] == 1, ci.stdout.str()[-3000:]
    ci.stdout.fnmatch_lines([f"*no outside view: {why} -- the outside view is required here (--kpr-require-outside=auto*"])
    assert ci.ret == 1
    opt_out = run_suites(pytester, config, suite, args=("--kpr-require-outside=no",))
    assert opt_out.parseoutcomes().get("failed", 0) == 0


def test_without_cap_net_admin_the_vips_from_outside_are_skipped_and_required_under_ci(pytester: pytest.Pytester,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Routing a VIP through a node needs CAP_NET_ADMIN on the runner (cluster.outside.LocalOutside.via): without it each
    test from outside skips with that reason (the in-cluster one still runs), and under CI=true each of them fails."""
    local = run_suites(pytester, "runner_net_admin=False", "north_south", "source_ranges", args=("-rs",))
    outcomes = local.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes["skipped"] == 11 and outcomes["passed"] == 1, outcomes
    local.stdout.fnmatch_lines(["SKIPPED*no outside view: the runner lacks CAP_NET_ADMIN, needed to route a VIP through a node*"])
    monkeypatch.setenv("CI", "true")
    ci = run_suites(pytester, "runner_net_admin=False", "north_south", "source_ranges")
    assert ci.parseoutcomes()["failed"] == 11, ci.stdout.str()[-3000:]


def failure_blocks(stdout: str) -> dict[str, list[str]]:
    """The terminal's FAILURES/ERRORS section, one block of lines per failure (pytest's `____ name ____` headers; a
    long name leaves room for a single underscore each side)."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        m = re.match(r"^_+ (.+?) _+$", line)
        if m:
            current = blocks.setdefault(m.group(1), [])
        elif re.match(r"^=+ .* =+$", line):
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def test_a_failure_prints_its_verdict_and_where_the_evidence_is_in_at_most_40_lines(pytester: pytest.Pytester) -> None:
    """A failing suite at default verbosity: the verdict that names the property, where the bundle went, a few lines of
    pods; the full agent dumps are in the bundle's files, not in the terminal."""
    result = run_suites(pytester, "faults=Faults(snat_address_swapped=True)", "dsr")
    result.assert_outcomes(failed=1)
    blocks = failure_blocks(result.stdout.str())
    assert blocks, result.stdout.str()[-2000:]
    for name, lines in blocks.items():
        assert len(lines) <= 40, f"{name}: {len(lines)} lines\n" + "\n".join(lines)
    text = "\n".join(next(iter(blocks.values())))
    assert "DSR/SNAT" in text and "saved under" in text and "service list" not in text.lower().split("saved under")[0]
    bundle = next((pytester.path / "artifacts" / "fake" / "failures").iterdir())
    assert {"fake-worker-service-list.txt", "fake-worker-bpf-lb-list.txt", "pods.txt"} <= {p.name for p in bundle.iterdir()}
    junit = pytester.path / "junit.xml"
    run = run_suites(pytester, "faults=Faults(snat_address_swapped=True)", "dsr", args=(f"--junitxml={junit}",))
    assert run.ret == 1 and 'name="kpr_evidence"' in junit.read_text(), "JUnit carries the bundle's path"


def test_a_fixture_error_gets_one_bundle_for_the_tests_it_errors(pytester: pytest.Pytester) -> None:
    with_a_nodeport_squatter(pytester)
    result = pytester.runpytest(str(pytester.path / "suites" / "test_nodeport.py"), "-m", "kpr", "-p", "no:cacheprovider",
                                "--import-mode=importlib", "--kpr-artifacts=artifacts")
    result.assert_outcomes(errors=5)
    bundles = list((pytester.path / "artifacts" / "fake" / "failures").iterdir())
    assert len(bundles) == 1, "one fixture error, one bundle (not five)"
    for name, lines in failure_blocks(result.stdout.str()).items():
        assert len(lines) <= 40 and any("saved under" in x for x in lines), name


def test_a_probe_dropped_at_an_agent_names_the_drop_reason_and_the_node(pytester: pytest.Pytester) -> None:
    """The per-packet plane of fake-worker drops the NodePort request from outside (a backend exists): the failure says
    what the client saw, and the agent's BPF drop counters say why and where."""
    result = run_suites(pytester, "faults=Faults(per_packet_drop_on='fake-worker')", "nodeport")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*NodePort from outside*",
                                 "drops since the run began: Service backend not found x1 on fake-worker (ingress, nodeport.h:1)*"])


#: the tests that run once per address family (they use kpr_family), by module
FAMILY_TESTS = {
    "test_socket_lb.py": ("test_application_sees_the_service_while_its_socket_points_at_a_backend",
                          "test_conntrack_out_entry_names_the_socket_peer", "test_backend_sees_the_holder_pod_address"),
    "test_no_backend.py": ("test_agent_lists_ghost_without_backends", "test_curl_from_a_pod_fails_as_its_plane_says",
                           "test_connect_from_a_pod_fails_as_its_plane_says",
                           "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                           "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer",
                           "test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it"),
    "test_hairpin.py": ("test_a_backend_reaches_its_own_service", "test_the_backend_sees_the_source_its_plane_gives"),
    "test_udp.py": ("test_an_unconnected_client_reads_the_reply_from_the_cluster_ip",
                    "test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip",
                    "test_a_backendless_udp_service_fails_the_datagram_at_once",
                    "test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on"),
    "test_nodeport.py": ("test_nodeport_answers_http_200_on_the_node", "test_nodeport_answers_from_outside_the_cluster",
                         "test_nobody_listens_on_the_nodeport", "test_no_rule_names_the_nodeport",
                         "test_agent_lists_the_wildcard_nodeport_frontend"),
    "test_etp.py": ("test_only_the_node_with_a_local_backend_serves_it_from_outside", "test_the_backend_sees_the_clients_own_address",
                    "test_in_cluster_cluster_ip_access_is_unaffected", "test_the_health_check_node_port_reports_each_nodes_local_endpoints"),
    "test_dsr.py": ("test_the_backend_sees_the_address_the_nodeport_mode_promises",),
    "test_affinity.py": ("test_a_client_stays_on_one_backend_with_session_affinity", "test_without_affinity_connections_spread_over_the_backends",
                         "test_the_affinity_expires_after_its_timeout"),
    "test_itp.py": ("test_a_pod_reaches_only_the_backends_on_its_own_node", "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
                    "test_traffic_from_outside_is_unaffected"),
    "test_hostport.py": ("test_the_host_port_answers_on_the_nodes_address", "test_the_agent_lists_a_host_port_frontend"),
    "test_backend_slots.py": ("test_web_slots_hold_exactly_its_ready_endpoints", "test_slots_converge_to_the_endpointslice_after_scaling_to_four",
                              "test_slots_follow_a_scale_down"),
    "test_terminating.py": ("test_an_established_connection_keeps_working_while_its_backend_terminates",
                            "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists",
                            "test_when_only_terminating_backends_remain_new_connections_follow_the_rule"),
    "test_selectorless.py": ("test_every_agent_serves_the_selectorless_service_from_its_endpointslice",),
    "test_starting.py": ("test_no_agent_gives_a_starting_endpoint_a_slot",),
}
DUAL_STACK = "ip_families=('IPv4', 'IPv6')"


def test_the_eperm_regression_of_1_19_is_a_known_regression_not_a_pass_or_a_failure(pytester: pytest.Pytester) -> None:
    """Cilium 1.19.2 up to 1.20.0 fails a backendless connect() or sendto() with EPERM on every kernel (cilium/cilium#45184,
    datapath.EPERM_REGRESSION): on 1.19.8 the three socket-plane tests that meet it report xfail naming it; every other
    test passes (outside the window the same EPERM fails them: the fault table's eperm-on-a-6.1-kernel row)."""
    result = run_suites(pytester, "cilium_version='1.19.8', kernel='6.12.0'", "itp", "no_backend", "udp", args=("-rx",))
    outcomes = result.parseoutcomes()
    assert outcomes.get("xfailed") == 3 and not outcomes.get("failed") and not outcomes.get("errors"), result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines_random([
        "XFAIL suites/test_no_backend.py::test_connect_from_a_pod_fails_as_its_plane_says - known Cilium regression cilium/cilium#45184 in 1.19.8*",
        "XFAIL suites/test_udp.py::test_a_backendless_udp_service_fails_the_datagram_at_once - known Cilium regression cilium/cilium#45184*",
        "XFAIL suites/test_itp.py::test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer - known Cilium regression*"])


def test_a_dual_stack_cluster_runs_each_family_dependent_test_once_per_family(pytester: pytest.Pytester) -> None:
    """With both families, every family-dependent test runs as [IPv4] and [IPv6] and passes (the one recorded-only test
    skips in each), its evidence is per family, and results.json says which family each test was for."""
    result = run_suites(pytester, DUAL_STACK, *(m[len("test_"):-len(".py")] for m in FAMILY_TESTS), args=("-rA",))
    ran = {line.split(" ")[1].split("/")[-1]: line.split(" ")[0] for line in result.stdout.lines if line.startswith(("PASSED ", "SKIPPED "))}
    for module, tests in FAMILY_TESTS.items():
        for test in tests:
            for family in ("IPv4", "IPv6"):
                assert f"{module}::{test}[{family}]" in ran or module == "test_no_backend.py" and "raw_syn_from_a_pod" in test, (test, family)
    assert_the_rest_passed(result, skipped=2, xfailed=0)  # the pod's raw SYN under Full coverage, once per family
    result.stdout.fnmatch_lines(["kpr: provider kind*, families IPv4+IPv6, *"])
    for name in ("ct", "ghost", "udp", "udp-termination", "hairpin", "nodeport", "etp", "dsr", "affinity", "itp", "hostport", "terminating", "svc", "scale",
                 "selectorless", "starting"):
        assert evidence(pytester, f"{name}.json")["family"] == "IPv4" and evidence(pytester, f"{name}-ipv6.json")["family"] == "IPv6"
    assert evidence(pytester, "udp-termination-ipv6.json")["flow"]["summary"]["aborted"] == 1, "the IPv6 flow's socket was terminated too"
    assert ":" in evidence(pytester, "ghost-ipv6.json")["cluster_ip"] and evidence(pytester, "udp-ipv6.json")["service"].startswith("[fd00:")
    assert evidence(pytester, "nodeport-ipv6.json")["node_ip"].startswith("fc00:") and evidence(pytester, "nodeport-ipv6.json")["http_code"] == 200
    scale6 = evidence(pytester, "scale-ipv6.json")  # the IPv6 frontend's slots: IPv6 backends only, the 2 new ones among them
    assert len(scale6["backends"]) == 4 and all(b.startswith("[fd00:10:244:") for b in scale6["backends"]) and len(scale6["new_backends"]) == 2
    assert evidence(pytester, "svc-ipv6.json")["frontend"].startswith("[fd00:10:96::") and None not in evidence(pytester, "svc-ipv6.json")["backend_pods"]
    for name in ("etp.json", "etp-ipv6.json"):  # the dual-stack backend pod is two backends, one per address (SRC_HEALTHSERVER)
        etp = evidence(pytester, name)
        node = etp["nodes"]["with_backend"]
        assert etp["health"][node] == {"http_code": 200, "body": {"service": {"namespace": mock.ANY, "name": "etp-local"}, "localEndpoints": 2}} \
            and etp["health_expected"][node] == 2 and sum(etp["health_expected"].values()) == 2, (name, etp["health"], etp["health_expected"])
    results = evidence(pytester, "results.json")
    assert results["run"]["ip_families"] == ["IPv4", "IPv6"]
    assert results["properties"]["socket LB"]["families"] == {"IPv4": "pass", "IPv6": "pass"}
    assert {t.get("family") for t in results["tests"] if t["property"] == "UDP"} == {"IPv4", "IPv6"}
    holds_schema(results, "results.json")
    from pytest_kpr.evidence.matrix import collect, to_markdown  # kpr matrix: the column names the families, the cell each one's verdict

    cols = collect([pytester.path / "artifacts"])
    assert cols[0].key.endswith("/ default / IPv4+IPv6 (fake cluster: no real datapath)") and cols[0].families == ("IPv4", "IPv6")
    assert "| socket LB | **pass** (IPv4 pass, IPv6 pass) " in to_markdown(cols)
    result.stdout.fnmatch_lines_random(["pass  socket LB       IPv4 getpeername 10.96.*, socket 10.244.*; IPv6 getpeername [[]fd00:10:96::*]:80, "
                                        "socket [[]fd00:10:244:*]:8080 (Full)*",
                                        "pass  no backend      IPv4 *ICMP 3/3 (reject); IPv6 *ICMP 1/4 (reject)*",
                                        "pass  NodePort        IPv4 HTTP 200 on 172.18.0.*:*; IPv6 HTTP 200 on [[]fc00:f853:ccd:e793::*]:*, 0 listeners*",
                                        # tunnel routing, SNAT: the receiving node's cilium_host address of each family
                                        "pass  DSR/SNAT        IPv4 SNAT: the backend saw 10.244.*.118 (client 172.18.0.1, node 172.18.0.*); "
                                        "IPv6 SNAT: the backend saw fd00:10:244:*::76 (client fc00:f853:ccd:e793::1, node fc00:f853:ccd:e793::*)*",
                                        "pass  eTP=Local       IPv4 served by 1 of 2 nodes from outside (Cluster: 2); backend saw 172.18.0.1; "
                                        "IPv6 served by 1 of 2 nodes from outside (Cluster: 2); backend saw fc00:f853:ccd:e793::1*"])


MAGLEV_FAMILY_TESTS = ("test_every_agent_has_a_balanced_table_over_the_backends", "test_cluster_ip_traffic_is_not_maglevd",
                       "test_a_flow_reaches_the_same_backend_through_every_node", "test_removing_a_backend_moves_only_its_flows")


def test_a_dual_stack_maglev_cluster_judges_each_familys_tables_and_flows(pytester: pytest.Pytester) -> None:
    """The Maglev scenario runs once (it deletes a backend) and every test but the seed's is judged per family: each
    family's NodePort frontend has its own table over that family's backends (the dump's IPv6 addresses in brackets), and
    IPv6 flows keep their backend through every node and after the removal."""
    result = run_suites(pytester, f"{DUAL_STACK}, lb_algorithm='Maglev'", "maglev", args=("-rA",))
    result.assert_outcomes(passed=1 + 2 * len(MAGLEV_FAMILY_TESTS))
    for test in MAGLEV_FAMILY_TESTS:
        result.stdout.fnmatch_lines_random([f"PASSED *test_maglev.py::{test}[[]IPv4[]]", f"PASSED *test_maglev.py::{test}[[]IPv6[]]"])
    result.stdout.fnmatch_lines(["PASSED *test_maglev.py::test_every_agent_uses_the_same_hash_seed"])
    v4, v6 = evidence(pytester, "maglev.json"), evidence(pytester, "maglev-ipv6.json")
    assert (v4["family"], v6["family"]) == ("IPv4", "IPv6")
    assert all(b.startswith("[fd00:10:244:") for b in v6["backends"]) and all(set(t) == set(v6["backends"]) for t in v6["tables"].values())
    assert v6["remap"]["removed"] == v4["remap"]["removed"] and len(v6["flows"]) == 2


IPV6_ONLY = "ip_families=('IPv6',)"


def test_an_ipv6_only_cluster_runs_every_suite_in_ipv6(pytester: pytest.Pytester) -> None:
    """The ipv6 profile's cluster (kind ``ipFamily: ipv6``): nodes, pods and Services have IPv6 addresses only. Every suite
    passes as on an IPv4 cluster, the family-dependent ones once, as ``[IPv6]`` (their evidence ``*-ipv6.json``), and the
    shared-VIP suite claims its IPv6 default VIP (the pods have no IPv4 address to reach an IPv4 one from)."""
    result = run_suites(pytester, IPV6_ONLY)
    assert_the_rest_passed(result, skipped=ALL_SKIPPED + 1)  # the ICMP-error reverse NAT is judged for IPv4 only
    result.stdout.fnmatch_lines(["kpr: provider kind*, families IPv6, *"])
    for name in ("ct", "ghost", "udp", "nodeport", "etp", "dsr", "affinity", "itp", "hostport", "terminating", "svc", "scale",
                 "selectorless", "starting"):
        assert evidence(pytester, f"{name}-ipv6.json")["family"] == "IPv6", name  # named by family, as in a dual-stack run
    assert not (pytester.path / "artifacts" / "fake" / "ct.json").exists(), "no IPv4 run"
    assert evidence(pytester, "nodeport-ipv6.json")["node_ip"].startswith("fc00:")
    assert evidence(pytester, "svc-ipv6.json")["frontend"].startswith("[fd00:10:96::")
    results = evidence(pytester, "results.json")
    assert results["run"]["ip_families"] == ["IPv6"]
    result.stdout.fnmatch_lines_random([
        "pass  socket LB       IPv6 getpeername [[]fd00:10:96::*]:80, socket [[]fd00:10:244:*]:8080 (Full)*",
        "pass  NodePort        IPv6 HTTP 200 on [[]fc00:f853:ccd:e793::*]:30780, 0 listeners, 0 iptables lines*",
        "pass  shared VIP      claimant rejected, owner HTTP 200; appeared by itself: False  (12 passed, 2 xfailed)",
    ])
    assert evidence(pytester, "sharedvip.json")["external-ips"]["vip"] == "2001:2::a:80"


def test_a_fault_fails_its_test_on_an_ipv6_only_cluster(pytester: pytest.Pytester) -> None:
    """The one-family faults act on an IPv6-only cluster too: no [::]:<port> NodePort frontend fails the NodePort suite."""
    result = run_suites(pytester, f"{IPV6_ONLY}, faults=Faults(nodeport_v6_missing=True)", "nodeport", args=("-rf", "-rA"))
    failed = {line.split("::")[1].split(" ")[0] for line in result.stdout.lines if line.startswith("FAILED ")}
    assert failed == {"test_nodeport_answers_http_200_on_the_node[IPv6]", "test_nodeport_answers_from_outside_the_cluster[IPv6]",
                      "test_agent_lists_the_wildcard_nodeport_frontend[IPv6]"}, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["FAIL  NodePort        IPv6 HTTP 0 on [[]fc00:f853:ccd:e793::3[]]:30780*"])


def test_a_dual_stack_small_map_fills_each_familys_maps_on_purpose(pytester: pytest.Pytester) -> None:
    """Each family has its own maps of the same size (datapath.SRC_MAP_FAMILY): the Services fill the lb4 and the lb6
    maps at once, and each family's inventory is the expected failure, counted in its own map."""
    result = run_suites(pytester, f"{DUAL_STACK}, lb_map_max=512", "maps", args=("-rA",))
    result.assert_outcomes(passed=6, xfailed=2)
    v4, v6 = evidence(pytester, "maps.json"), evidence(pytester, "maps-ipv6.json")
    assert (v4["family"], v6["family"]) == ("IPv4", "IPv6") and v4["services"] == v6["services"] == 512 + 16
    # from 1.19 a backendless Service takes two service entries, its master and its address's wildcard entry, and one
    # reverse-NAT entry (datapath.SRC_WILDCARD, SRC_MAP_SIZE): the service map fills first, at half the Services; each
    # Service after that still writes its reverse-NAT entry (before the master: SRC_MAP_FULL) until that map is full too
    assert len(v4["missing"]) == len(v6["missing"]) == 528 - 256 and v4["entries"] == v6["entries"] == 512
    assert v4["rev_nat_entries"] == v6["rev_nat_entries"] == 512
    assert v4["full"] == v6["full"] == "service map"
    result.stdout.fnmatch_lines_random(["XFAIL *test_maps.py::test_every_service_of_the_run_is_in_the_bpf_maps[[]IPv4[]]*",
                                        "XFAIL *test_maps.py::test_every_service_of_the_run_is_in_the_bpf_maps[[]IPv6[]]*"])


def test_an_ipv4_run_keeps_plain_test_ids_and_files(pytester: pytest.Pytester) -> None:
    """The default (IPv4 only) parametrizes nothing: the ids, the evidence names and results.json stay as before."""
    result = run_suites(pytester, "", "udp", args=("-rA",))
    assert not [line for line in result.stdout.lines if "[IPv4]" in line or "[IPv6]" in line]
    assert evidence(pytester, "udp.json")["family"] == "IPv4" and not (pytester.path / "artifacts" / "fake" / "udp-ipv6.json").exists()
    assert "families" not in evidence(pytester, "results.json")["properties"]["UDP"]


def test_a_family_the_agents_do_not_serve_is_skipped_naming_it(pytester: pytest.Pytester) -> None:
    """IPv6 asked for on a cluster whose agents serve IPv4 only: the IPv6 runs skip, saying so; IPv4's pass."""
    result = run_suites(pytester, "", "udp", args=("--kpr-ip-families=IPv4,IPv6", "-rs"))
    result.assert_outcomes(passed=4, skipped=4)
    skips = [line for line in result.stdout.lines if line.startswith("SKIPPED ")]
    assert len(skips) == 4 and all(line.endswith("IPv6: the agents do not serve it (enable-ipv6 is not true; they serve IPv4)") for line in skips)


@pytest.mark.parametrize(("config", "full", "missing"), [
    # 1.19+: two service entries per backendless Service (master and wildcard), one reverse-NAT entry: 256 fit in 512
    ("lb_map_max=512", "service map", 512 + 16 - 256),
    # a reverse-NAT map smaller than half the service map fills first: 200 Services fit
    ("lb_map_max=512, lb_rev_nat_map_max=200", "reverse-NAT map", 200 + 16 - 200),
    # before 1.19 no wildcard entry: one service entry per Service, so the reverse-NAT map (the same size) fills first
    ("cilium_version='1.18.14', lb_map_max=512", "reverse-NAT map", 16),
])
def test_which_map_fills_first_follows_the_entries_per_service(pytester: pytest.Pytester, config: str, full: str, missing: int) -> None:
    """How many entries a Service takes decides which map fills first and how many Services miss (datapath.SRC_WILDCARD,
    SRC_MAP_SIZE, SRC_MAP_FULL); the evidence names the map from the frontends' errors."""
    result = run_suites(pytester, config, "maps")
    result.assert_outcomes(passed=3, xfailed=1)
    d = evidence(pytester, "maps.json")
    assert (d["full"], len(d["missing"])) == (full, missing), (d["full"], len(d["missing"]), d["services"])


def test_each_evidence_file_is_written_once(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """One evidence sink, each file written once: the suites' files, results.json, report.txt and a failure's bundle. The
    one file written again is cluster.json, by design: at each phase, so that a run that crashes leaves the phase it reached
    (docs/reference/evidence.md)."""
    from collections import Counter

    from pytest_kpr.evidence import store

    writes: Counter[str] = Counter()
    write = store._write  # the one writer under put_text and put_bytes

    def counting(path: Path, data: bytes, root: Path | None) -> Path:
        if "artifacts" in path.parts:
            writes[str(path).split("/artifacts/", 1)[1]] += 1
        return write(path, data, root)

    monkeypatch.setattr(store, "_write", counting)
    result = run_suites(pytester, "faults=Faults(health_without_error=True)", "shared_vip", "socket_lb", "no_backend")
    assert result.ret == 1, "the fault fails a test: its bundle is among the files counted"
    assert any(f.startswith("fake/failures/") for f in writes) and "fake/report.txt" in writes and "fake/sharedvip.json" in writes, sorted(writes)
    again = {f: n for f, n in writes.items() if n > 1 and f != "fake/cluster.json"}
    assert again == {}, f"evidence files written more than once: {again}"
    assert writes["fake/results.json"] == 1 and writes["fake/cluster.json"] >= 5, writes  # one write per phase, at least


def test_the_outside_suites_take_their_vips_from_the_moved_base(pytester: pytest.Pytester) -> None:
    """--kpr-outside-vip-base moves the three outside suites' pools: each VIP they route and judge is from its block of
    the new base (and the fake's LB-IPAM hands out nothing from the default ones)."""
    result = run_suites(pytester, "", "north_south", "source_ranges", "protocols", args=("--kpr-outside-vip-base=10.99.0.0,fd00:99::",))
    out = result.stdout.str()
    assert result.ret == 0, out[-3000:]
    assert "VIP 10.99.0.10 served" in out and "10.99.2.10:7001" in out, out[-3000:]
    assert "198.18.2" not in out
