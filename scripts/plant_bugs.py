#!/usr/bin/env python3
"""The acceptance lists of issues #10, #11 and #12: realistic bugs, each planted by hand into a copy of the tree, must each
fail at least one test. Prints one line per bug (caught by which tests, or SURVIVED) and exits 1 if any
survives. Run it after changing a judgement, the model, the parsers or the suites (about 2 minutes):

    .venv/bin/python scripts/plant_bugs.py [WORD ...]   (only the bugs whose names contain a WORD)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Bug:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]  # where it should be caught (a pytest selection: files or node ids)


BUGS = [
    Bug("socket-LB judgement without its getpeername()==ClusterIP check", "pytest_kpr/judge/socket_lb.py",
        "    if obs.app_peer != obs.service:\n", "    if False:\n", ("tests/judge/test_socket_lb.py",)),
    Bug("the hostns-only branch accepting anything", "pytest_kpr/judge/socket_lb.py",
        "    if coverage.lower().startswith(\"hostns\"):\n", "    if coverage.lower().startswith(\"hostns\"):\n        return []\n",
        ("tests/judge/test_socket_lb.py",)),
    Bug("the socket peer not required to be a backend", "pytest_kpr/judge/socket_lb.py",
        "    elif obs.socket_peer not in obs.backends:\n", "    elif False:\n", ("tests/judge/test_socket_lb.py",)),
    Bug("the iptables suite ignoring KUBE-SEP lines", "pytest_kpr/judge/iptables.py",
        '"KUBE-SVC-", "KUBE-SEP-", ', '"KUBE-SVC-", ', ("tests/judge/test_iptables.py", "tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[only-kube-sep]")),
    Bug("the evidence counting KUBE-SEP as 0", "pytest_kpr/parse/node.py",
        '"kube_sep": self.count("KUBE-SEP"),', '"kube_sep": 0,', ("tests/test_faults.py::test_the_iptables_evidence_counts_kube_sep_lines",)),
    Bug("the NodePort 'no iptables line' figure read from one rule view only", "pytest_kpr/judge/nodeport.py",
        '"iptables_lines": sum(d.count_token(port) for d in self.dumps.values() if d is not None),',
        '"iptables_lines": (self.dumps["iptables-legacy"] or self.dumps["nft"]).count_token(port),',
        ("tests/test_faults.py::test_the_nodeport_evidence_counts_lines_in_every_view",)),
    Bug("a rule view whose tool is missing silently dropped", "pytest_kpr/judge/iptables.py",
        "        missing = [v for v in RULE_VIEWS if views.get(v) is None]\n", "        missing = [v for v in RULE_VIEWS if v in views and views[v] is None]\n",
        ("tests/judge/test_iptables.py", "tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[unreadable-rule-view]")),
    Bug("the no-backend suite accepting ICMP 3/13 (admin-prohibited) as a reject", "pytest_kpr/judge/no_backend.py",
        "        elif rule.icmp is not None and a.icmp != rule.icmp:\n", "        elif rule.icmp is not None and a.icmp not in (rule.icmp, (3, 13)):\n",
        ("tests/rules/test_datapath_rules.py",)),
    Bug("a 60 s 'at once' bound", "pytest_kpr/judge/no_backend.py", "FAST_S = 1.0\n", "FAST_S = 60.0\n", ("tests/rules/test_datapath_rules.py",)),
    Bug("the agent's wildcard NodePort frontend matched while ignoring the port", "pytest_kpr/judge/nodeport.py",
        'hits = [s for s in services if s.frontend.ip == wildcard and s.frontend.port == port and s.type == "NodePort"]',
        'hits = [s for s in services if s.frontend.ip == wildcard and s.type == "NodePort"]', ("tests/judge/test_nodeport.py",)),
    Bug("the IPv6 NodePort judged by the IPv4 wildcard", "pytest_kpr/judge/nodeport.py",
        '    wildcard = NODEPORT_WILDCARD[family]\n', '    wildcard = NODEPORT_WILDCARD["IPv4"]\n', ("tests/judge/test_nodeport.py",)),
    Bug("http.server without --bind taken to accept IPv6", "pytest_kpr/rules/workloads.py",
        '        return _bound_families(_option(cmd, "--bind", "-b"), frozenset({"IPv4"}))', '        return _bound_families(_option(cmd, "--bind", "-b"), BOTH)',
        ("tests/rules/test_workloads_rule.py",)),
    Bug("the outside view's route table read byte-swapped", "pytest_kpr/cluster/outside.py",
        'int.from_bytes(bytes.fromhex(f[i]), "little")', 'int.from_bytes(bytes.fromhex(f[i]), "big")', ("tests/cluster/test_outside.py",)),
    Bug("any family's HostPort frontend taken for the one asked", "pytest_kpr/judge/hostport.py",
        " and family_of(s.frontend.ip) == family for s in services)", " for s in services)", ("tests/judge/test_hostport.py",)),
    Bug("the tc filter line count unchecked", "pytest_kpr/judge/socket_lb.py",
        "    if (lines >= 1) != filtered:", "    if False:", ("tests/judge/test_socket_lb.py",)),
    Bug("the iptables-save parser skipping unknown lines", "pytest_kpr/parse/node.py",
        "            raise ParseError(\"iptables-save\", lineno, line)\n", "            continue\n", ("tests/parse/test_parse_local.py", "tests/parse/test_parse_properties.py", "tests/cli/test_kpr_parse_cli.py")),
    Bug("the model coalescing by last arrival instead of first arrival", "pytest_kpr/rules/lbmodel.py",
        "            ordered[ev.service] = ev\n", "            ordered.pop(ev.service, None)\n            ordered[ev.service] = ev\n",
        ("tests/rules/test_lbmodel.py", "tests/rules/test_lbmodel_oracle.py")),
    Bug("deleting a rejected service keeping it rejected", "pytest_kpr/rules/lbmodel.py",
        "        self.rejected.pop(service, None)\n        self.log.append(f\"delete", "        self.log.append(f\"delete",
        ("tests/rules/test_lbmodel.py", "tests/rules/test_lbmodel_oracle.py")),
    Bug("Modules Health always reporting 0 degraded", "pytest_kpr/parse/health.py",
        "    return int(m.group(1)), int(m.group(2)), int(m.group(3))", "    return int(m.group(1)), 0, int(m.group(3))",
        ("tests/parse/test_parse_health.py", "tests/test_suites_vs_fake.py::test_the_conflict_shows_as_cilium_shows_it_tally_in_status_error_in_db_health")),
    # issue 11: runs never touch each other, bad input is refused, kpr parse's fast path is the generic one
    Bug("start-up cleanup removing a live run's objects", "tests/ownership.py",
        "    return start_time(own[0]) != own[1]\n", "    return True\n", ("tests/test_runs_isolated.py",)),
    Bug("the leak check counting another run's namespaces", "tests/realkernel.py",
        'found = [f"netns {n}" for n in namespaces() if ownership.mine(n)]', 'found = [f"netns {n}" for n in namespaces()]',
        ("tests/test_runs_isolated.py",)),
    Bug("port 0 accepted as a target", "pytest_kpr/core/inputs.py", "not 1 <= int(text) <= 65535", "not 0 <= int(text) <= 65535",
        ("tests/cli/test_bad_input.py",)),
    Bug("a NaN timeout accepted", "pytest_kpr/core/inputs.py", "    if not math.isfinite(f) or f < 0 or", "    if f < 0 or",
        ("tests/cli/test_bad_input.py",)),
    Bug("replay events out of time order silently re-sorted", "pytest_kpr/rules/lbmodel.py",
        "        if events and ev.at_ms < events[-1].at_ms:\n", "        if False:\n", ("tests/cli/test_bad_input.py",)),
    Bug("unknown event keys ignored", "pytest_kpr/rules/lbmodel.py", "        unknown = sorted(set(map(str, d)) - _EVENT_KEYS)\n",
        "        unknown: list[str] = []\n", ("tests/cli/test_bad_input.py",)),
    Bug("whitespace-only input parsed as an empty result", "pytest_kpr/parse/cli.py", "    if not text.strip():\n", "    if not text:\n",
        ("tests/cli/test_bad_input.py",)),
    Bug("the conntrack fast path swapping the rx and tx flags", "pytest_kpr/parse/ct.py",
        "            int(rxf, 16), lrx, int(txf, 16), ltx,", "            int(txf, 16), lrx, int(rxf, 16), ltx,",
        ("tests/cli/test_kpr_parse_cli.py", "tests/parse/test_parse_properties.py")),
    Bug("pytest-kind's --cluster-name silently ignored", "pytest_kpr/plugin/hooks.py",
        "        if flag in args or value != default:\n", "        if False:\n", ("tests/plugin/test_plugin_options.py",)),
    Bug("a missing --kpr-clusters-dir falling back to the checkout's", "pytest_kpr/run/settings.py",
        "    if explicit is not None:  # never fall back", "    if False:  # never fall back", ("tests/plugin/test_plugin_options.py",)),
    # issue 12: the release watch settles instead of sleeping; the run's cost is counted
    Bug("the release watch ending as soon as Cilium processed the deletion (no settle window)", "pytest_kpr/scenarios/sharedvip.py",
        '            if now - self.marks["processed"] >= settle:\n', "            if True:\n",
        ("tests/test_suites_vs_fake.py::test_the_release_watch_ends_once_cilium_has_processed_the_deletion_plus_the_settle_window",
         "tests/test_suites_vs_fake.py::test_a_claimant_that_appears_late_is_still_seen_to_appear")),
    Bug("the slowest agent chosen as the fastest", "pytest_kpr/judge/backend_slots.py",
        '        return max(lag.items(), key=lambda kv: float("inf") if kv[1] is None else kv[1])',
        '        return min(lag.items(), key=lambda kv: float("inf") if kv[1] is None else kv[1])',
        ("tests/judge/test_backend_slots.py", "tests/test_suites_vs_fake.py::test_the_slowest_agent_is_timed_within_the_poll_resolution")),
    Bug("a batched command's stderr given to the next command", "pytest_kpr/observe/batch.py",
        'out, errs[i][0] if i < len(errs) else "", r.where))', 'out, errs[i + 1][0] if i + 1 < len(errs) else "", r.where))',
        ("tests/observe/test_agent_batch.py",)),
    # issue 12, second part: the late look, cheaper polls, one cluster for the xdist workers
    Bug("no late look (a claimant appearing after the settle window reported as never)", "pytest_kpr/scenarios/sharedvip.py",
        "        if not pending:\n            return\n        due = ", "        if True:\n            return\n        due = ",
        ("tests/test_suites_vs_fake.py::test_a_claimant_that_appears_after_the_settle_window_is_reported_as_appeared_after",)),
    Bug("convergence not re-reading an agent that lagged behind the current EndpointSlice", "pytest_kpr/observe/lab.py",
        "seen[0] == es and seen[1].service_id is not None and sorted(seen[1].backends) == sorted(es)", "seen[0] == es",
        ("tests/core/test_wait.py", "tests/test_faults.py")),
    Bug("the first worker out tearing down the shared cluster", "pytest_kpr/run/shared_run.py",
        '            last = len(set(st["left"])) >= self.workercount and', "            last = True and",
        ("tests/run/test_shared_run.py",)),
    Bug("workers joining without the run's lock", "pytest_kpr/run/shared_run.py",
        "            fcntl.flock(fd, fcntl.LOCK_EX)\n", "            pass\n", ("tests/run/test_shared_run.py",)),
    # issue 13: upgrade gating
    Bug("a gap tied to a restart on a node the path does not touch", "pytest_kpr/scenarios/upgrade.py",
        '        if step["node"] not in nodes or step["down_at"] is None:', '        if step["down_at"] is None:', ("tests/rules/test_upgrade_rules.py",)),
    Bug("an ID reused for another frontend not reported", "pytest_kpr/scenarios/upgrade.py",
        "            if ident in owner and owner[ident] != key and key not in b:", "            if False:", ("tests/rules/test_upgrade_rules.py",)),
    Bug("a kernel at the floor refused (or one below it let through)", "pytest_kpr/rules/kernels.py",
        "        elif have < want:", "        elif have > want:", ("tests/rules/test_upgrade_rules.py", "tests/rules/test_kernels.py")),
    Bug("the flow meter not counting a reset", "pytest_kpr/traffic/flow.py",
        "        setattr(self.r, why, getattr(self.r, why) + 1)", "        pass", ("tests/test_realkernel_flow.py",)),
    Bug("the controller summarising only the first worker", "pytest_kpr/run/run.py",
        "        for part in by_worker(self.sums.parts):  # the workers' costs, the run's in total\n",
        "        for part in by_worker(self.sums.parts)[:1]:  # the workers' costs, the run's in total\n",
        ("tests/test_suites_vs_fake.py::test_with_xdist_one_worker_provisions_the_others_attach_and_the_run_reports_once",)),
    Bug("node commands not counted", "pytest_kpr/run/cost.py", "        self._cost.node_commands += 1\n", "        pass\n", ("tests/run/test_cost.py",)),
    # -- issue 15: eTP=Local, hostPort, DSR/SNAT, affinity timeout, Maglev, map pressure, kube-proxy installed --------
    Bug("a node without a local backend allowed to serve an eTP=Local Service", "pytest_kpr/judge/etp.py",
        'for node, v in sorted(local.items()) if node != with_backend and v == "accepted"]',
        'for node, v in sorted(local.items()) if node != with_backend and v == "SYN-ACK"]',
        ("tests/judge/test_etp.py", "tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[etp-local-ignored]")),
    Bug("the external scope of an eTP=Local frontend holding every backend", "pytest_kpr/rules/datapath.py",
        "    return [b for b in backends if b.node == node] if etp_local else list(backends)\n", "    return list(backends)\n",
        ("tests/rules/test_datapath_rules.py", "tests/test_suites_vs_fake.py::test_every_suite_passes_on_a_conforming_cluster")),
    Bug("the health-check NodePort expected to answer 200 on a node without endpoints", "pytest_kpr/judge/etp.py",
        "        want_code = 200 if want else 503\n", "        want_code = 200\n", ("tests/judge/test_etp.py",)),
    Bug("SNAT mode expected to keep the client's address", "pytest_kpr/rules/datapath.py",
        'SourceRule("SNAT", False, False, "Native", "node",', 'SourceRule("SNAT", False, False, "Native", "client",',
        ("tests/rules/test_datapath_rules.py",)),
    Bug("SNAT in tunnel routing expected to show the node's InternalIP (the first review's belief)", "pytest_kpr/rules/datapath.py",
        'SourceRule("SNAT", False, False, "Tunnel", "cilium-internal-ip",', 'SourceRule("SNAT", False, False, "Tunnel", "node",',
        ("tests/rules/test_datapath_rules.py", "tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[snat-internal-ip-in-tunnel-mode]")),
    Bug("the client-address judgement always expecting the client", "pytest_kpr/judge/etp.py",
        '    want = {"client": client, "node": node_ip, "cilium-internal-ip": internal_ip}[expect]\n', "    want = client\n", ("tests/judge/test_etp.py",)),
    Bug("a second hostPort pod admitted on another node counted as a double admission", "pytest_kpr/judge/hostport.py",
        '    if pod.get("node") == node and pod.get("phase") in ("Running", "Succeeded"):', '    if pod.get("phase") in ("Running", "Succeeded"):',
        ("tests/judge/test_hostport.py",)),
    Bug("an affinity that never expires accepted", "pytest_kpr/judge/affinity.py",
        "    if len(a.backends) > 1 and len(peers) >= 2 and not out and len(hit) == 1:", "    if len(a.backends) > 1 and len(peers) >= 2 and not out and len(hit) == 0:",
        ("tests/judge/test_affinity.py", "tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[affinity-no-timeout]")),
    Bug("Maglev remapping allowed to move every surviving flow", "pytest_kpr/judge/maglev.py",
        "    allowed = max(1, int(tolerance * len(survivors)))\n", "    allowed = max(1, len(survivors))\n",
        ("tests/judge/test_maglev.py", "tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[maglev-ignored]")),
    Bug("an unset Maglev seed not read as the built-in default", "pytest_kpr/judge/maglev.py",
        "    used = {node: s or default for node, s in seeds.items()}\n", "    used = dict(seeds)\n", ("tests/judge/test_maglev.py",)),
    Bug("a full map accepted when the reconciler's health stays OK", "pytest_kpr/judge/maps.py",
        '    if not any(h.level == "Degraded" and any(m in h.error for m in markers) for h in rows):', "    if False:",
        ("tests/judge/test_maps.py",)),
    Bug("the reconciler's health judged at one instant (the last reading)", "pytest_kpr/judge/maps.py",
        '    if not any(h.level == "Degraded" and any(m in h.error for m in markers) for h in rows):',
        '    if not any(h.level == "Degraded" and any(m in h.error for m in markers) for h in rows[-1:]):',
        ("tests/judge/test_maps.py",)),
    Bug("only the service map's error counted as a full map (the reverse-NAT map fills first too)", "pytest_kpr/judge/maps.py",
        "                    if status != \"Error\" or error is None or not any(m in error for m in markers))",
        "                    if status != \"Error\" or error is None or list(markers)[0] not in error)",
        ("tests/judge/test_maps.py", "tests/test_suites_vs_fake.py::test_suites_pass_on_other_conforming_configurations[small-rev-nat-map]")),
    Bug("the socket plane's errno not following the kernel (EHOSTUNREACH below 6.1)", "pytest_kpr/rules/datapath.py",
        "    if plane is Plane.SOCKET and kernel is not None and kernel < SET_RETVAL_KERNEL:", "    if False:",
        ("tests/rules/test_datapath_rules.py",)),
    Bug("enable-no-service-endpoints-routable ignored (ICMP expected when the stack resets)", "pytest_kpr/rules/datapath.py",
        "rule.response in (ANY, response) and rule.routable in (ANY, routable)", "rule.response in (ANY, response) and rule.routable == ANY",
        ("tests/rules/test_datapath_rules.py",)),
    Bug("a missing ServiceNoBackendResponse silently taken as reject", "pytest_kpr/observe/readiness.py",
        "    raise FactsError(f\"Cilium {cilium_version} reports no ServiceNoBackendResponse",
        "    return \"reject\", \"assumed\"\n    raise FactsError(f\"Cilium {cilium_version} reports no ServiceNoBackendResponse",
        ("tests/rules/test_datapath_rules.py",)),
    Bug("kube-proxy accepted without the option", "pytest_kpr/judge/kube_proxy.py",
        "    if problems and allow:\n", "    if problems:\n", ("tests/judge/test_kube_proxy.py",)),
    Bug("a small map that did not fill passed as expected", "suites/test_maps.py",
        '        pytest.fail(f"map pressure ({d.family} maps): {d.services} Services',
        '        return\n        pytest.fail(f"map pressure ({d.family} maps): {d.services} Services',
        ("tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[map-larger-than-reported]",)),
    Bug("each family's Maglev table read at the IPv4 NodePort frontend", "suites/test_maglev.py",
        'maglev_table(dumps[n], f"{hp(v.node_ip(n), port)}/TCP")', 'maglev_table(dumps[n], f"{hp(lab.node_ip(n), port)}/TCP")',
        ("tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[ipv6-maglev-no-table]",)),
    Bug("each family's map inventory taken at the IPv4 ClusterIPs", "suites/test_maps.py",
        'frontends[f][name] = hp(v.address_of(', 'frontends[f][name] = hp(lab.address_of(',
        ("tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[ipv6-service-map-full-unexpectedly]",)),
    Bug("every family's slots judged by the first family's convergence", "suites/test_backend_slots.py",
        "        out[f] = views[f].observe_converged(replicas)", "        out[f] = out[first]",
        ("tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[ipv6-slots-lack-a-backend]",)),
    Bug("each upgrade flow's conntrack entry looked up at the pod's first address", "pytest_kpr/scenarios/upgrade_run.py",
        "            ip = lab.in_family(p.family).pod_ip(pod)\n", "            ip = lab.pod_ip(pod)\n",
        ("tests/test_upgrade_vs_fake.py::test_each_upgrade_fault_fails_the_verdict_that_names_it[ct6-flushed]",)),
    Bug("every family's upgrade verdict judging the flows of all families", "pytest_kpr/model/upgrade.py",
        "        return tuple(f for f in self.flows if f.family == family)\n", "        return self.flows\n",
        ("tests/test_upgrade_vs_fake.py::test_each_upgrade_fault_fails_the_verdict_that_names_it[ipv6-flow-reset]",)),
    Bug("an IPv6-only run keeping the IPv4 shared-VIP defaults", "pytest_kpr/run/settings.py",
        '    if "IPv4" not in values["ip_families"]:  # an IPv6-only run', "    if False:  # an IPv6-only run",
        ("tests/test_suites_vs_fake.py::test_an_ipv6_only_cluster_runs_every_suite_in_ipv6",)),
    Bug("the shared VIP's IPv6 frontend named without brackets", "pytest_kpr/scenarios/sharedvip.py",
        '    return f"{hp(vip, port)}/TCP"', '    return f"{vip}:{port}/TCP"',
        ("tests/test_suites_vs_fake.py::test_an_ipv6_only_cluster_runs_every_suite_in_ipv6",)),
    Bug("the MAGLEV line's backend counts lost", "pytest_kpr/parse/statedb.py",
        '    return {i: int(n) for i, n in _INNER.findall(entry.fields.get("INNER", ""))}\n', "    return {}\n",
        ("tests/parse/test_parse_fixtures.py", "tests/judge/")),
    Bug("the kube-proxy rule check never exercised on a node", "pytest_kpr/judge/kube_proxy.py",
        '    missing = sorted(set(k.nodes) - set(k.nodes_with_rules))\n', "    missing: list[str] = []\n",
        ("tests/judge/test_kube_proxy.py",
         "tests/test_faults.py::test_each_fault_fails_exactly_the_tests_that_check_it[installed-kube-proxy-programs-nothing]")),
]


def copy_tree(dest: Path) -> None:
    for item in REPO.iterdir():
        if item.name in (".venv", "mutants", "kpr-artifacts", ".git", ".hypothesis", ".pytest_cache"):
            continue
        (shutil.copytree if item.is_dir() else shutil.copy2)(item, dest / item.name)


def main() -> int:
    env = dict(os.environ)
    env.pop("CI", None)
    survived = 0
    wanted = [a.lower() for a in sys.argv[1:]]  # optional: only the bugs whose names contain one of these words
    bugs = [b for b in BUGS if not wanted or any(w in b.name.lower() for w in wanted)]
    for bug in bugs:
        with tempfile.TemporaryDirectory(prefix="kpr-plant-") as tmp:
            root = Path(tmp)
            copy_tree(root)
            target = root / bug.path
            text = target.read_text()
            if text.count(bug.old) != 1:
                print(f"CANNOT PLANT  {bug.name}: the original text is not in {bug.path} exactly once", flush=True)
                survived += 1
                continue
            target.write_text(text.replace(bug.old, bug.new))
            env["PYTHONPATH"] = str(root)  # the copy's pytest_kpr wins over the editable install
            r = subprocess.run([sys.executable, "-m", "pytest", *bug.tests, "-q", "-p", "no:cacheprovider", "-x", "--no-header", "-rf"],
                               cwd=root, env=env, capture_output=True, text=True, timeout=600)
            # the outer run's failures only (a pytester test prints its inner run's FAILED lines too)
            failed = [line.split(" ")[1] for line in r.stdout.splitlines() if line.startswith(("FAILED tests/", "ERROR tests/"))]
            if r.returncode == 0 or not failed:
                print(f"SURVIVED      {bug.name} ({bug.path}; ran {' '.join(bug.tests)})", flush=True)
                survived += 1
            else:
                print(f"caught        {bug.name}: {failed[0]}", flush=True)
    print(f"{len(bugs) - survived} of {len(bugs)} planted bugs caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
