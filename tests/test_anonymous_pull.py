"""scripts/anonymous_pull.py: publish.yml's check that the probe image a release pins can be pulled with no credentials
(a new GHCR package is private, and a wheel pinned to it sends every caller's kind cell to a refused pull). Against
canned registry answers (KPR_REGISTRY_ANSWERS), as the act tier runs it: nothing is asked of a real registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IMAGE = "ghcr.io/example-org/pytest-kpr-probe@sha256:" + "ab" * 32
#: as probe-image.yml gives it to publish.yml: the tag and the digest
TAGGED = "ghcr.io/pytest-kpr/pytest-kpr/probe:0.1.0@sha256:" + "cd" * 32


@pytest.mark.parametrize(("answers", "rc", "words"), [
    ({"https://ghcr.io/token?*": [200, '{"token": "t"}'], "https://ghcr.io/v2/*/manifests/*": [200, ""]}, 0, "can be pulled anonymously"),
    ({"https://ghcr.io/token?*": [401, ""]}, 1, "::error::" + IMAGE + " cannot be pulled anonymously: its package is private"),
    ({"https://ghcr.io/token?*": [200, '{"token": "t"}'], "https://ghcr.io/v2/*/manifests/*": [403, ""]}, 1, "its package is private"),
    ({"https://ghcr.io/token?*": [200, '{"token": "t"}'], "https://ghcr.io/v2/*/manifests/*": [404, ""]}, 1, "the manifest answered 404"),
    ({"https://ghcr.io/token?*": [500, ""]}, 1, "the registry's token endpoint answered 500"),
], ids=["public", "private (token refused)", "private (manifest refused)", "not pushed", "registry error"])
def test_a_release_is_published_only_when_its_probe_image_can_be_pulled_anonymously(tmp_path: Path, answers: dict, rc: int, words: str) -> None:
    canned = tmp_path / "answers.json"
    canned.write_text(json.dumps(answers))
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "anonymous_pull.py"), IMAGE], capture_output=True, text=True,
                       env={**os.environ, "KPR_REGISTRY_ANSWERS": str(canned)}, timeout=60)
    assert p.returncode == rc and words in p.stdout and p.stdout.count("\n") == 1, (p.stdout, p.stderr)


@pytest.mark.parametrize("bad", ["ghcr.io/o/p:latest", "p@sha256:00", ""])
def test_an_image_not_pinned_by_digest_is_usage(bad: str) -> None:
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "anonymous_pull.py"), bad], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, p


def test_publish_checks_the_pull_before_it_builds_the_wheel() -> None:
    import yaml

    steps = yaml.safe_load((REPO / ".github" / "workflows" / "publish.yml").read_text())["jobs"]["build"]["steps"]
    names = [s.get("name", "") for s in steps]
    check = next(i for i, n in enumerate(names) if n.startswith("the probe image can be pulled anonymously"))
    assert check < names.index("build and check") and 'scripts/anonymous_pull.py "$IMAGE"' in steps[check]["run"]


def test_a_tagged_reference_is_checked_by_its_digest(tmp_path: Path) -> None:
    """probe-image.yml's output is REGISTRY/NAME:TAG@sha256:DIGEST: the name without the tag is asked for, the digest pulled."""
    canned = tmp_path / "answers.json"
    canned.write_text(json.dumps({"https://ghcr.io/token?scope=repository:pytest-kpr/pytest-kpr/probe:pull*": [200, '{"token": "t"}'],
                                  "https://ghcr.io/v2/pytest-kpr/pytest-kpr/probe/manifests/sha256:" + "cd" * 32: [200, ""]}))
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "anonymous_pull.py"), TAGGED], capture_output=True, text=True,
                       env={**os.environ, "KPR_REGISTRY_ANSWERS": str(canned)}, timeout=60)
    assert p.returncode == 0 and "can be pulled anonymously" in p.stdout, (p.stdout, p.stderr)
