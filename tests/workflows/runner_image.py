"""What the act tier makes of a GitHub-hosted ``ubuntu-24.04`` runner on this Debian machine, and what it cannot.

* **The runner user.** GitHub runs a job's steps as ``runner``, a user that is not root, with a passwordless ``sudo``
  whose environment is reset and whose PATH is its ``secure_path``. :func:`runner_user` creates such a user for one
  tier run (``kpr-act-<pid>``, a home under the run's work directory, a drop-in under /etc/sudoers.d of the same name
  that Debian's real ``sudo`` reads), and removes both at the end; users of dead runs are removed first. So the steps'
  own ``sudo`` lines, ``kpr with-net-raw``'s ``sudo`` + ``setpriv`` path and files written as root in a checkout the
  runner owns are exercised as on GitHub.
* **Ubuntu's package names.** This machine installs Debian's packages, so an ``apt-get install`` name that Ubuntu 24.04
  lacks would pass here and fail on GitHub. :func:`apt_problems` reads every name the runner side installs (the
  Makefile, .github/lvh/runner-deps.sh, the workflows' ``run:`` steps) and checks it against
  ``ubuntu-24.04-packages.yaml``: each name with the source it was read from and the date, or marked unverified with
  the reason. A name not recorded fails the tier; an unverified one is named in the tier's summary.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

REPO = Path(__file__).resolve().parents[2]
RECORD = Path(__file__).resolve().parent / "ubuntu-24.04-packages.yaml"
PREFIX = "kpr-act-"
SUDOERS_D = Path("/etc/sudoers.d")
#: Ubuntu's /etc/sudoers secure_path (Debian's lacks /snap/bin)
SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"

#: files whose apt-get lines do not run on the runner: (path, why)
NOT_ON_THE_RUNNER = {
    ".github/lvh/kpr-in-vm.sh": "runs as root inside the little-vm-helper VM image, not on the runner",
    "clusters/images/probe/Dockerfile": "runs in the probe image's build, on its own base image",
}


# ---- the runner user ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Runner:
    """The user the jobs run as."""

    name: str
    uid: int
    gid: int
    home: Path

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` as this user's login would have it (HOME, USER, LOGNAME)."""
        return {**env, "HOME": str(self.home), "USER": self.name, "LOGNAME": self.name}

    def own(self, *paths: Path) -> None:
        """Hand ``paths`` (each tree) to this user, as a runner owns its work directories."""
        for p in paths:
            subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(p)], check=True)


def sudoers(name: str, pid: int) -> str:
    """The sudoers drop-in of the runner user ``name``: passwordless, for every command, with Ubuntu's secure_path
    (env_reset and use_pty are Debian's and Ubuntu's defaults already)."""
    return (f"# pytest-kpr's act tier (tests/workflows/runner_image.py), run {pid}: removed at its end\n"
            f'Defaults:{name} secure_path="{SECURE_PATH}"\n'
            f"{name} ALL=(ALL) NOPASSWD:ALL\n")


def remove_user(name: str) -> None:
    """Remove the runner user ``name`` and its sudoers drop-in (only a name this module gives)."""
    assert re.fullmatch(rf"{PREFIX}\d+", name), name
    (SUDOERS_D / name).unlink(missing_ok=True)
    with contextlib.suppress(KeyError):
        pwd.getpwnam(name)
        subprocess.run(["userdel", "--force", name], capture_output=True, check=False)


def remove_dead_users() -> list[str]:
    """Runner users (and drop-ins) of tier runs whose process has ended; the names removed."""
    names = {u.pw_name for u in pwd.getpwall() if u.pw_name.startswith(PREFIX)}
    names |= {p.name for p in SUDOERS_D.glob(f"{PREFIX}*")} if SUDOERS_D.is_dir() else set()
    gone = []
    for name in sorted(names):
        m = re.fullmatch(rf"{PREFIX}(\d+)", name)
        if m and not Path(f"/proc/{m[1]}").exists():
            remove_user(name)
            gone.append(name)
    return gone


@contextlib.contextmanager
def runner_user(work: Path, pid: int | None = None) -> Iterator[Runner]:
    """A user as GitHub's ``runner`` for this process's tier run, its home ``work/home``; removed afterwards, also on
    failure and Ctrl-C."""
    if os.geteuid() != 0:
        raise SystemExit("test-workflows: runs as root (it creates the runner user the jobs run as)")
    if shutil.which("sudo") is None or shutil.which("visudo") is None:
        raise SystemExit("test-workflows: sudo is not installed (make test-workflows installs Debian's sudo as root)")
    pid = os.getpid() if pid is None else pid
    name = f"{PREFIX}{pid}"
    home = work / "home"
    remove_dead_users()
    try:
        subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash", "--user-group",
                        "--comment", f"pytest-kpr act tier run {pid}", name], check=True, capture_output=True, text=True)
        with tempfile.NamedTemporaryFile("w", dir=SUDOERS_D, prefix=".kpr-", delete=False) as f:  # no dot: sudo skips it
            f.write(sudoers(name, pid))
        os.chmod(f.name, 0o440)
        check = subprocess.run(["visudo", "-c", "-q", "-f", f.name], capture_output=True, text=True)
        if check.returncode != 0:
            os.unlink(f.name)
            raise SystemExit(f"test-workflows: the runner user's sudoers drop-in is refused: {check.stderr.strip()}")
        os.replace(f.name, SUDOERS_D / name)
        u = pwd.getpwnam(name)
        runner = Runner(name, u.pw_uid, u.pw_gid, home)
        work.chmod(0o755)  # the user reaches its home; the rest it is handed (Runner.own)
        yield runner
    finally:
        remove_user(name)


# ---- Ubuntu's package names ---------------------------------------------------------------------------------------

APT_INSTALL = re.compile(r"\bapt-get\s+(?:[^\n;|&]*?\s)?install\s+(?P<args>(?:[^\n;|&\\]|\\\n)*)")


def names_in(text: str, variables: dict[str, list[str]] | None = None) -> list[str]:
    """The package names of every ``apt-get install`` in shell ``text`` (continued lines joined; options, redirections,
    shell variables and quotes left out; ``$$`` of a Makefile read as ``$``). A ``$(NAME)`` make variable is expanded
    from ``variables``."""
    out = []
    for m in APT_INSTALL.finditer(text.replace("\\\n", " ")):
        args = m["args"].replace("$$", "$")
        for name, value in (variables or {}).items():
            args = args.replace(f"$({name})", " ".join(value))
        try:
            words = shlex.split(args, comments=False)
        except ValueError:
            words = args.split()
        for w in words:
            if w.startswith(("-", "$")) or re.match(r"^\d*[<>]", w):  # options, redirections, shell and macro arguments
                continue
            if w in ("||", "&&"):
                break
            out.append(w)
    return out


def make_variables(makefile: str) -> dict[str, list[str]]:
    """The Makefile's package lists (``*_DEBS :=``)."""
    return {m[1]: m[2].split() for m in re.finditer(r"^(\w+_DEBS)\s*:?=\s*(.*)$", makefile, re.M)}


def installed_names(repo: Path = REPO) -> dict[str, list[str]]:
    """Every package name the runner side installs with apt-get -> the files that do."""
    found: dict[str, list[str]] = {}

    def add(names: list[str], where: str) -> None:
        for n in names:
            found.setdefault(n, [])
            if where not in found[n]:
                found[n].append(where)

    makefile = (repo / "Makefile").read_text()
    lists = make_variables(makefile)
    for var, names in lists.items():  # installed by their target's loop (apt-get install ... $$missing)
        add(names, f"Makefile {var}")
    add(names_in(makefile, lists), "Makefile")
    for m in re.finditer(r"^\t\$\(call install_when_missing,[^,]*,([^,]*),", makefile, re.M):  # the Makefile's install macro
        add(m[1].split(), "Makefile install_when_missing")
    for sh in sorted((repo / ".github").rglob("*.sh")):
        rel = str(sh.relative_to(repo))
        if rel not in NOT_ON_THE_RUNNER:
            add(names_in(sh.read_text()), rel)
    for wf in sorted((repo / ".github" / "workflows").glob("*.yml")):
        data = yaml.safe_load(wf.read_text()) or {}
        for job in (data.get("jobs") or {}).values():
            for step in job.get("steps") or []:
                if isinstance(step.get("run"), str):
                    add(names_in(step["run"]), str(wf.relative_to(repo)))
    return found


@dataclass
class AptCheck:
    """What the record says of the names the runner side installs."""

    checked: int
    read: str
    missing: dict[str, list[str]]  # not recorded: name -> where installed (fails the tier)
    absent: dict[str, str]  # recorded as not in Ubuntu 24.04: name -> the record's words (fails the tier)
    unverified: dict[str, str]  # recorded without a source: name -> why (named in the summary)

    def problems(self) -> list[str]:
        return ([f"apt-get installs {n} ({', '.join(w)}), which {RECORD.name} does not record: read it in Ubuntu "
                 f"24.04's package lists and add it with its source and date" for n, w in sorted(self.missing.items())] +
                [f"apt-get installs {n}, which Ubuntu 24.04 does not have ({why})" for n, why in sorted(self.absent.items())])


def apt_check(repo: Path = REPO, record: Path = RECORD) -> AptCheck:
    data = yaml.safe_load(record.read_text())
    sources, packages = data["sources"], data["packages"]
    names = installed_names(repo)
    missing, absent, unverified = {}, {}, {}
    for name, where in names.items():
        entry = packages.get(name)
        if entry is None:
            missing[name] = where
        elif "absent" in entry:
            absent[name] = entry["absent"]
        elif "unverified" in entry:
            unverified[name] = entry["unverified"]
        elif entry.get("source") not in sources or not entry.get("line"):
            missing[name] = [*where, f"its record names no known source and line: {entry}"]
    return AptCheck(len(names), str(data["read"]), missing, absent, unverified)
