"""`kpr matrix` on artifact directories the suites wrote against the fake at different versions and kernels,
one with a regression; and the page in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from helpers import chromium

REPO = Path(__file__).resolve().parents[2]

from pytest_kpr.cli import main

SUITES = Path(__file__).resolve().parents[2] / "suites"
CONFTEST = """
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider, Faults

PROVIDER = FakeProvider(FakeCluster(FakeConfig(pod_ready_ticks=2, cilium_version={version!r}, kernel={kernel!r}, faults=Faults({faults}))))
def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER
"""
RUNS = {  # name: (Cilium, kernel, fault)
    "a-1.19-k6.1": ("1.19.8", "6.1.0-50-amd64", ""),
    "b-1.20-k6.1": ("1.20.2", "6.1.0-50-amd64", "kube_proxy_rules='nft'"),  # the regression: kube-proxy's rules appear
    "c-1.20-k6.12": ("1.20.2", "6.12.107+deb12-amd64", ""),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs' artifact directories (the iptables and NodePort suites against the fake), made once per session:
    under pytest-xdist the workers share the base temporary directory's parent, and the first one to take the lock
    makes them (each worker that got a test of this module made all three before: 7 s each)."""
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else tmp_path_factory.getbasetemp()
    out = shared / "matrix-runs"
    with open(shared / "matrix-runs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".done").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            _make_runs(out)
            (out / ".done").write_text("")
    return out


def _make_runs(out: Path) -> None:
    for name, (version, kernel, fault) in RUNS.items():
        work = Path(tempfile.mkdtemp(prefix=f"kpr-matrix-{name}-", dir=out))
        shutil.copytree(SUITES, work / "suites")
        (work / "conftest.py").write_text(textwrap.dedent(CONFTEST.format(version=version, kernel=kernel, faults=fault)))
        cp = subprocess.run([sys.executable, "-m", "pytest",
                             "suites/test_iptables.py", "suites/test_nodeport.py", "-m", "kpr", "-q", "-p", "no:cacheprovider",
                             f"--kpr-artifacts={out / name}", f"--kpr-cilium-version={version}", f"--junitxml={out / name / 'junit.xml'}"], cwd=work, capture_output=True, text=True, timeout=120)
        assert cp.returncode in (0, 1), cp.stdout[-2000:] + cp.stderr[-2000:]
        assert (out / name / "fake" / "results.json").is_file(), cp.stdout[-2000:]


def test_the_matrix_puts_each_run_in_a_column_and_marks_the_regression(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = runs / f"out-{os.getpid()}"  # the runs are shared by the workers; the pages are each test's own
    out.mkdir(exist_ok=True)
    rc = main(["matrix", *(str(runs / n) for n in RUNS), "--json", str(out / "m.json"), "--markdown", str(out / "m.md"),
               "--html", str(out / "m.html")])
    assert rc == 0
    data = json.loads((out / "m.json").read_text())
    keys = [c["key"] for c in data["columns"]]
    fake = " (fake cluster: no real datapath)"  # these runs are the fake's, and every column says so
    assert keys == [f"Cilium 1.19.8 / kernel 6.1.0-50-amd64 / default{fake}", f"Cilium 1.20.2 / kernel 6.1.0-50-amd64 / default{fake}",
                    f"Cilium 1.20.2 / kernel 6.12.107+deb12-amd64 / default{fake}"]
    assert {c["provider"] for c in data["columns"]} == {"fake"}
    ipt = data["properties"]["iptables"]
    assert [ipt[k]["verdict"] for k in keys] == ["pass", "fail", "pass"]
    assert ipt[keys[1]]["regressed_from"] == keys[0] and "regressed_from" not in ipt[keys[2]]
    assert all(data["properties"]["NodePort"][k]["verdict"] == "pass" for k in keys)
    assert ipt[keys[0]]["figure"].startswith("0 KUBE-SVC")
    md = (out / "m.md").read_text()
    assert "| iptables | **pass** 0 KUBE-SVC" in md and "**FAIL** ⚠ regression" in md
    assert "](../a-1.19-k6.1/fake)" in md, "each column links to its evidence, relative to the page"
    # the FAIL cell says why: the verdict's first line, the test, and the failure's own bundle
    fail_row = next(line for line in md.splitlines() if line.startswith("| iptables |"))
    assert "KUBE-SVC" in fail_row.split("**FAIL**", 1)[1] and "(test\\_" in fail_row, fail_row
    assert "[evidence](../b-1.20-k6.1/fake/failures/" in fail_row, fail_row
    page = (out / "m.html").read_text()
    assert '<div class="why">' in page and 'href="../b-1.20-k6.1/fake/failures/' in page
    mask = os.umask(0o022)
    os.umask(mask)
    for page in ("m.json", "m.md", "m.html"):  # readable as the umask allows, not mkstemp's 0600
        assert (out / page).stat().st_mode & 0o777 == 0o666 & ~mask, page


def test_compare_is_the_regression_gate(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--compare", str(runs / "a-1.19-k6.1"), str(runs / "b-1.20-k6.1")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REGRESSION iptables: passed in OLD Cilium 1.19.8 / kernel 6.1.0-50-amd64 / default (fake cluster: no real datapath), fails "
                          "in NEW Cilium 1.20.2 / kernel 6.1.0-50-amd64")
    assert "; why: iptables: kube-proxy's service rules are on the nodes" in out  # the NEW run's own reason
    assert "NodePort" not in out
    assert main(["matrix", "--compare", str(runs / "a-1.19-k6.1"), str(runs / "c-1.20-k6.12")]) == 0
    assert "no regression: every test that passed in the baseline of each cell passes in" in capsys.readouterr().out


def test_a_run_without_results_json_is_read_from_its_junit_xml(runs: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(runs / "b-1.20-k6.1", old)
    (old / "fake" / "results.json").unlink()
    from pytest_kpr.evidence.matrix import collect

    (col,) = collect([old])
    assert col.cells["iptables"]["verdict"] == "fail" and col.cells["nodeport"]["verdict"] == "pass"


@pytest.mark.parametrize(("argv", "words"), [
    (["matrix"], "name at least one artifact directory"),
    (["matrix", "/nonexistent/x"], "/nonexistent/x is not a directory"),
    (["matrix", "TMP"], "has no cluster.json: not the artifact directory of a kpr run"),
])
def test_bad_input_is_one_line(argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path) if a == "TMP" else a for a in argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


@pytest.mark.browser
def test_the_html_page_in_a_real_headless_browser(runs: Path, tmp_path: Path) -> None:
    """Debian's chromium loads the page and gives back its DOM: the table with a row per property and a column per
    run, and the regression mark on the regressed cell."""
    browser = chromium()
    if browser is None:
        if os.environ.get("KPR_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed but KPR_REQUIRE_BROWSER=1 (make test-browser installs it)")
        pytest.skip("chromium is not installed (make test-browser installs Debian's chromium)")
    page = tmp_path / "m.html"
    assert main(["matrix", *(str(runs / n) for n in RUNS), "--html", str(page)]) == 0
    profile = tmp_path / "profile"
    cp = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         f"--user-data-dir={profile}", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    dom = cp.stdout
    assert '<table id="matrix">' in dom, (cp.returncode, cp.stderr[-1000:])
    rows = dom.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("<tr>")[1:]
    iptables = next(r for r in rows if r.startswith("<th>iptables</th>"))
    cells = iptables.split("<td")[1:]
    assert len(cells) == 3 and 'class="fail regressed"' in cells[1] and '<span class="regression"' in cells[1]
    assert "regression" not in cells[0] and "regression" not in cells[2]
    assert "1 regressions." in dom
