"""``kpr probe-image build``: the probe image from the installed package alone (a user's CI has no checkout of this
project), with the Dockerfile the package ships. Docker is not here: a stub records what would be built, and the
context is checked to hold everything the Dockerfile copies and to run ``kpr probe`` from the copied package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_kpr.cli import main

STUB = """#!/bin/sh
echo "$@" > "$KPR_STUB_LOG"
ctx=$(eval echo \\${$#})
ls "$ctx" > "$KPR_STUB_LOG.ls"
"""


def copies(dockerfile: Path) -> list[str]:
    return [line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("COPY ")]


def test_the_context_holds_what_the_dockerfile_copies_and_runs_kpr_probe(tmp_path: Path) -> None:
    assert main(["probe-image", "build", "--context-only", str(tmp_path / "ctx")]) == 0
    dockerfile = tmp_path / "ctx" / "Dockerfile"
    assert copies(dockerfile) == ["pytest_kpr"] and (tmp_path / "ctx" / "pytest_kpr" / "cli" / "probe.py").is_file()
    assert not list((tmp_path / "ctx").rglob("__pycache__"))
    # the image's kpr: python -m pytest_kpr.cli with the copied package first on the path (as PYTHONPATH=/opt/kpr does)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pytest_kpr; assert pytest_kpr.__file__.startswith(sys.argv[1]), "
            "pytest_kpr.__file__; from pytest_kpr.cli.main import main; sys.exit(main(['probe', '--help']))")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ctx")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "syn" in r.stdout, r.stderr


def test_the_checkouts_context_holds_it_too() -> None:
    """make probe-image builds the same Dockerfile with the checkout as context."""
    repo = Path(__file__).resolve().parents[2]
    assert all((repo / c).exists() for c in copies(repo / "clusters" / "images" / "probe" / "Dockerfile"))


def test_build_runs_docker_build_with_the_default_probe_image_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_kpr import __version__

    stub = tmp_path / "docker"
    stub.write_text(STUB)
    stub.chmod(0o755)
    monkeypatch.setenv("KPR_STUB_LOG", str(tmp_path / "log"))
    assert main(["probe-image", "build", "--docker", str(stub), "--platform", "linux/arm64"]) == 0
    argv = (tmp_path / "log").read_text().split()
    assert argv[:3] == ["build", "-t", f"pytest-kpr-probe:{__version__}"] and argv[argv.index("--platform") + 1] == "linux/arm64"
    assert (tmp_path / "log.ls").read_text().split() == ["Dockerfile", "pytest_kpr"]
    assert not Path(argv[-1]).exists(), "the temporary context is removed"


def test_unless_pinned_builds_nothing_when_the_release_pins_an_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_kpr.cli import probe_image

    monkeypatch.setattr(probe_image, "pinned_image", lambda: "ghcr.io/pytest-kpr/pytest-kpr/probe:0.1.0@sha256:" + "0" * 64)
    assert main(["probe-image", "build", "--unless-pinned", "--docker", "/nonexistent"]) == 0
    assert "nothing to build" in capsys.readouterr().out
    monkeypatch.setattr(probe_image, "pinned_image", lambda: "")
    assert main(["probe-image", "build", "--unless-pinned", "--docker", "/nonexistent"]) == 2
    assert "building the probe image needs Docker" in capsys.readouterr().err
    assert os.path.exists("/nonexistent") is False
