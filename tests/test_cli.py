"""The `kpr` console script."""

from __future__ import annotations

import subprocess
import sys

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
    assert out[1].startswith("pinned Cilium 1.20.2 (matrix 1.18.14, 1.19.8, 1.20.2), kind v0.30.0")


def test_kpr_without_a_command_prints_help_and_exits_2() -> None:
    cp = subprocess.run([sys.executable, "-m", "pytest_kpr"], capture_output=True, text=True)
    assert cp.returncode == 2
    assert "usage: kpr" in cp.stdout


def test_readme_documents_every_option() -> None:
    from pathlib import Path

    from pytest_kpr.settings import OPTIONS

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    missing = [o.flag for o in OPTIONS if f"`{o.flag}`" not in readme or f"`{o.ini}`" not in readme]
    assert not missing, f"README lacks options: {missing}"
    assert readme.index("make kpr") < readme.index("## ") and readme.index("make test") < readme.index("## ")
