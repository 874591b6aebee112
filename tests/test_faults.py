"""A fault per claim: for every suite on the documentation's suites page and every figure in the evidence files,
the fake can produce that one wrong behaviour, and the suites then fail exactly the tests that check it,
with words that name the property. Every other test passes.

The rows are declared beside the faults (``Fault(..., fails=Fails(...))`` in the fake's modules, pytest_kpr.testing):
each names the tests that must fail and a line pattern (fnmatch) of each failure's message, and the rest of the fake's
configuration; resolved (``pytest_kpr.testing.faults.rows``), a row has a name, the suites it runs (its fault's
property's first), the configuration, the exact failing set (``module::test[param]``) and the words. Rows share runs:
the rows of a group (same configuration but for the faults, no declared suite in common) run the suites they declare
once, together, and each failure is the row's that declares its suite. Whether a fault reaches further is the `reach`
tier's question (make test-reach, in CI): each group's faults under every suite none of its rows declares, where any
failure is an error naming the row that reached it. The upgrade's rows run in an upgrade run (test_upgrade_vs_fake.py).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field, replace

import pytest
from test_suites_vs_fake import SUITES, failure_blocks, run_suites, shared_run

from pytest_kpr.plugin.markers import suite_of_property
from pytest_kpr.testing.faults import DECLARED, Row, rows

NP = "test_nodeport.py::"

#: every declared row, resolved; the upgrade's run in an upgrade run (tests/test_upgrade_vs_fake.py)
DECLARED_ROWS = rows(suite_of_property(SUITES))
UPGRADE_ROWS = [r for r in DECLARED_ROWS if r.suites == ("upgrade",)]
ROWS = [r for r in DECLARED_ROWS if r.suites != ("upgrade",)]


def _settings(config: str) -> dict[str, str]:
    """A row's configuration as setting -> value text (the Faults(...) ones prefixed ``faults.``)."""
    call = ast.parse(f"f({config})", mode="eval").body
    assert isinstance(call, ast.Call)
    out: dict[str, str] = {}
    for kw in call.keywords:
        if kw.arg == "faults" and isinstance(kw.value, ast.Call):
            out.update({f"faults.{k.arg}": ast.unparse(k.value) for k in kw.value.keywords})
        else:
            out[str(kw.arg)] = ast.unparse(kw.value)
    return out


def _config(settings: dict[str, str]) -> str:
    top = [f"{k}={v}" for k, v in sorted(settings.items()) if not k.startswith("faults.")]
    faults = [f"{k.removeprefix('faults.')}={v}" for k, v in sorted(settings.items()) if k.startswith("faults.")]
    return ", ".join(top + [f"faults=Faults({', '.join(faults)})"])


def suite_of(test: str) -> str:
    """``test_iptables.py::test_x[IPv6]`` -> ``iptables``"""
    return test.split("::", 1)[0].removeprefix("test_").removesuffix(".py")


@dataclass
class Group:
    """Rows that share one run of the suites they declare: the same configuration but for their faults, no fault flag in
    common, and no declared suite in common -- so each failure belongs to exactly one row (the row that declares its
    suite), and a failure in a suite no row of the group declares is a fault reaching outside its declared suites."""
    base: dict[str, str]
    rows: list[Row] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def suites(self) -> set[str]:
        return {s for r in self.rows for s in r.suites}

    @property
    def runs(self) -> tuple[str, ...]:
        """The suites the group's run runs: those its rows declare."""
        return tuple(sorted(self.suites))

    def admits(self, row: Row, settings: dict[str, str]) -> bool:
        base = {k: v for k, v in settings.items() if not k.startswith("faults.")}
        return base == self.base and not (set(settings) - set(base)) & set(self.settings) and not set(row.suites) & self.suites

    @property
    def config(self) -> str:
        return _config(self.settings)


def fault_groups(rows: list[Row] = ROWS) -> list[Group]:
    """The table's rows in shared runs: each row joins the first group that admits it (table order), else starts one."""
    groups: list[Group] = []
    for row in rows:
        settings = _settings(row.config)
        group = next((g for g in groups if g.admits(row, settings)), None)
        if group is None:
            group = Group(base={k: v for k, v in settings.items() if not k.startswith("faults.")})
            groups.append(group)
        group.rows.append(row)
        group.settings.update(settings)
    return groups


GROUPS = fault_groups()
GROUP_OF = {row.name: i for i, g in enumerate(GROUPS) for row in g.rows}


def failed_tests(result: pytest.RunResult) -> set[str]:
    return {line.split(" ")[1].split("/")[-1] for line in result.stdout.lines if line.startswith("FAILED ")}


def _group_run(pytester: pytest.Pytester, index: int) -> pytest.RunResult:
    """The run the rows of a group share: the suites they declare (Group.runs), once (test_suites_vs_fake.shared_run)."""
    group = GROUPS[index]
    return shared_run(pytester, group.config, *group.runs, args=("-rf",))[0]


def _who_reached(pytester: pytest.Pytester, group: Group, outside: set[str]) -> str:
    """Only when a failure lies outside the group's declared suites: each row of the group alone, on those suites."""
    suites = sorted({suite_of(t) for t in outside})
    culprits = []
    for row in group.rows:
        alone = run_suites(pytester, row.config, *suites, args=("-rf",))
        if failed_tests(alone):
            culprits.append(f"{row.name} fails {sorted(failed_tests(alone))}")
    return "; ".join(culprits) or "no row alone: the group's faults together (split the group)"


ROW_TEST = "test_each_fault_fails_exactly_the_tests_that_check_it"


@pytest.mark.parametrize("row", [pytest.param(r, id=r.name) for r in ROWS])
def test_each_fault_fails_exactly_the_tests_that_check_it(pytester: pytest.Pytester, row: Row) -> None:
    """The row's fault, in one run of the suites its group declares, with the other faults of its group: exactly the
    row's tests fail in the suites it declares, each with words that name the property."""
    index = GROUP_OF[row.name]
    judge_row(_group_run(pytester, index), row)


def judge_row(result: pytest.RunResult, row: Row) -> None:
    failed = failed_tests(result)
    assert result.parseoutcomes().get("errors", 0) == 0, f"a fault must fail tests, not break their setup\n{result.stdout.str()[-4000:]}"
    mine = {t for t in failed if suite_of(t) in row.suites}
    assert mine == row.failing, (f"{row.name} (suites {', '.join(row.suites)}): failed {sorted(mine)}, the table says "
                                 f"{sorted(row.failing)}\n{result.stdout.str()[-4000:]}")
    sections = failure_blocks(result.stdout.str())
    text = [line for t in sorted(row.failing) for line in sections.get(t.split("::", 1)[1], [])]
    assert text, f"no failure report for {sorted(row.failing)} in the run's output"
    pytest.LineMatcher(text).fnmatch_lines_random(list(row.messages))


def judge_reach(pytester: pytest.Pytester, result: pytest.RunResult, group: Group) -> None:
    """A run of suites no row of the group declares, under the group's faults: any failure or error outside the declared
    suites is a fault reaching outside them (the table would hide what it breaks), named with the row that reaches it;
    the run passed, or found nothing to judge (the suites left do not apply to the group's configuration)."""
    who = ", ".join(r.name for r in group.rows)
    assert result.parseoutcomes().get("errors", 0) == 0, f"{who}: errors outside the declared suites\n{result.stdout.str()[-4000:]}"
    outside = {t for t in failed_tests(result) if suite_of(t) not in group.suites}
    assert not outside, f"tests failed outside the suites declared by {who}: {sorted(outside)}; alone: {_who_reached(pytester, group, outside)}"
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), \
        f"{who}: the run outside the declared suites ended {result.ret}\n{result.stdout.str()[-4000:]}"


def _group_id(group: Group) -> str:
    return group.rows[0].name + (f"+{len(group.rows) - 1}" if len(group.rows) > 1 else "")


ALL_SUITES = {p.name.removeprefix("test_").removesuffix(".py") for p in SUITES.glob("test_*.py")}


@pytest.mark.reach
@pytest.mark.parametrize("index", [pytest.param(i, id=_group_id(g)) for i, g in enumerate(GROUPS) if ALL_SUITES - g.suites])
def test_no_fault_reaches_outside_its_declared_suites(pytester: pytest.Pytester, index: int) -> None:
    """The table's honesty (make test-reach): the group's faults, under every suite none of its rows declares, fail
    nothing."""
    group = GROUPS[index]
    judge_reach(pytester, run_suites(pytester, group.config, *sorted(ALL_SUITES - group.suites), args=("-rf",)), group)


def test_the_table_declares_each_rows_suites() -> None:
    """A row's failing tests lie in the suites it declares, each declared suite exists, and the groups hold every row
    once with disjoint suites and one configuration each."""
    for row in ROWS:
        assert set(row.suites) <= ALL_SUITES, (row.name, set(row.suites) - ALL_SUITES)
        assert {suite_of(t) for t in row.failing} <= set(row.suites), row.name
    assert sorted(r.name for g in GROUPS for r in g.rows) == sorted(r.name for r in ROWS)
    for g in GROUPS:
        assert sum(len(r.suites) for r in g.rows) == len(g.suites), "disjoint declared suites"
        assert all({k: v for k, v in _settings(r.config).items() if not k.startswith("faults.")} == g.base for r in g.rows)


def test_a_fault_outside_its_declared_suites_is_an_error(pytester: pytest.Pytester) -> None:
    """The table cannot hide what a fault breaks: a row whose fault also fails a suite it does not declare fails, naming
    the test and the row that reached it (here: NodePort's wrong port, declared as if it lived in the iptables suite)."""
    row = Row("wrong-port-declared-narrowly", "nodeport_wrong_port", ("iptables",), "faults=Faults(nodeport_wrong_port=True)", frozenset(), ())
    (group,) = fault_groups([row])
    result = run_suites(pytester, group.config, "nodeport", args=("-rf",))
    with pytest.raises(AssertionError) as e:
        judge_reach(pytester, result, group)
    assert str(e.value).startswith("tests failed outside the suites declared by wrong-port-declared-narrowly: [")
    assert f"'{NP}test_nodeport_answers_http_200_on_the_node'" in str(e.value)
    assert f"alone: wrong-port-declared-narrowly fails ['{NP}test_agent_lists_the_wildcard_nodeport_frontend'" in str(e.value)


def test_a_row_that_claims_too_little_or_the_wrong_words_fails(pytester: pytest.Pytester) -> None:
    """Within its declared suites a row's failing set is exact and its words must be in those tests' own reports."""
    config = "faults=Faults(nodeport_listener=True)"
    result = run_suites(pytester, config, "nodeport", args=("-rf",))
    right = Row("listener", "nodeport_listener", ("nodeport",), config, frozenset({NP + "test_nobody_listens_on_the_nodeport"}),
                ("*NodePort: 1 sockets listen on :30780*",))
    judge_row(result, right)
    for wrong, says in [(replace(right, failing=frozenset()), "listener (suites nodeport): failed ["),
                        (replace(right, messages=("*iptables: *",)), "line '*iptables: *' not found in output")]:
        with pytest.raises((AssertionError, pytest.fail.Exception)) as e:
            judge_row(result, wrong)
        assert says in str(e.value)


def test_a_failure_saves_and_attaches_the_datapath_bundle(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "faults=Faults(nodeport_listener=True)", "nodeport")
    assert result.parseoutcomes().get("failed") == 1
    result.stdout.fnmatch_lines(["FAIL  NodePort *"])
    failures = list((pytester.path / "artifacts" / "fake" / "failures").iterdir())
    files = {p.name for p in failures[0].iterdir()}
    assert {"pods.txt", "fake-worker-service-list.txt", "fake-worker-bpf-lb-list.txt", "fake-worker-lb-maps-dump.txt",
            "fake-worker-bpf-ct-list-global.txt",
            "fake-worker-bpf-metrics-list.txt"} <= files
    # the terminal says where the bundle is; the dumps themselves stay in its files (test_suites_vs_fake: at most 40 lines)
    result.stdout.fnmatch_lines(["*kpr: evidence*", f"saved under {failures[0]}: * files (*)"])
    assert "kpr: fake-worker: bpf lb list" not in result.stdout.str()


def test_a_node_without_an_agent_stops_the_run_before_any_suite(pytester: pytest.Pytester) -> None:
    """Every node runs a cilium-agent: readiness waits for one per node and refuses the cluster otherwise,
    so no suite runs on a cluster where a node would serve its Services from nowhere."""
    result = run_suites(pytester, "faults=Faults(missing_agent_on='fake-control-plane')")
    assert result.ret != 0 and result.parseoutcomes().get("passed") is None
    result.stdout.fnmatch_lines(["*waiting for every cilium-agent to report Ok with KubeProxyReplacement True; last observed: 2/3 agents*"])


def test_a_missing_service_no_backend_response_stops_the_run_naming_the_field(pytester: pytest.Pytester) -> None:
    """The no-backend expectations depend on ServiceNoBackendResponse: an agent that reports it nowhere is an error that
    names the field, the version and where it looked -- never a silent 'reject'."""
    result = run_suites(pytester, "cilium_version='1.20.5', faults=Faults(no_backend_response_unreported=True)")
    assert result.ret == 3 and result.parseoutcomes().get("passed") is None
    result.stdout.fnmatch_lines(["*pytest-kpr: Cilium 1.20.5 reports no ServiceNoBackendResponse (reject|drop): neither `cilium-dbg config -a` "
                                 "(field ServiceNoBackendResponse) nor /tmp/cilium/config-map/service-no-backend-response has it; the "
                                 "no-backend expectations depend on it, so pytest-kpr will not assume 'reject'*"])


def test_kube_proxy_accepted_on_purpose_is_skipped_naming_what_was_found(pytester: pytest.Pytester) -> None:
    """--kpr-allow-kube-proxy: co-existence is Cilium-documented, so a user may accept it; the checks then skip, naming it."""
    result = run_suites(pytester, "faults=Faults(kube_proxy_daemonset=True, ipvs_services=True)", "kube_proxy", args=("--kpr-allow-kube-proxy", "-rs"))
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*kube-proxy beside the replacement, accepted on purpose (--kpr-allow-kube-proxy): DaemonSet kube-system/kube-proxy "
                                 "runs kube-proxy (3/3 pods ready)*"])


def test_each_row_is_named_once_and_breaks_only_its_faults_property() -> None:
    """A row's faults (its own and those it gives ``also``) all break the property of the suite it runs first."""
    assert len({r.name for r in DECLARED_ROWS}) == len(DECLARED_ROWS)
    for fault in DECLARED.values():
        for row in fault.fails:  # type: ignore[union-attr]
            assert {DECLARED[name].property for name, _ in row.also} <= {fault.property}, (fault.name, row)


def test_every_fault_has_a_row_or_names_the_test_that_proves_it() -> None:
    """A fault the table does not exercise proves nothing: a new one gets its rows (``fails=``), or, when it stops the run
    or acts only in real time, ``proven_by=`` names the self-test that shows it -- a test that exists and gives the fake
    that fault."""
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    for fault in DECLARED.values():
        assert bool(fault.fails) != bool(fault.proven_by), f"{fault.name}: rows (fails=) or proven_by=, one of them"
        if fault.proven_by:
            path, _, test = fault.proven_by.partition("::")
            source = (repo / path).read_text()
            assert f"def {test}(" in source and fault.name in source, (fault.name, fault.proven_by)


def test_the_rows_resolve_against_the_suites() -> None:
    """A row names its own suite's tests bare and another suite's as ``suite::test``; a fault of a property no suite has
    cannot carry rows."""
    from pytest_kpr.testing.faults import Fails, Fault, _resolve

    fault = Fault("x", "NodePort", "d")
    row = _resolve(fault, Fails(tests=("test_a[IPv6]", "iptables::test_b"), says="*w*", fake="lb_map_max=512", runs="hostport"), "nodeport")
    assert row == Row("x", "x", ("nodeport", "iptables", "hostport"), "lb_map_max=512, faults=Faults(x=True)",
                      frozenset({"test_nodeport.py::test_a[IPv6]", "test_iptables.py::test_b"}), ("*w*",))
    with pytest.raises(ValueError, match="fails tests, but no suite has its property"):
        rows({})


def test_the_iptables_evidence_counts_kube_sep_lines(pytester: pytest.Pytester) -> None:
    """The figures in iptables.json are counted, not assumed: with only KUBE-SEP chains on the nodes they are not zero."""
    from test_suites_vs_fake import evidence

    run_suites(pytester, "faults=Faults(kube_proxy_rules='sep-only')", "iptables")
    ipt = evidence(pytester, "iptables.json")
    per_view = [c["kube_sep"] for views in ipt["nodes"].values() for c in views.values() if isinstance(c, dict)]
    assert ipt["kube_sep_lines"] == sum(per_view) > 0 and ipt["kube_svc_lines"] == 0 and ipt["kube_proxy_lines"] == ipt["kube_sep_lines"]


def test_the_nodeport_evidence_counts_lines_in_every_view(pytester: pytest.Pytester) -> None:
    from test_suites_vs_fake import evidence

    run_suites(pytester, "faults=Faults(kube_proxy_rules='nodeports')", "nodeport")
    np_ = evidence(pytester, "nodeport.json")
    assert np_["rule_lines"]["iptables-nft"] == 1 and np_["iptables_lines"] == sum(v for v in np_["rule_lines"].values() if isinstance(v, int)) == 2


REPLAY_TEST = "test_each_faults_recording_replays_to_the_same_verdicts"


@pytest.mark.reach  # make test-reach: an exhaustive sweep (make test replays three configurations: tests/run/test_replay.py)
@pytest.mark.parametrize("index", [pytest.param(i, id=g.rows[0].name) for i, g in enumerate(GROUPS)])  # tests/conftest.py: the group's worker
def test_each_faults_recording_replays_to_the_same_verdicts(pytester: pytest.Pytester, index: int) -> None:
    """Every fault's run is a recording (pytest_kpr.run.recording): replayed offline with today's suites and judges
    (``--kpr-provider=replay``), it reaches the same verdict for every test, the failures included. Part of the fault
    table's sweep in make test-reach (each group's run made once more there, then replayed)."""
    group = GROUPS[index]
    result, art = shared_run(pytester, group.config, *group.runs, args=("-rf",))
    replayed = run_suites(pytester, group.config, *group.runs, args=("--kpr-provider=replay", f"--kpr-replay={art}", "--kpr-artifacts=replayed"))
    was = {t["test"]: t["outcome"] for t in json.loads((art / "results.json").read_text())["tests"]}
    now = {t["test"]: t["outcome"] for t in json.loads((pytester.path / "replayed" / "fake" / "results.json").read_text())["tests"]}
    assert was and now == was, f"{_group_id(group)}: {sorted((k, was.get(k), now.get(k)) for k in set(was) | set(now) if was.get(k) != now.get(k))}"
    replayed.stdout.no_fnmatch_line("*replay diverged*")
