"""Upgrade gating's judgements (pytest_kpr.scenarios.upgrade), table-driven, no cluster, no root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_kpr.core.versions import kernel_tuple
from pytest_kpr.rules.kernels import load_floors
from pytest_kpr.scenarios.upgrade import (
    RollWatch,
    attribute,
    flow_problems,
    id_problems,
    key_family,
    load_removed,
    preflight_notices,
    preflight_refusals,
    regression_problems,
    summary_line,
)
from pytest_kpr.rules.upgrade import version_refusal

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
FLOORS = load_floors(CLUSTERS / "kernels.yaml")
REMOVED = load_removed(CLUSTERS / "removed-options.yaml")


@pytest.mark.parametrize(("frm", "to", "refused"), [
    ("1.19.8", "1.20.2", None),
    ("1.18.14", "1.19.8", None),
    ("1.19.8", "1.19.9", None),  # a patch upgrade
    ("1.18.14", "1.20.2", "more than one minor ahead of 1.18.14: upgrade one minor at a time"),
    ("1.20.2", "1.19.8", "not newer than the from version"),
    ("1.20.2", "1.20.2", "not newer than the from version"),
    ("1.19.8", "2.0.0", "more than one minor ahead"),
])
def test_one_minor_at_a_time_upwards(frm: str, to: str, refused: str | None) -> None:
    why = version_refusal(frm, to)
    assert (why is None) if refused is None else (why is not None and refused in why), why


@pytest.mark.parametrize(("text", "parsed"), [("6.8.0-49-generic", (6, 8, 0)), ("5.10", (5, 10)), ("5.4.0-1", (5, 4, 0)), ("weird", None)])
def test_kernel_versions(text: str, parsed: tuple[int, ...] | None) -> None:
    assert kernel_tuple(text) == parsed


@pytest.mark.parametrize(("kernels", "to", "refused"), [
    ({"n1": "6.1.0-13-amd64", "n2": "5.10.0-30-amd64"}, "1.20.2", []),
    ({"n1": "6.1.0-13-amd64", "n2": "5.4.0-150-generic"}, "1.19.8", ["node n2 runs kernel 5.4.0-150-generic, below Cilium 1.19's floor 5.10"]),
    ({"n1": "4.19.0"}, "1.19.8", ["node n1 runs kernel 4.19.0, below Cilium 1.19's floor 5.10"]),
    ({"n1": "unknown"}, "1.19.8", ["node n1 reports kernel 'unknown', which is not a version"]),
])
def test_a_node_kernel_below_the_targets_floor_is_refused(kernels: dict[str, str], to: str, refused: list[str]) -> None:
    got = preflight_refusals("1.18.14" if to.startswith("1.19") else "1.19.8", to, kernels, {}, FLOORS, REMOVED)
    assert len(got) == len(refused) and all(want in line for want, line in zip(refused, got, strict=True)), got


@pytest.mark.parametrize(("values", "to", "refused"), [
    ({"kubeProxyReplacement": True}, "1.19.8", []),
    ({"kubeProxyReplacement": "strict"}, "1.19.8", ["kubeProxyReplacement=strict, which Cilium 1.15 removed"]),
    ({"loadBalancer": {"experimental": True}}, "1.19.8", ["loadBalancer.experimental, which Cilium 1.18 removed"]),
    ({"loadBalancer": {"algorithm": "maglev"}}, "1.19.8", []),
    ({"extraConfig": {"enable-node-port": "true"}}, "1.19.8", ["extraConfig.enable-node-port, an agent option Cilium 1.19 removed"]),
    ({"extraConfig": {"enable-node-port": "true"}}, "1.18.14", []),  # still there in 1.18
    # 1.20 removed what the 1.19 notes announced
    ({"encryption": {"strictMode": {"enabled": True, "cidr": "10.0.0.0/8"}}}, "1.20.5",
     ["encryption.strictMode.enabled, which Cilium 1.20 removed; instead: encryption.strictMode.egress.enabled",
      "encryption.strictMode.cidr, which Cilium 1.20 removed"]),
    ({"encryption": {"strictMode": {"allowRemoteNodeIdentities": True}}}, "1.20.5", ["encryption.strictMode.allowRemoteNodeIdentities"]),
    ({"encryption": {"strictMode": {"egress": {"enabled": True, "cidr": "10.0.0.0/8"}}}}, "1.20.5", []),  # the replacement
    ({"encryption": {"ipsec": {"encryptedOverlay": True}}}, "1.20.5", ["encryption.ipsec.encryptedOverlay, which Cilium 1.20 removed"]),
    ({"clustermesh": {"enableMCSAPISupport": True}}, "1.20.5", ["clustermesh.enableMCSAPISupport, which Cilium 1.20 removed; instead: "
                                                                 "clustermesh.mcsapi.enabled"]),
    ({"clustermesh": {"enableMCSAPISupport": True}}, "1.19.8", []),  # deprecated, still there in 1.19
    ({"extraConfig": {"enable-encryption-strict-mode": "true"}}, "1.20.5", ["extraConfig.enable-encryption-strict-mode, an agent option Cilium 1.20"]),
    # the fifth review's removals with their PRs (cilium/cilium#45295, #43768)
    ({"preflight": {"tofqdnsPreCache": "/var/run/cilium/dns-precache-upgrade.json"}}, "1.20.5",
     ["preflight.tofqdnsPreCache, which Cilium 1.20 removed; instead: nothing: the preflight fqdn-poller is gone"]),
    ({"preflight": {"tofqdnsPreCache": "/x.json"}}, "1.19.8", []),  # still read by 1.19
    ({"hubble": {"ui": {"backend": {"livenessProbe": {"enabled": True}, "readinessProbe": {"enabled": True}}}}}, "1.20.5",
     ["hubble.ui.backend.livenessProbe.enabled=True, which Cilium 1.20 removed", "hubble.ui.backend.readinessProbe.enabled=True"]),
    ({"hubble": {"ui": {"backend": {"livenessProbe": {"enabled": False}}}}}, "1.20.5", []),  # the default: removing it changes nothing
    # only the deprecation is cited: told as a notice, never refused (preflight_notices)
    ({"clustermesh": {"apiserver": {"tls": {"server": {"cert": "LS0t", "key": "LS0t"}, "enableSecrets": True}}}}, "1.20.5", []),
    ({"hubble": {"redact": {"kafka": {"apiKey": True}}}}, "1.20.5", []),
])
def test_values_that_set_a_removed_option_are_refused(values: dict[str, Any], to: str, refused: list[str]) -> None:
    frm = {"1.20.5": "1.19.8", "1.19.8": "1.18.14", "1.18.14": "1.18.10"}[to]
    got = preflight_refusals(frm, to, {"n1": "6.1.0"}, values, FLOORS, REMOVED)
    assert len(got) == len(refused) and all(want in line for want, line in zip(refused, got, strict=True)), got
    assert all("(" in line and ")" in line for line in got), "every refusal cites its source"


@pytest.mark.parametrize(("values", "to", "told"), [
    ({"clustermesh": {"apiserver": {"tls": {"server": {"cert": "LS0t", "key": "LS0t"}}}}}, "1.20.5",
     ["clustermesh.apiserver.tls.server.cert; removed in Cilium 1.20 per cilium/cilium#42576", "clustermesh.apiserver.tls.server.key"]),
    ({"clustermesh": {"apiserver": {"tls": {"admin": {"cert": "a", "key": "b"}, "remote": {"cert": "c", "key": "d"}, "enableSecrets": False}}}},
     "1.20.5", ["tls.admin.cert", "tls.admin.key", "tls.remote.cert", "tls.remote.key", "tls.enableSecrets"]),
    # what 1.20 still reads is not told
    ({"clustermesh": {"apiserver": {"tls": {"server": {"extraDnsNames": ["mesh.example.com"], "extraIpAddresses": ["10.0.0.1"]}}}}},
     "1.20.5", []),
    ({"hubble": {"redact": {"kafka": {"apiKey": True}}}}, "1.20.5", ["hubble.redact.kafka.apiKey; removed in Cilium 1.20 per cilium/cilium#41072"]),
    ({"hubble": {"redact": {"kafka": {"apiKey": True}}}}, "1.19.8", []),  # 1.19 still has it
    ({"preflight": {"tofqdnsPreCache": "/x.json"}}, "1.20.5", []),  # a refusal, not a notice
])
def test_a_removal_only_its_deprecation_shows_is_a_notice(values: dict[str, Any], to: str, told: list[str]) -> None:
    got = preflight_notices(to, values, REMOVED)
    assert len(got) == len(told) and all(want in line for want, line in zip(told, got, strict=True)), got
    assert not [line for line in preflight_refusals("1.19.8" if to.startswith("1.20") else "1.18.14", to, {"n1": "6.1.0"}, values, FLOORS,
                                                   REMOVED) if any(w in line for w in told)], "a notice is never a refusal"


def test_a_removed_options_kind_is_refusal_or_notice(tmp_path: Path) -> None:
    from pytest_kpr.core.yamlfile import YamlFileError

    f = tmp_path / "removed.yaml"
    f.write_text('removed:\n  - since: "1.20"\n    kind: warning\n    helm: a.b\n    source: "x"\n')
    with pytest.raises(YamlFileError, match=r"removed\[0\]\.kind: refusal or notice, not 'warning'"):
        load_removed(f)


def pod(name: str, node: str, ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_the_roll_is_timed_node_by_node() -> None:
    t = [100.0]
    w = RollWatch({"a": "cilium-a1", "b": "cilium-b1"}, clock=lambda: t[0])
    assert not w.observe([pod("cilium-a1", "a", True), pod("cilium-b1", "b", True)])
    t[0] = 101.0
    assert not w.observe([pod("cilium-b1", "b", True)])  # a's old pod deleted
    t[0] = 102.0
    assert not w.observe([pod("cilium-a2", "a", False), pod("cilium-b1", "b", True)])
    t[0] = 103.0
    assert not w.observe([pod("cilium-a2", "a", True), pod("cilium-b1", "b", True)])
    t[0] = 104.0
    assert not w.observe([pod("cilium-a2", "a", True), pod("cilium-b1", "b", False)])  # b's old pod terminating
    t[0] = 106.0
    assert w.observe([pod("cilium-a2", "a", True), pod("cilium-b2", "b", True)])
    assert w.timeline() == [
        {"node": "a", "old_pod": "cilium-a1", "new_pod": "cilium-a2", "down_at": 101.0, "ready_at": 103.0, "seconds": 2.0},
        {"node": "b", "old_pod": "cilium-b1", "new_pod": "cilium-b2", "down_at": 104.0, "ready_at": 106.0, "seconds": 2.0},
    ]


TIMELINE = [{"node": "a", "old_pod": "cilium-a1", "down_at": 100.0, "ready_at": 102.0},
            {"node": "b", "old_pod": "cilium-b1", "down_at": 110.0, "ready_at": 112.0}]


@pytest.mark.parametrize(("gap", "nodes", "who"), [
    ({"start": 100.5, "ms": 400}, ("a",), "cilium-a1"),
    ({"start": 100.5, "ms": 400}, ("b",), None),  # the path does not touch a
    ({"start": 111.0, "ms": 300}, ("a", "b"), "cilium-b1"),
    ({"start": 102.5, "ms": 300}, ("a",), "cilium-a1"),  # within the 1 s slack after a's Ready
    ({"start": 105.0, "ms": 300}, ("a", "b"), None),  # between restarts
])
def test_a_gap_is_tied_to_the_restart_on_the_paths_nodes(gap: dict[str, Any], nodes: tuple[str, ...], who: str | None) -> None:
    assert attribute(gap, TIMELINE, nodes) == who


@pytest.mark.parametrize(("report", "broken", "gap"), [
    ({"sent": 100, "resets": 0, "closed": 0, "stalls": 0, "max_gap_ms": 12.0}, [], []),
    ({"sent": 100, "resets": 1, "closed": 0, "stalls": 0, "max_gap_ms": 300.0}, ["f: 1 resets"], []),
    ({"sent": 100, "resets": 0, "closed": 0, "stalls": 0, "max_gap_ms": 3000.0}, [],
     ["f: longest gap 3.00 s > 1 s (pytest-kpr policy (--kpr-upgrade-max-gap), not a Cilium promise)"]),
    ({"sent": 100, "resets": 0, "closed": 0, "stalls": 1, "max_gap_ms": 3000.0}, ["f: 1 stalls"],
     ["f: longest gap 3.00 s > 1 s (pytest-kpr policy (--kpr-upgrade-max-gap), not a Cilium promise)"]),
    ({"sent": 0, "max_gap_ms": 0.0}, ["f: sent nothing (the flow never connected)"], []),
])
def test_flow_verdicts(report: dict[str, Any], broken: list[str], gap: list[str]) -> None:
    assert flow_problems("f", report, 1.0) == {"broken": broken, "gap": gap}


@pytest.mark.parametrize(("before", "after", "problems"), [
    ({"n": {"10.96.0.1:80/TCP": 1, "10.96.0.2:80/TCP": 2}}, {"n": {"10.96.0.1:80/TCP": 1, "10.96.0.2:80/TCP": 2}}, {}),
    ({"n": {"10.96.0.1:80/TCP": 1}}, {"n": {"10.96.0.1:80/TCP": 7}}, {"IPv4": ["n: frontend 10.96.0.1:80/TCP had ID 1, now 7"]}),
    ({"n": {"10.96.0.1:80/TCP": 1}}, {"n": {"10.96.0.9:80/TCP": 1}},
     {"IPv4": ["n: frontend ID 1 was 10.96.0.1:80/TCP, now reused for 10.96.0.9:80/TCP"]}),
    ({"n": {"10.96.0.1:80/TCP": 1}}, {"m": {"10.96.0.1:80/TCP": 2}}, {}),  # different nodes are not compared
    # each problem under the family of the key that changed, or that took the ID (both families' IDs are compared)
    ({"n": {"10.96.0.1:80/TCP": 1, "[fd00:10:96::1]:80/TCP": 2}}, {"n": {"10.96.0.1:80/TCP": 1, "[fd00:10:96::1]:80/TCP": 9}},
     {"IPv6": ["n: frontend [fd00:10:96::1]:80/TCP had ID 2, now 9"]}),
    ({"n": {"10.96.0.1:80/TCP": 1}}, {"n": {"[fd00:10:96::9]:80/TCP": 1}},
     {"IPv6": ["n: frontend ID 1 was 10.96.0.1:80/TCP, now reused for [fd00:10:96::9]:80/TCP"]}),
])
def test_ids_stable_and_not_reused(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], problems: dict[str, list[str]]) -> None:
    assert id_problems(before, after, "frontend") == problems


#: frontends as the agents print them, of both families (IPv6 bracketed)
FRONTENDS = st.one_of(st.builds("10.96.0.{}:{}/TCP".format, st.integers(1, 254), st.sampled_from([53, 80])),
                      st.builds("[fd00:10:96::{:x}]:{}/TCP".format, st.integers(1, 0xfff), st.sampled_from([53, 80])))
SNAPSHOTS = st.dictionaries(st.sampled_from(["n1", "n2"]), st.dictionaries(FRONTENDS, st.integers(1, 1000), max_size=8), max_size=2)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=SNAPSHOTS, moved=st.sampled_from(["IPv4", "IPv6"]))
@example(before={"n1": {"10.96.0.1:80/TCP": 1, "[fd00:10:96::1]:80/TCP": 2}}, moved="IPv6")
@example(before={}, moved="IPv4")
def test_one_familys_renumbered_ids_are_that_familys_problems_alone(before: dict[str, dict[str, int]], moved: str) -> None:
    """The upgrade_renumbers_ids fault set for one family, in general: one family's IDs all moved past every ID in use gives one problem per
    moved key on each node, every one under that family, and none under the other; a snapshot against itself, none."""
    assert id_problems(before, before, "frontend") == {}
    after = {n: {k: v + 1000 if key_family(k) == moved else v for k, v in ids.items()} for n, ids in before.items()}
    moved_keys = sum(1 for ids in before.values() for k in ids if key_family(k) == moved)
    problems = id_problems(before, after, "frontend")
    assert set(problems) == ({moved} if moved_keys else set())
    assert len(problems.get(moved, [])) == moved_keys
    assert all(line.split(" frontend ")[1].split(" had ID ")[0].startswith("[") == (moved == "IPv6") for line in problems.get(moved, []))


BASE = {"kube_proxy_replacement": "True", "socket_lb_coverage": "Full", "no_backend_response": "reject", "attach_mode": "tc",
        "kube_proxy_rules": 0, "backend_slots_match": {"IPv4": True, "IPv6": True}}


@pytest.mark.parametrize(("after", "problems"), [
    ({}, []),
    ({"attach_mode": "tcx"}, []),  # tc -> tcx is what a newer Cilium on 6.6+ does
    ({"socket_lb_coverage": "Hostns-only"}, ["socket_lb_coverage was 'Full', now 'Hostns-only'"]),
    ({"kube_proxy_rules": 4}, ["kube-proxy rules on the nodes: 0 before, 4 after"]),
    ({"no_backend_response": "drop"}, ["no_backend_response was 'reject', now 'drop'"]),
    ({"backend_slots_match": {"IPv4": True, "IPv6": False}}, ["backend_slots_match (IPv6) was True, now False"]),
    ({"backend_slots_match": {"IPv4": False, "IPv6": True}}, ["backend_slots_match (IPv4) was True, now False"]),
])
def test_no_property_regressed(after: dict[str, Any], problems: list[str]) -> None:
    assert regression_problems(BASE, {**BASE, **after}) == problems
    if after.get("attach_mode") == "tcx":
        assert regression_problems({**BASE, "attach_mode": "tcx"}, {**BASE, "attach_mode": "tc"}) == ["attach mode was 'tcx', now 'tc'"]


def test_the_summary_line_names_the_longest_gap_and_its_restart() -> None:
    ok = {"report": {"max_gap_ms": 12.0}, "problems": {"broken": [], "gap": []}}
    slow = {"report": {"max_gap_ms": 410.0}, "problems": {"broken": [], "gap": []}, "longest_gap_during": "cilium-abcde"}
    t = {"kind": "upgrade", "from": "1.19.8", "to": "1.20.2", "flows": {"pod->ClusterIP": ok, "pod->NodePort": slow},
         "diff": {"families": {"IPv4": {"service_ids": [], "backend_ids": [], "ct_lost": []}}}}
    assert summary_line(t, 1.0) == ("upgrade 1.19.8 -> 1.20.2: 0/2 flows broken, longest gap 0.41 s (pod->NodePort, during cilium-abcde "
                                    "restart) of 1 s allowed (pytest-kpr policy), service IDs stable, 0 backend IDs changed")


def test_every_removed_option_and_floor_quotes_its_source() -> None:
    """A removal or floor cites cilium/cilium (a path, PR or issue); the 1.20 removals quote the 1.19 notes' sentence that
    announced them or name Cilium's PR that removed (or, for a notice, deprecated) them, and no floor quotes the sentence
    that is in no Cilium copy of the 1.19 notes."""
    import re

    for r in REMOVED:
        assert "cilium/cilium" in r.source, r
        if r.since == (1, 20):
            assert "will be removed in Cilium 1.20" in r.source or re.search(r"cilium/cilium#\d+ '", r.source), r
    for f in FLOORS:
        assert "cilium/cilium" in f.source or "#" in f.source, f
        assert "This Cilium version now requires" not in f.source.split("--")[0], f


def test_a_transition_record_reads_as_typed_verdicts() -> None:
    """model.upgrade.Transition: upgrade.json's transition as the suite judges it (a flow without a family is IPv4's; a
    family without a diff has none)."""
    from pytest_kpr.model.upgrade import FamilyDiff, FlowVerdicts, Transition

    record = {"kind": "upgrade", "from": "1.19.8", "to": "1.20.2",
              "flows": {"pod->ClusterIP": {"path": {}, "problems": {"broken": ["1 resets"], "gap": []}, "longest_gap_during": None},
                        "pod->ClusterIP (IPv6)": {"path": {"family": "IPv6"}, "problems": {"broken": [], "gap": ["3.00 s > 1 s"]},
                                                  "longest_gap_during": "fake-worker's restart"}},
              "diff": {"families": {"IPv6": {"service_ids": ["a"], "backend_ids": [], "ct_lost": ["pod->ClusterIP (IPv6)"]}},
                       "regressions": ["KubeProxyReplacement: True -> False"]}}
    t = Transition.from_record(record)
    assert (t.kind, t.from_version, t.to_version, t.regressions) == ("upgrade", "1.19.8", "1.20.2", ("KubeProxyReplacement: True -> False",))
    assert t.flows_of("IPv4") == (FlowVerdicts("pod->ClusterIP", "IPv4", ("1 resets",), (), None),)
    assert t.flows_of("IPv6") == (FlowVerdicts("pod->ClusterIP (IPv6)", "IPv6", (), ("3.00 s > 1 s",), "fake-worker's restart"),)
    assert t.diff_of("IPv6") == FamilyDiff(("a",), (), ("pod->ClusterIP (IPv6)",)) and t.diff_of("IPv4") == FamilyDiff()


def test_the_upgrade_record_is_upgrade_json_and_hands_the_suite_each_transitions_verdicts() -> None:
    """model.upgrade.UpgradeRecord: what the upgrade run returns; its to_json is upgrade.json (each transition's record whole),
    of_kind gives the suite the typed verdicts, and the figure is the transitions' summaries."""
    from pytest_kpr.model.upgrade import RecordedTransition, UpgradeRecord

    def record(kind: str, frm: str, to: str) -> dict[str, Any]:
        return {"kind": kind, "from": frm, "to": to, "summary": f"{kind}: 0 flows broke", "timeline": [{"node": "n1"}],
                "flows": {"pod->ClusterIP": {"path": {}, "problems": {"broken": [], "gap": []}, "longest_gap_during": None}},
                "diff": {"families": {}, "regressions": []}}

    up = RecordedTransition.of(record("upgrade", "1.19.8", "1.20.2"))
    r = UpgradeRecord("1.19.8", "1.20.2", 1.0, "bound", {"pod->ClusterIP": "socket"}, (up,), ("the Helm values set x; removed in ...",))
    assert r.to_json() == {"from": "1.19.8", "to": "1.20.2", "max_gap_s": 1.0, "max_gap_policy": "bound",
                           "planes": {"pod->ClusterIP": "socket"}, "transitions": [record("upgrade", "1.19.8", "1.20.2")],
                           "notices": ["the Helm values set x; removed in ..."]}
    assert r.of_kind("upgrade") == up.verdicts and up.verdicts.to_version == "1.20.2" and r.of_kind("downgrade") is None
    down = RecordedTransition.of(record("downgrade", "1.20.2", "1.19.8"))
    both = UpgradeRecord("1.19.8", "1.20.2", 1.0, "bound", {}, (up, down))
    assert both.of_kind("downgrade") == down.verdicts and both.summary == "upgrade: 0 flows broke; downgrade: 0 flows broke"
