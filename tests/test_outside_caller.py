"""Another repository calls the reusable workflow, as the CI guide shows, and gets the evidence.

A fresh repository whose only workflow is the guide's example (docs/guides/github-actions.md), changed in two ways
only -- ``provider: fake`` and ``pytest-kpr:`` the wheel built from this checkout -- runs under act; act maps
``OWNER/pytest-kpr/.github/workflows/kpr.yml@COMMIT`` to a snapshot of this checkout and every action to its stand-in
(tests/workflows/). Both of its jobs must pass, each upload its own artifact (the default names differ), and each
artifact hold a complete run against the fake cluster. ``make test-workflows`` runs this (marker ``workflows``); it
needs act from the test extra and takes about a minute."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import workflow_harness
import yaml

REPO = Path(__file__).resolve().parent.parent
harness = workflow_harness()  # tests/workflows/run.py

pytestmark = pytest.mark.workflows


def the_guides_example() -> str:
    guide = (REPO / "docs" / "guides" / "github-actions.md").read_text()
    block = re.search(r"```yaml\n(# \.github/workflows/kpr\.yml in your repository.*?)```", guide, re.S)
    assert block, "the GitHub Actions guide's example"
    return block.group(1)


def as_a_dry_run(example: str, wheel: Path) -> str:
    """The example with ``provider: fake`` and ``pytest-kpr: <wheel>`` in each job's ``with:`` -- nothing else changed
    (its comments and layout stay; a ``provider:`` or ``pytest-kpr:`` it had is replaced)."""
    out = []
    for line in example.splitlines():
        if line.startswith(("      provider:", "      pytest-kpr:")):
            continue
        out.append(line)
        if line == "    with:":
            out += ["      provider: fake", f"      pytest-kpr: {wheel}"]
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (whl,) = out.glob("pytest_kpr-*.whl")
    return whl


def test_a_repository_calling_the_reusable_workflow_as_the_guide_shows_gets_the_evidence(wheel: Path) -> None:
    # the runner user (not root, as on GitHub) must reach everything: a directory of this run under /tmp, not pytest's
    base = Path(tempfile.mkdtemp(prefix=f"kpr-act-{os.getpid()}-"))
    try:
        with harness.runner_image.runner_user(base) as runner:
            its_evidence(base, Path(shutil.copy2(wheel, base / wheel.name)), runner)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def its_evidence(tmp_path: Path, wheel: Path, runner: object) -> None:
    example = the_guides_example()
    caller_yaml = as_a_dry_run(example, wheel)
    before, after = yaml.safe_load(example), yaml.safe_load(caller_yaml)
    for name, job in before["jobs"].items():  # only provider and pytest-kpr differ
        assert {**job, "with": {**job["with"], "provider": "fake", "pytest-kpr": str(wheel)}} == after["jobs"][name]
    uses = {job["uses"] for job in yaml.safe_load(example)["jobs"].values()}
    (ref,) = uses
    owner_repo, at = ref.split("/.github/workflows/kpr.yml@")
    library = tmp_path / "pytest-kpr"
    library.mkdir()
    harness.snapshot(REPO, library)
    caller = tmp_path / "caller"
    (caller / ".github" / "workflows").mkdir(parents=True)
    (caller / ".github" / "workflows" / "kpr.yml").write_text(caller_yaml)
    (caller / "README.md").write_text("a platform team's repository\n")
    harness.commit_repository(caller, "https://github.com/example-org/platform.git", "the guide's example, as a dry run")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    plan = harness.Plan("kpr.yml", "push", {"ref": "refs/heads/main", "repository": {"full_name": "example-org/platform"}})
    actions = {**harness.action_map(), f"{owner_repo}@{at}": library}
    work = tmp_path / "act"
    (work).mkdir()
    runner.own(tmp_path)  # type: ignore[attr-defined]
    rc, results, log = harness.run_act(plan, work, caller, env, actions, gh_runs=tmp_path / "no-gh", runner=runner,
                                     workflows=caller / ".github" / "workflows", log_name="outside-caller",
                                     # one job at a time: both jobs call the reusable workflow, and act 0.2.89 crashed
                                     # ("fatal error: concurrent map read and map write" in LocalRepositoryCache.GetTarArchive)
                                     # when two jobs fetched that --local-repository at once (the .ci/run at 747afca)
                                     concurrent_jobs=1)
    text = log.read_text(errors="replace")
    assert rc == 0 and results and set(results.values()) == {"succeeded"}, f"{results}; log: {log}\n{text[-3000:]}"
    assert len(results) == len(yaml.safe_load(example)["jobs"]), results
    artifacts = work / "outside-caller" / "artifacts"
    names = sorted(p.name for p in artifacts.iterdir() if not p.name.startswith("."))
    # one per job (v4 refuses a second upload of one name); the existing-cluster job's args (its probe image) make its
    # default name carry their digest's first 8 characters (kpr.yml)
    assert names[0] == "kpr-fake-1.20.5-dsr" and re.fullmatch(r"kpr-fake-default-[0-9a-f]{8}", names[1]), names
    for name in names:
        (results_json,) = (artifacts / name).rglob("results.json")
        run = json.loads(results_json.read_text())["run"]
        assert run["complete"] and run["exit_status"] == 0, (name, run)
        facts = json.loads((results_json.parent / "cluster.json").read_text())
        assert facts["provider"] == "fake" and results_json.parent.parent.name == name
        assert not list((artifacts / name).rglob("kubeconfig")), "no credentials in the evidence"
    assert text.count("::set-output:: exit-status=0") == 2, "the workflow's exit-status output, for each call"

