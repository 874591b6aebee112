"""Cilium's own load-balancer test scripts against the fake agent (pytest_kpr.testing.txtar), each file's outcome pinned.

The scripts are cilium/cilium pkg/loadbalancer/tests/testdata/*.txtar, Cilium's expectations written by Cilium's
developers. They are not in this tree (Apache-2.0 data, read where they are): KPR_LB_TXTAR names their folder, else
the folder ``shared/cilium-lb-txtar`` beside this checkout. Without it this module is one skipped test, unless
KPR_REQUIRE_LB_TXTAR=1 (the make-test job sets it): then it fails.

tests/data/lb-txtar-outcomes.json pins each file's outcome for the text it was measured on (its SHA-256): that text must
give that outcome again (a PASS turning FAIL is a regression of the fake agent; an UNSUPPORTED turning PASS asks for a
re-pin, scripts/lb_txtar_outcomes.py --pin). Another version of a file, or a file without a pin, must run without
breaking the runner; its outcome is reported, not enforced.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pytest_kpr.testing.txtar import Outcome, run_file, run_text

ROOT = Path(__file__).resolve().parents[2]
PINS: dict[str, dict[str, str]] = json.loads((ROOT / "tests" / "data" / "lb-txtar-outcomes.json").read_text())
REQUIRE = "KPR_REQUIRE_LB_TXTAR"


def scripts_dir() -> Path:
    return Path(os.environ.get("KPR_LB_TXTAR") or ROOT.parent / "shared" / "cilium-lb-txtar")


DIR = scripts_dir()
PRESENT = sorted(p.name for p in DIR.glob("*.txtar")) if DIR.is_dir() else []


def test_the_scripts_are_there() -> None:
    if PRESENT:
        return
    msg = f"Cilium's load-balancer test scripts not found in {DIR} (set KPR_LB_TXTAR to their folder)"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{msg}, but {REQUIRE}=1 requires them")
    pytest.skip(msg)


@pytest.mark.parametrize("name", sorted(set(PRESENT) | (set(PINS) if PRESENT else set())))
def test_a_script_keeps_its_pinned_outcome(name: str) -> None:
    path = DIR / name
    pin = PINS.get(name)
    if not path.is_file():
        pytest.skip(f"{name}: pinned, not in {DIR}")
    outcome = run_file(path)
    assert "the runner failed" not in outcome.detail, outcome.line()
    if pin is None or hashlib.sha256(path.read_bytes()).hexdigest() != pin["sha256"]:
        print(f"not the pinned text, outcome reported only: {outcome.line()}")
        return
    if pin["outcome"] == "PASS":
        assert outcome.verdict == "PASS", f"Cilium's script no longer passes against the fake agent: {outcome.line()}"
    else:
        assert (outcome.verdict, outcome.detail) == (pin["outcome"], pin.get("detail", "")), (
            f"{name} was pinned {pin['outcome']} ({pin.get('detail', '')}), now {outcome.line()}: "
            "re-pin with scripts/lb_txtar_outcomes.py --pin once the change is understood")


def test_the_pins_meet_the_issue() -> None:
    """At least 40 of the 50 files PASS, and 24 of the 26 files of the core groups."""
    core = ("hybrid-dsr migrate-backend svc-scope-annotation svc-type-annotation topology-aware-starting disabled-external-ips "
            "external-ips multiple-endpointslices clusterip-allowed clusterip external-clusterip headless name-collisions "
            "source-ranges-all source-ranges svc-forwarding-mode-annotation hostport-recreate hostport-uid-recreate "
            "loadbalancer-disabled-wildcards loadbalancer-localaddr-wildcards loadbalancer-multiport loadbalancer "
            "nodeport-explicit-maglev nodeport-explicit-random nodeport-lb-nodeport-range nodeport").split()
    passing = {n for n, p in PINS.items() if p["outcome"] == "PASS"}
    assert len(PINS) == 50 and len(passing) >= 40, (len(PINS), len(passing))
    assert {n for n, p in PINS.items() if p["outcome"] == "FAIL"} <= {"loadbalancer.txtar"}, "a FAIL is pinned only with its reason in the docs"
    assert len({f"{c}.txtar" for c in core} & passing) >= 24


def test_the_contributing_page_lists_each_unsupported_file() -> None:
    page = (ROOT / "docs" / "contributing" / "cilium-lb-scripts.md").read_text()
    for name, pin in PINS.items():
        if pin["outcome"] == "UNSUPPORTED":
            assert f"`{name}`" in page, f"docs/contributing/cilium-lb-scripts.md does not list {name} ({pin['detail']})"


# -- the runner on scripts written here: each verdict, and a check that can fail ----------------------------------------

SERVICE = """-- svc.yaml --
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: test}
spec:
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10]
  ipFamilies: [IPv4]
  ports: [{name: http, port: 80, protocol: TCP}]
  type: ClusterIP
-- slice.yaml --
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-1, namespace: test, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
endpoints: [{addresses: [10.244.0.5], nodeName: w1}]
ports: [{name: http, port: 8080, protocol: TCP}]
"""


@pytest.mark.parametrize(("script", "verdict", "detail"), [
    ("hive start\nk8s/add svc.yaml slice.yaml\ndb/cmp frontends fe.table\n",
     "PASS", ""),
    ("hive start\nk8s/add svc.yaml slice.yaml\ndb/cmp frontends fe_wrong.table\n",
     "FAIL", "line 3 (db/cmp frontends fe_wrong.table)"),
    ("hive start\nk8s/add svc.yaml\n! db/cmp frontends fe.table\n",
     "PASS", ""),
    ("hive start\nk8s/add svc.yaml slice.yaml\n! db/cmp frontends fe.table\n",
     "FAIL", "succeeded, the script expects it to fail"),
    ("hive start\nk8s/frobnicate svc.yaml\n",
     "UNSUPPORTED", "line 2: command k8s/frobnicate"),
    ("#! --enable-frobnication\nhive start\n",
     "UNSUPPORTED", "--enable-frobnication: an agent flag the fake does not model"),
    ("[linux] hive start\n",
     "UNSUPPORTED", "condition [linux]"),
])
def test_the_runner_gives_each_verdict(script: str, verdict: str, detail: str) -> None:
    tables = ("-- fe.table --\nAddress              Type        ServiceName   Backends\n"
              "10.96.0.10:80/TCP    ClusterIP   test/echo     10.244.0.5:8080/TCP\n"
              "-- fe_wrong.table --\nAddress              Type        ServiceName   Backends\n"
              "10.96.0.10:80/TCP    ClusterIP   test/echo     10.244.0.6:8080/TCP\n")
    out: Outcome = run_text("t.txtar", script + SERVICE + tables)
    assert out.verdict == verdict, out.line()
    assert detail in out.detail, out.line()


def test_a_runner_bug_is_one_fail_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_kpr.testing import txtar

    def boom(self: object, args: list[str]) -> None:
        raise KeyError("x")

    monkeypatch.setitem(txtar.Script.COMMANDS, "hive", boom)
    out = run_text("t.txtar", "hive start\n")
    assert out.verdict == "FAIL" and "the runner failed: KeyError" in out.detail, out.line()
