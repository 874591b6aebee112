"""make test-kernels' runner (scripts/kernel_cells.py) with a stand-in qemu: a VM that never boots is a clear failure
with its console's tail, never a hang, and Ctrl-C leaves no VM and no files behind. (The real kernels are booted by
`make test-kernels` itself.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ctrl_c_as_from_a_terminal

REPO = Path(__file__).resolve().parent.parent
KERNEL = "6.1.0-50-amd64"
pytestmark = pytest.mark.netns  # root only, like the tier whose runner it is

QEMU = """#!/bin/sh
echo $$ >> "{pids}"
for a in "$@"; do case "$a" in file:*) console="${{a#file:}}";; esac; done
echo "SeaBIOS (stand-in): booting nothing" > "$console"
exec sleep 300
"""


@pytest.fixture
def stand_in(tmp_path: Path) -> dict[str, Path]:
    if os.geteuid() != 0:
        pytest.skip("the kernel cells run as root")
    bin_dir, cache = tmp_path / "bin", tmp_path / "cache"
    bin_dir.mkdir()
    pids = tmp_path / "qemu.pids"
    (bin_dir / "qemu-system-x86_64").write_text(QEMU.format(pids=pids))
    (bin_dir / "busybox").write_text("#!/bin/sh\n")
    (bin_dir / "depmod").write_text("#!/bin/sh\n")  # kmod's, which only make test-kernels installs: a fresh machine has none
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    (cache / KERNEL / "boot").mkdir(parents=True)
    (cache / KERNEL / "boot" / f"vmlinuz-{KERNEL}").write_bytes(b"")
    (cache / KERNEL / "lib" / "modules" / KERNEL).mkdir(parents=True)
    (cache / KERNEL / "lib" / "modules" / KERNEL / "modules.dep").write_text("")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return {"bin": bin_dir, "cache": cache, "pids": pids, "tmp": tmp, "artifacts": tmp_path / "artifacts"}


def start(s: dict[str, Path], boot_timeout: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PATH": f"{s['bin']}:{os.environ['PATH']}", "TMPDIR": str(s["tmp"])}
    return subprocess.Popen([sys.executable, str(REPO / "scripts" / "kernel_cells.py"), "--kernel", KERNEL, "--no-host", "--cache", str(s["cache"]),
                             "--artifacts", str(s["artifacts"]), "--boot-timeout", str(boot_timeout)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_as_from_a_terminal)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_vm_that_does_not_boot_is_a_clear_failure_with_its_console(stand_in: dict[str, Path]) -> None:
    p = start(stand_in, boot_timeout=2)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1, (out, err)
    assert f"[kernels] {KERNEL}: did not boot within 2 s" in err and "SeaBIOS (stand-in): booting nothing" in err
    assert f"| {KERNEL} | qemu |" in out
    (pid,) = [int(x) for x in stand_in["pids"].read_text().split()]
    assert not alive(pid), "the VM was killed"
    assert not list(stand_in["tmp"].iterdir()), "the run's files are gone"


def test_ctrl_c_stops_the_vm_and_removes_the_runs_files(stand_in: dict[str, Path]) -> None:
    p = start(stand_in, boot_timeout=120)
    try:
        deadline = time.monotonic() + 30
        while not (stand_in["pids"].exists() and stand_in["pids"].read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        (pid,) = [int(x) for x in stand_in["pids"].read_text().split()]
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130 and "interrupted: stopping the VMs" in err
    assert not alive(pid)
    assert not list(stand_in["tmp"].iterdir())


def test_a_cells_failures_are_printed_with_their_messages_from_the_junit_file(tmp_path: Path) -> None:
    """The CI log keeps what failed in a cell and why (the cell's own files are removed with it): each failed or
    erroring test with the first lines of its message, long lines cut."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import kernel_cells
    finally:
        sys.path.remove(str(REPO / "scripts"))
    junit = tmp_path / "junit.xml"
    junit.write_text("""<testsuites><testsuite tests="3" failures="1" errors="1" skipped="0">
<testcase classname="tests.test_realkernel_flow" name="test_a_drop"><failure message="AssertionError: {&quot;gaps&quot;: []}&#10;assert 0 == 1&#10;3&#10;4&#10;5&#10;6&#10;7">trace</failure></testcase>
<testcase classname="tests.test_x" name="test_fixture"><error message="setup: no such file">trace</error></testcase>
<testcase classname="tests.test_x" name="test_ok"/>
</testsuite></testsuites>""")
    got = kernel_cells.failures(junit, lines=6, width=20)
    assert got == [{"test": "tests.test_realkernel_flow::test_a_drop", "message": "AssertionError: {\"ga ...\nassert 0 == 1\n3\n4\n5\n6"},
                   {"test": "tests.test_x::test_fixture", "message": "setup: no such file"}]


def test_a_dead_runs_work_directory_is_removed_and_a_live_ones_is_kept(tmp_path: Path) -> None:
    """A run killed outright leaves kpr-kernels-<pid>-*; the next run removes it when that PID is gone, never a live one's."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import kernel_cells
    finally:
        sys.path.remove(str(REPO / "scripts"))
    p = subprocess.Popen(["true"])
    p.wait()  # a PID that was used and is gone now (reaped)
    dead = tmp_path / f"kpr-kernels-{p.pid}-abc"
    live = tmp_path / f"kpr-kernels-{os.getpid()}-def"
    for d in (dead, live):
        (d / "6.1.0-50-amd64").mkdir(parents=True)
    (tmp_path / "kpr-kernels-notapid-x").mkdir()
    assert kernel_cells.remove_stale_work(tmp_path) == [dead]
    assert not dead.exists() and live.exists() and (tmp_path / "kpr-kernels-notapid-x").exists()


def test_every_kernel_comes_from_debians_archive_verified_with_debians_keyring(tmp_path: Path) -> None:
    """On any host (a GitHub runner is Ubuntu, whose archive has no Debian kernels): each kernel names its Debian
    release, and the private apt sources trust Debian's archive keyring alone (make qemu-deps installs it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    try:
        import kernel_cells
    finally:
        sys.path.pop(0)
    assert set(kernel_cells.KERNELS) <= set(kernel_cells.RELEASE)
    opts = kernel_cells.private_apt(tmp_path, "bookworm")
    sources = (tmp_path / ".apt-bookworm" / "sources.list").read_text().splitlines()
    assert sources and all(s.startswith(f"deb [signed-by={kernel_cells.DEBIAN_KEYRING}] http://deb.debian.org/") for s in sources)
    assert "Dir::Etc::sourceparts=/dev/null" in opts, "the host's own sources are not read"
    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    assert "debian-archive-keyring" in next(line for line in makefile.splitlines() if line.startswith("QEMU_DEBS"))


#: netns tests that test pytest-kpr, not the kernel: make test runs them on the host, the kernel cells do not
#: test_bpf_lb_maps.py: an LPM trie, BPF_PROG_TEST_RUN and an LRU hash dumped by bpftool, alike on every kernel the project supports
NOT_KERNEL_DEPENDENT = {"test_bpf_lb_maps.py", "test_ci_gate.py", "test_kernel_cells.py", "test_netns_outside_route.py",
                        "test_netns_cleanup_routes.py", "test_netns_silent_apiserver.py",
                        "test_netns_topology.py", "test_runs_isolated.py"}


def test_the_cells_run_the_tests_whose_outcome_depends_on_the_kernel() -> None:
    """Each cell runs the files that mark tests kernel_dependent, selected by that mark (under TCG every other file only
    costs minutes); a new real-kernel file is classified one way or the other, never left out by accident."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import kernel_cells
    finally:
        sys.path.remove(str(REPO / "scripts"))
    cells = {Path(f).name for f in kernel_cells.kernel_dependent_files()}
    netns = {p.name for p in (REPO / "tests").glob("test_*.py") if "mark.netns" in p.read_text()}
    assert {p.name for p in (REPO / "tests").glob("test_realkernel_*.py")} <= cells
    assert netns - cells == NOT_KERNEL_DEPENDENT, "classify each real-kernel test file: kernel_dependent, or NOT_KERNEL_DEPENDENT"
    assert kernel_cells.MARKS == "netns and kernel_dependent" and "-m {marks} {tests}" in kernel_cells.STAGE2
