"""``kpr scaffold property NAME``: the three stubs of a new property, each failing until it is filled, and the list of
what the property still lacks; nothing that exists is overwritten."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_kpr.cli.main import main
from pytest_kpr.cli.scaffold import STUB

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The directories a checkout has (suites/, pytest_kpr/judge/, tests/judge/), empty."""
    for d in ("suites", "pytest_kpr/judge", "tests/judge"):
        (tmp_path / d).mkdir(parents=True)
    return tmp_path


def test_the_stubs_are_written_and_what_is_missing_is_listed(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scaffold", "property", "sl_practice", "--root", str(checkout), "--plane", "socket"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == ["wrote suites/test_sl_practice.py", "wrote pytest_kpr/judge/sl_practice.py",
                       "wrote tests/judge/test_sl_practice.py", "sl practice still lacks:"]
    assert f"- suites/test_sl_practice.py: still the stub (replace each '{STUB}' body)" in out
    assert any(line.startswith("- no Cilium source cited: ") for line in out)
    assert any(line.startswith("- no fault of the fake breaks it: ") for line in out)
    assert '    Fault("sl_practice_broken", "sl practice", "TODO what goes wrong, one line",' in out
    assert """          fails=Fails(tests='test_sl_practice_holds', says="*sl practice: TODO the words of the failure*")),""" in out
    assert out[-1] == "- the catalogue and the docs do not know it yet: python scripts/gen_docs.py (then make test)"
    suite = (checkout / "suites" / "test_sl_practice.py").read_text()
    assert 'pytest.mark.kpr(property="sl practice", evidence="sl-practice.json", plane=\'socket\', sources=[])' in suite
    for path in (checkout / "suites" / "test_sl_practice.py", checkout / "pytest_kpr" / "judge" / "sl_practice.py",
                 checkout / "tests" / "judge" / "test_sl_practice.py"):
        ast.parse(path.read_text())  # each stub is Python


def test_the_suggested_fault_row_names_the_suites_own_tests(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Once the suite's tests have their names, the row to paste names them, not the stub's."""
    main(["scaffold", "property", "sl_practice", "--root", str(checkout)])
    suite = checkout / "suites" / "test_sl_practice.py"
    suite.write_text(suite.read_text().replace("def test_sl_practice_holds(", "def test_one_thing(")
                     + "\n\ndef test_another(seen) -> None:\n    pass\n")
    capsys.readouterr()
    main(["scaffold", "property", "sl_practice", "--root", str(checkout)])
    out = capsys.readouterr().out.splitlines()
    assert """          fails=Fails(tests=('test_one_thing', 'test_another'), says="*sl practice: TODO the words of the failure*")),""" in out


def test_a_second_run_writes_nothing_and_keeps_what_was_written(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["scaffold", "property", "sl_practice", "--root", str(checkout)])
    judge = checkout / "pytest_kpr" / "judge" / "sl_practice.py"
    judge.write_text("# mine\n")
    capsys.readouterr()
    assert main(["scaffold", "property", "sl_practice", "--root", str(checkout)]) == 1
    out = capsys.readouterr().out
    assert "wrote" not in out and judge.read_text() == "# mine\n"
    assert "pytest_kpr/judge/sl_practice.py: still the stub" not in out and "suites/test_sl_practice.py: still the stub" in out


def test_a_property_with_everything_lacks_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """headless, as it stands: its files, a cited source, faults with rows, its place in the catalogue."""
    assert main(["scaffold", "property", "headless", "--root", str(REPO)]) == 0
    assert capsys.readouterr().out == "headless: nothing missing\n"


@pytest.mark.parametrize(("argv", "says"), [
    (["Selectorless"], "kpr scaffold: property name 'Selectorless': a Python module name of 2-39 characters, lower case"),
    (["class"], "kpr scaffold: property name 'class': a Python module name"),
    (["ok_name", "--root", "/"], "kpr scaffold: / is not a checkout of pytest-kpr (no suites/, pytest_kpr/judge/ and tests/judge/ there)"),
])
def test_bad_input_is_one_line_and_writes_nothing(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scaffold", "property", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1


def test_the_stubs_fail_until_they_are_filled(checkout: Path) -> None:
    """A stub that passed would prove nothing: the judge's table fails on the stub judge, and the suite's fixture fails
    naming the stub (run against the fake, in a copy of the suites with the stub beside them)."""
    main(["scaffold", "property", "practice_prop", "--root", str(checkout)])
    shutil.copytree(REPO / "pytest_kpr", checkout / "pytest_kpr", dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "conftest.py", checkout / "conftest.py")

    def pytest_run(*args: str) -> str:
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=checkout,
                             capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(checkout)})
        return run.stdout

    table = pytest_run("tests/judge/test_practice_prop.py")
    assert "1 failed" in table and f"{STUB}: pytest_kpr/judge/practice_prop.py judges nothing yet" in table, table[-3000:]
    suite = pytest_run("suites/test_practice_prop.py", "-m", "kpr", "--kpr-provider=fake")
    assert "1 error" in suite and f"{STUB}: suites/test_practice_prop.py observes nothing yet" in suite, suite[-3000:]
