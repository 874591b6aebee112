"""What `pip install pytest-kpr` gets: the wheel holds the plugin, the suites and the cluster files, and its metadata
passes twine's check; `pytest -m kpr --kpr-provider=fake` in an empty directory runs the packaged suites.

(The wheel installed into a fresh virtualenv, with its dependencies, is `make test-package`: scripts/check_package.sh,
run by .ci/run; here the package is the one this checkout installed.)"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import assert_the_rest_passed

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # from a copy of the sources: setuptools builds in the source tree's build/, and two xdist workers building this
    # checkout at once removed each other's files (seen in scripts/stress_selftests.sh: "No such file or directory:
    # build/bdist.linux-x86_64/wheel/pytest_kpr/rules/kernels.py")
    src = tmp_path_factory.mktemp("src") / "pytest-kpr"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "kpr-artifacts", ".kernels", ".bin", "*.egg-info",
                                                              "__pycache__", ".pytest_cache", ".hypothesis", "mutants"))
    # the wheel only: the sdist is built and checked by make test-package
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out


def test_the_wheel_ships_the_plugin_the_suites_and_the_cluster_files(dist: Path) -> None:
    (wheel,) = dist.glob("pytest_kpr-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    suites = sorted(p.name for p in (REPO / "suites").glob("test_*.py"))
    assert suites and all(f"pytest_kpr/suites/{n}" in names for n in suites), "every suite"
    clusters = sorted(str(p.relative_to(REPO / "clusters")) for p in (REPO / "clusters").rglob("*") if p.is_file())
    missing = [c for c in clusters if f"pytest_kpr/clusters/{c}" not in names]
    assert not missing, f"cluster files not in the wheel: {missing}"
    modules = sorted(str(p.relative_to(REPO)) for p in (REPO / "pytest_kpr").rglob("*.py"))
    assert not [m for m in modules if m not in names], "every module of the plugin (a subpackage missing from pyproject's packages)"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "suites/", "clusters/")) for n in names), "nothing at the top of site-packages"


def test_twine_check_passes_and_the_metadata_is_complete(dist: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, sorted(dist.iterdir()))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    (wheel,) = dist.glob("pytest_kpr-*.whl")
    meta = next(zipfile.ZipFile(wheel).read(n).decode() for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    assert "License-Expression: GPL-2.0-or-later" in meta and "Project-URL: Changelog" in meta and "Classifier: Framework :: Pytest" in meta
    assert "Requires-Dist: hypothesis" in meta, "the shared-VIP suite imports hypothesis: a runtime dependency"


def test_runtime_dependencies_cover_what_the_suites_import() -> None:
    """Every third-party module a suite imports is a runtime dependency (not only in the [test] extra)."""
    import tomllib

    deps = " ".join(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]).lower()
    third = set()
    for f in (REPO / "suites").glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                third.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                third.update(a.name.split(".")[0] for a in node.names)
    third -= set(sys.stdlib_module_names) | {"pytest_kpr", "__future__"}
    assert third and all(m.replace("_", "-") in deps or m in deps for m in third), (third, deps)


def _top_level_imports(path: Path) -> set[str]:
    """The modules a file imports when it is imported (not those imported inside a function)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
    return found


def test_a_checkout_with_only_the_runtime_dependencies_collects_its_tests() -> None:
    """A CI job that runs ``pip install .`` and ``pytest -m kpr`` in the checkout imports every module under tests/ while
    collecting: none may import a test extra (jsonschema, build, ...) at its top, or the cell stops with a collection
    error before any cluster exists. (make test-package runs exactly that, with the wheel in a fresh virtualenv.)"""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"]).lower()
    extras = {m for d in project["optional-dependencies"]["test"] for m in [d.split("=")[0].split(">")[0].split("[")[0].lower()]}
    packages = [p for p in (REPO / "tests").iterdir() if (p / "__init__.py").is_file()]  # tests/judge
    local = ({p.stem for d in ("tests", "tests/workflows", "scripts") for p in (REPO / d).glob("*.py")} | {p.name for p in packages}
             | {"pytest_kpr", "__future__", "_pytest"})
    bad = {}
    for f in sorted([*(REPO / "tests").glob("*.py"), *(f for p in packages for f in p.glob("*.py"))]):
        third = _top_level_imports(f) - set(sys.stdlib_module_names) - local
        extra_only = {m for m in third if m.replace("_", "-") not in runtime and m not in runtime}
        if extra_only:
            bad[str(f.relative_to(REPO / "tests"))] = sorted(extra_only)
    assert not bad, f"test modules importing a test extra at their top (import it inside the test): {bad}"
    assert "jsonschema" in extras  # the check above has something to catch


def test_a_path_holding_the_suites_own_files_gets_no_second_copy(tmp_path: Path) -> None:
    """pytest -m kpr in a pytest-kpr checkout with the wheel installed: the checkout's suites/ holds the installed suites'
    files, so the installed copy is not added (each module would be collected twice: "import file mismatch")."""
    from pytest_kpr.plugin.hooks import _holds_a_copy

    names = sorted(p.name for p in (REPO / "suites").glob("test_*.py"))
    (tmp_path / "suites").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mine.py").write_text("")
    assert not _holds_a_copy(tmp_path, names) and not _holds_a_copy(tmp_path / "tests", names)
    (tmp_path / "suites" / names[-1]).write_text("")
    assert _holds_a_copy(tmp_path, names) and _holds_a_copy(tmp_path / "suites", names)


def test_the_changelog_and_the_license_are_there() -> None:
    head = (REPO / "LICENSE").read_text().split()[:6]
    assert head == ["GNU", "GENERAL", "PUBLIC", "LICENSE", "Version", "2,"], head
    assert "## 0.1.0" in (REPO / "CHANGELOG.md").read_text()


def test_a_dry_run_in_an_empty_directory_runs_the_packaged_suites(pytester: pytest.Pytester) -> None:
    """No suites, no clusters/ and no conftest in the directory: the plugin brings them. A process of its own, as a user
    starts it: its CPU is the self-tests' yardstick (tests/cpu_report.py)."""
    result = pytester.runpytest_subprocess("-m", "kpr", "--kpr-provider=fake", "--kpr-suites=packaged", "-p", "no:cacheprovider")
    assert_the_rest_passed(result)
    result.stdout.fnmatch_lines(["kpr: THIS IS A DRY RUN: the fake cluster answers from pytest-kpr's own rules; nothing about a real "
                                 "datapath is tested"])
    import json

    art = pytester.path / "kpr-artifacts" / "latest" / "fake"
    assert json.loads((art / "cluster.json").read_text())["provider"] == "fake"


def test_a_fake_fault_fails_the_suite_that_checks_it(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "--kpr-suites=packaged", "--kpr-fake-faults=snat_address_swapped",
                                "-p", "no:cacheprovider")
    assert_the_rest_passed(result, failed=1)
    result.stdout.fnmatch_lines(["FAIL  DSR/SNAT *"])


@pytest.mark.parametrize(("args", "line"), [
    (["--kpr-provider=fake", "--kpr-fake-faults=nope"], "ERROR: pytest-kpr: --kpr-fake-faults: no fake fault 'nope' (known: *affinity_ignored, *"),
    (["--kpr-fake-faults=snat_address_swapped"], "ERROR: pytest-kpr: --kpr-fake-faults means nothing with --kpr-provider=kind; it is for --kpr-provider=fake"),
    (["--kpr-provider=fake", "--kpr-fake-faults=kube_proxy_rules"], "ERROR: pytest-kpr: --kpr-fake-faults: fake fault kube_proxy_rules needs a value*"),
])
def test_bad_fake_options_are_one_line_and_exit_4(pytester: pytest.Pytester, args: list[str], line: str) -> None:
    result = pytester.runpytest("-m", "kpr", *args)
    assert result.ret == 4
    result.stderr.fnmatch_lines([line])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
