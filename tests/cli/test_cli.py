"""The `kpr` console script."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_kpr.cli import main


def test_kpr_help_lists_subcommands(capsys) -> None:  # type: ignore[no-untyped-def]
    try:
        main(["--help"])
    except SystemExit as e:
        assert e.code == 0
    out = capsys.readouterr().out
    assert "usage: kpr" in out and "version" in out


def test_kpr_version_prints_plugin_and_pins(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("pytest-kpr ")
    assert out[1].startswith("pinned Cilium 1.20.5 (matrix 1.18.14, 1.19.8, 1.20.5), kind v0.30.0")


@pytest.mark.parametrize("argv", [[], ["probe"], ["lbmodel"]])
def test_a_missing_command_prints_that_levels_help_on_stderr_and_exits_2(argv: list[str]) -> None:
    """``kpr``, ``kpr probe`` and ``kpr lbmodel`` alike: a command is missing, which is a usage error."""
    cp = subprocess.run([sys.executable, "-m", "pytest_kpr", *argv], capture_output=True, text=True)
    assert (cp.returncode, cp.stdout) == (2, "")
    assert cp.stderr.startswith(f"usage: kpr {' '.join(argv)}".rstrip())


def test_help_documents_the_exit_codes() -> None:
    out = subprocess.run([sys.executable, "-m", "pytest_kpr", "--help"], capture_output=True, text=True, check=True).stdout
    for code in ("0 ", "1 ", "2 ", "130"):
        assert f"\n  {code}" in out


def test_every_option_of_every_subcommand_has_help() -> None:
    import argparse

    from pytest_kpr.cli import build_parser

    def walk(parser: argparse.ArgumentParser, path: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    missing += walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert walk(build_parser(), "kpr") == []


def test_readme_names_the_two_entry_points_first() -> None:
    """Every option is documented on the generated options page (tests/test_docs.py); the README starts with how to run."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert readme.index("make kpr") < readme.index("make test") and "pytest -m kpr" in readme[:1000]
