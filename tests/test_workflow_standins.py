"""The stand-ins make test-workflows runs the workflows with (tests/workflows/): every action a workflow uses has one,
and the artifact stand-ins keep upload-artifact v4's rules (a second upload of one name fails; hidden files are left
out), so a workflow that breaks them under act would break on GitHub. Fast: no act here (make test-workflows runs it)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
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


runner_image = harness.runner_image  # tests/workflows/runner_image.py
NEEDS_ROOT_AND_SUDO = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("sudo"),
                                         reason="creates a user and runs Debian's sudo: root, with sudo installed "
                                                "(make test-workflows installs it)")


def as_user(runner: object, argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=runner.env(env or {"PATH": "/usr/bin:/bin"}), user=runner.uid, group=runner.gid,  # type: ignore[attr-defined]
                          extra_groups=[], capture_output=True, text=True, timeout=60, cwd="/")


@NEEDS_ROOT_AND_SUDO
def test_the_jobs_run_as_a_user_that_is_not_root_with_a_sudo_as_a_runners(tmp_path: Path) -> None:
    """runner_user: a user of its own (not root, its own group only) whose sudo is passwordless, resets the environment
    and sets Ubuntu's secure_path, as on a GitHub runner; user and sudoers drop-in are gone afterwards."""
    tmp_path.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    with runner_image.runner_user(work) as runner:
        assert runner.name == f"kpr-act-{os.getpid()}" and runner.uid != 0
        me = as_user(runner, ["id", "-u"])
        assert me.stdout.strip() == str(runner.uid)
        root = as_user(runner, ["sudo", "-n", "env"], {"PATH": "/opt/setup-python/bin:/usr/bin:/bin", "SECRET": "x"})
        assert root.returncode == 0, root.stderr
        lines = root.stdout.splitlines()
        assert "SECRET=x" not in lines and f"PATH={runner_image.SECURE_PATH}" in lines and "HOME=/root" in lines
        kept = as_user(runner, ["sudo", "-n", "env", "PATH=/opt/setup-python/bin:/usr/bin", "id", "-u"])
        assert kept.stdout.strip() == "0", kept.stderr  # the workflows' `sudo env "PATH=$PATH" ...` lines
        assert (runner_image.SUDOERS_D / runner.name).stat().st_mode & 0o777 == 0o440
    assert runner.name not in {u.pw_name for u in pwd.getpwall()}
    assert not (runner_image.SUDOERS_D / runner.name).exists()


@NEEDS_ROOT_AND_SUDO
def test_kpr_with_net_raw_gives_the_runner_user_the_two_capabilities_through_sudo_and_setpriv(tmp_path: Path) -> None:
    """kpr.yml runs `kpr with-net-raw pytest ...` as the runner: not root, so through sudo and setpriv (the path the
    workflows take on GitHub), and the command runs as the runner with CAP_NET_RAW and CAP_NET_ADMIN."""
    tmp_path.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    check = ("import os, socket\n"
             "socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP).close()\n"
             "eff = int(next(l for l in open('/proc/self/status') if l.startswith('CapEff:')).split()[1], 16)\n"
             "print(os.getuid(), 'admin' if eff >> 12 & 1 else 'no-admin')")
    # this checkout's package through the system's Python: the virtualenv's interpreter may live under root's home
    site = next((REPO / ".venv" / "lib").glob("python3*/site-packages"), None)
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if site is None or not Path(python).exists():
        pytest.skip(f"needs {python} and the checkout's .venv (make venv)")
    with runner_image.runner_user(work) as runner:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO}:{site}"}
        r = as_user(runner, [python, "-m", "pytest_kpr", "with-net-raw", python, "-c", check], env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [str(runner.uid), "admin"]


@NEEDS_ROOT_AND_SUDO
def test_a_dead_runs_runner_user_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"{runner_image.PREFIX}{dead.pid}"
    subprocess.run(["useradd", "--no-create-home", "--user-group", name], check=True)
    (runner_image.SUDOERS_D / name).write_text(runner_image.sudoers(name, dead.pid))
    tmp_path.chmod(0o755)
    (tmp_path / "work").mkdir()
    try:
        with runner_image.runner_user(tmp_path / "work") as mine:  # removes dead runs' users first
            users = {u.pw_name for u in pwd.getpwall()}
            assert name not in users and mine.name in users
            assert not (runner_image.SUDOERS_D / name).exists()
            assert runner_image.remove_dead_users() == []  # this run's user is alive
    finally:
        runner_image.remove_user(name)


WS = "/tmp/kpr-act-1-x/selftest-make-test/act-cache/3e68/hostexecutor"


@pytest.mark.parametrize(("log", "only_cleanup"), [
    # act 0.2.89 as the runner user, after `sudo make test` wrote __pycache__ in the job's workspace: the job succeeded
    (f"[self-tests/make-test] Error while stop job container: unlinkat {WS}/suites/__pycache__/t.pyc: permission denied\n"
     "[self-tests/make-test]   ✅  Success - Complete job\n[self-tests/make-test] 🏁  Job succeeded\n"
     f"Error: Error occurred running finally: Error occurred running finally: unlinkat {WS}/x.pyc: permission denied "
     "(original error: <nil>) (original error: <nil>)\n", True),
    (f"[j] Error while stop job container: unlinkat /home/other/x: permission denied\n", False),  # not the run's own
    (f"[j] Error while stop job container: unlinkat {WS}/x: permission denied\nError: exit status 2\n", False),  # a real error
    ("[j]   | Error: a step's own output\n", False),  # no act error at all: act's status is not explained
])
def test_only_acts_removal_of_roots_files_in_the_jobs_workspace_is_forgiven(log: str, only_cleanup: bool) -> None:
    assert harness.root_files_left_only(log, Path("/tmp/kpr-act-1-x")) is only_cleanup


@pytest.mark.parametrize(("log", "errors"), [
    ("[w/matrix]   ✅  Success - Complete job\n[w/matrix] 🏁  Job succeeded\n", []),
    ('time="2026-12-07T12:57:23Z" level=warning msg="Couldn\'t get a valid docker connection"\n'
     'time="2026-12-07T12:57:30Z" level=error msg="Error while evaluating matrix: Invalid JSON"\n'
     "[w/kernel]   | Error: a step's own output\nError: Job 'kernel' failed\n",
     ['time="2026-12-07T12:57:30Z" level=error msg="Error while evaluating matrix: Invalid JSON"', "Error: Job 'kernel' failed"]),
    ("".join(f"Error: {i}\n" for i in range(8)), [f"Error: {i}" for i in range(3, 8)]),  # the last five
])
def test_why_a_job_did_not_run_is_acts_own_error_lines(log: str, errors: list[str]) -> None:
    assert harness.act_errors(log) == errors


def test_a_job_that_did_not_run_is_reported_with_acts_status_and_errors(tmp_path: Path) -> None:
    """The line CI prints names why: act's exit status and its error lines (the log stays on the machine)."""
    log = tmp_path / "docs.log"
    log.write_text('[docs/build] 🏁  Job succeeded\ntime="t" level=error msg="Error while evaluating matrix"\n')
    failed = harness.check(harness.Plan("docs.yml", "push", {}, jobs=["deploy"]), 1, {"docs/build": "succeeded"}, log, tmp_path)
    assert failed == [f'docs.yml deploy: did not run (act exited 1: time="t" level=error msg="Error while evaluating matrix"; log: {log})']


@pytest.mark.parametrize(("text", "names"), [
    ("apt-get install -y -qq --no-install-recommends a b >/dev/null", ["a", "b"]),
    ("sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\\n  c d\nsudo kvm-ok", ["c", "d"]),
    ('apt-get install -y "linux-tools-$$(uname -r)" >/dev/null 2>&1 || apt-get install -y e', ["linux-tools-$(uname -r)", "e"]),
    ("apt-get update -qq && apt-get install -y $$missing >/dev/null", []),
    ("apt-get -q install f; echo install g", ["f"]),
    ("apt-get download linux-image-6.1", []),  # not an install
    ("apt-get install -y $(QEMU_DEBS)", ["q1", "q2"]),
    ("apt-get install -y --no-install-recommends $(2) >/dev/null", []),  # a macro's argument: read at its calls
])
def test_the_apt_get_install_names_are_read_from_shell_and_make(text: str, names: list[str]) -> None:
    assert runner_image.names_in(text, {"QEMU_DEBS": ["q1", "q2"]}) == names


def test_the_makefiles_install_macro_is_read_at_its_calls() -> None:
    names = runner_image.installed_names()
    assert names["sudo"] == ["Makefile install_when_missing"] and "chromium" in names and "$(2)" not in names


def apt_repo(tmp_path: Path, makefile: str, script: str = "") -> Path:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "w.yml").write_text("jobs:\n  j:\n    steps:\n      - run: sudo apt-get install -y wf-name\n")
    (tmp_path / "Makefile").write_text(makefile)
    (tmp_path / ".github" / "deps.sh").write_text(script)
    return tmp_path


RECORD = """read: 2026-12-07
sources: {s: "a source"}
packages:
  ok: {source: s, line: "| ok | 1 |"}
  wf-name: {source: s, line: "| wf-name | 1 |"}
  gone: {absent: "renamed gone2"}
  maybe: {unverified: "not read"}
  noline: {source: s}
"""


@pytest.mark.parametrize(("makefile", "script", "problem", "unverified"), [
    ("X_DEBS := ok\n", "", None, []),
    ("X_DEBS := ok maybe\n", "", None, ["maybe"]),
    ("X_DEBS := ok\n", "apt-get install -y newname\n", "apt-get installs newname (.github/deps.sh), which", []),
    ("X_DEBS := ok gone\n", "", "apt-get installs gone, which Ubuntu 24.04 does not have (renamed gone2)", []),
    ("X_DEBS := noline\n", "", "its record names no known source and line", []),
])
def test_every_apt_name_must_be_recorded_for_ubuntu_24_04(tmp_path: Path, makefile: str, script: str, problem: str | None,
                                                          unverified: list[str]) -> None:
    (tmp_path / "record.yaml").write_text(RECORD)
    check = runner_image.apt_check(apt_repo(tmp_path / "repo", makefile, script), tmp_path / "record.yaml")
    problems = check.problems()
    assert (problem is None and problems == []) or (problem is not None and any(problem in p for p in problems)), problems
    assert sorted(check.unverified) == unverified and check.read == "2026-12-07"


def test_this_repositorys_apt_names_are_all_recorded_for_ubuntu_24_04() -> None:
    """Every name the Makefile, the runner-side scripts and the workflows install is in ubuntu-24.04-packages.yaml
    with a source and a line (or unverified, with why): none the record says 24.04 lacks."""
    check = runner_image.apt_check()
    assert check.problems() == [] and check.checked >= 20
    assert "libpcap0.8" not in runner_image.installed_names(), "24.04 has libpcap0.8t64 only; nothing here needs libpcap"


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
