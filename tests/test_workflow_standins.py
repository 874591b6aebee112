"""The stand-ins make test-workflows runs the workflows with (tests/workflows/): every action a workflow uses has one,
and the artifact stand-ins keep upload-artifact v4's rules (a second upload of one name fails; hidden files are left
out), so a workflow that breaks them under act would break on GitHub. Fast: no act here (make test-workflows runs it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import workflow_harness

REPO = Path(__file__).resolve().parent.parent
STANDINS = REPO / "tests" / "workflows" / "standins"
harness = workflow_harness()  # tests/workflows/run.py


def sh(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {"PATH": os.environ["PATH"], "KPR_ACT_ARTIFACTS": str(tmp_path / "arts"), "GITHUB_WORKSPACE": str(tmp_path / "ws"),
            "GITHUB_OUTPUT": str(tmp_path / "out"), **env}
    return subprocess.run(["bash", str(STANDINS / script)], env=full, capture_output=True, text=True, timeout=60)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "arts").mkdir()
    d = tmp_path / "ws" / "kpr-artifacts" / "cell" / "fake"
    d.mkdir(parents=True)
    (d / "results.json").write_text("{}")
    (tmp_path / "ws" / "kpr-artifacts" / "cell" / ".kind").mkdir()
    (tmp_path / "ws" / "kpr-artifacts" / "cell" / ".kind" / "kubeconfig").write_text("secret")
    return tmp_path


def test_every_action_the_workflows_use_has_a_stand_in() -> None:
    mapped = harness.action_map()
    assert mapped and all((d / "action.yml").is_file() for d in mapped.values())
    assert {a.split("@")[0] for a in mapped} >= {"actions/checkout", "actions/upload-artifact", "cilium/little-vm-helper"}


def test_a_second_upload_of_one_name_fails_as_v4_does_and_hidden_files_stay_out(ws: Path) -> None:
    first = sh("upload.sh", ws, NAME="kpr-x", PATHS="kpr-artifacts/")
    assert first.returncode == 0, first.stderr
    assert (ws / "arts" / "kpr-x" / "cell" / "fake" / "results.json").is_file()
    assert not (ws / "arts" / "kpr-x" / "cell" / ".kind").exists(), "hidden files are not uploaded (v4.4+)"
    second = sh("upload.sh", ws, NAME="kpr-x", PATHS="kpr-artifacts/")
    assert second.returncode == 1 and "(409) Conflict" in second.stderr
    assert sh("upload.sh", ws, NAME="kpr-x", PATHS="kpr-artifacts/", OVERWRITE="true").returncode == 0
    assert sh("upload.sh", ws, NAME="a/b", PATHS="kpr-artifacts/").returncode == 1


def test_no_files_follows_if_no_files_found(ws: Path) -> None:
    assert sh("upload.sh", ws, NAME="none", PATHS="nothing/", IF_NONE="warn").returncode == 0
    assert not (ws / "arts" / "none").exists()
    assert sh("upload.sh", ws, NAME="none", PATHS="nothing/", IF_NONE="error").returncode == 1


def test_download_by_pattern_puts_each_artifact_in_its_own_directory(ws: Path) -> None:
    for name in ("kpr-a", "kpr-b", "other"):
        assert sh("upload.sh", ws, NAME=name, PATHS="kpr-artifacts/").returncode == 0
    assert sh("download.sh", ws, PATTERN="kpr-*", DEST="cells").returncode == 0
    assert sorted(p.name for p in (ws / "ws" / "cells").iterdir()) == ["kpr-a", "kpr-b"]
    missing = sh("download.sh", ws, NAME="nope", DEST="x")
    assert missing.returncode == 1 and "Artifact not found for name: nope" in missing.stderr


def test_sudo_resets_the_environment_as_a_runners_does(tmp_path: Path) -> None:
    r = subprocess.run([str(STANDINS / "bin" / "sudo"), "env"], env={"PATH": "/tmp/venv/bin:/usr/bin:/bin", "SECRET": "x", "HOME": "/root"},
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "SECRET=" not in r.stdout
    assert "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin" in r.stdout.splitlines()


def test_the_plan_names_every_workflow_and_what_cannot_run_here() -> None:
    planned = {p.workflow for p in harness.plans({})} | {"kpr.yml"}  # kpr.yml: called by the others and the outside caller
    assert planned == {p.name for p in (REPO / ".github" / "workflows").glob("*.yml")}
    assert all(why for why in harness.STEPS_NOT_RUN.values())
    skipping = harness.plans({"KPR_SKIP_KERNELS": "1"})[0]
    assert "kernels" not in skipping.jobs and "KPR_SKIP_KERNELS" in skipping.skipped["kernels"]


@pytest.mark.parametrize(("job", "labels", "mine"), [
    ("matrix", ["kpr-on-kind/matrix", "cilium-1/kpr-cell/kpr"], ["kpr-on-kind/matrix"]),
    ("cilium", ["cilium-1/kpr-cell/kpr", "cilium-2/kpr-cell/kpr", "kpr-on-kind/matrix"], ["cilium-1/kpr-cell/kpr", "cilium-2/kpr-cell/kpr"]),
    ("report", ["kpr-on-kind/report    ", "kpr-on-kind/matrix"], ["kpr-on-kind/report    "]),
    ("kernel", ["kpr-kernels/kernel-3", "kpr-kernels/kernels"], ["kpr-kernels/kernel-3"]),
    ("probe-image", ["probe-image/probe-image/publish", "publish/version"], ["probe-image/probe-image/publish"]),
    ("upgrade", ["kpr-upgrade/matrix"], []),
])
def test_a_job_is_found_by_the_labels_act_gives_its_runs(job: str, labels: list[str], mine: list[str]) -> None:
    assert harness.ran(job, dict.fromkeys(labels, "succeeded")) == mine


def test_an_interrupted_act_leaves_no_process_behind(tmp_path: Path) -> None:
    """act runs each step in a session of its own: stopping act's process group would orphan a step's processes (make,
    qemu). The harness stops act's whole tree, and only that."""
    import time

    p = subprocess.Popen(["bash", "-c", f"setsid sleep 300 & sleep 300 & echo $! > {tmp_path / 'pid'}; wait"], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(harness.descendants(p.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    tree = harness.descendants(p.pid)
    assert len(tree) >= 2
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        harness.stop_tree(p)
        assert p.poll() is not None and not [pid for pid in tree if harness.alive(pid)]
        assert bystander.poll() is None, "a process outside act's tree is left alone"
    finally:
        bystander.kill()
        bystander.wait()


def test_the_jobs_get_a_fresh_runners_environment_not_this_shells_settings() -> None:
    env = harness.runner_env({"PATH": "/usr/bin", "KPR_REQUIRE_NETNS": "1", "KPR_SKIP_KERNELS": "1", "VIRTUAL_ENV": "/v", "HOME": "/root"})
    assert env == {"PATH": "/usr/bin", "HOME": "/root"}
