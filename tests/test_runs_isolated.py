"""Runs sharing a machine never touch each other: ownership in names, cleanup of dead runs only."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import ownership
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _dead_owner() -> str:
    """The owner tag of a process that has exited."""
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    tag = ownership.owner_tag(p.pid)
    p.communicate(b"")
    return tag


@pytest.mark.parametrize(("obj", "owner"), [
    ("kprt-123.456-client-abcdef", (123, "456")),
    ("kprt-1.0-socklb-00", (1, "0")),
    ("kprt-client-abcdef", None),            # the names of earlier versions carry no owner: never judged
    ("kprt-12-client-abcdef", None),
    ("kprtx-123.456-client-ab", None),
    ("cilium-123.456-x", None),
])
def test_owner_is_read_from_the_name(obj: str, owner: tuple[int, str] | None) -> None:
    assert ownership.owner(obj) == owner


def test_own_names_are_mine_and_not_orphaned() -> None:
    name = ownership.name("client", "abc")
    assert ownership.mine(name)
    assert not ownership.orphaned(name)


def test_a_dead_owner_is_orphaned_and_not_mine() -> None:
    name = f"kprt-{_dead_owner()}-client-abc"
    assert ownership.orphaned(name)
    assert not ownership.mine(name)


def test_a_reused_pid_is_not_the_owner() -> None:
    """Same PID, other start time: the process that made the object is gone."""
    name = f"kprt-{os.getpid()}.1-client-abc"
    assert ownership.orphaned(name)
    assert not ownership.mine(name)


def test_a_live_owner_is_neither_orphaned_nor_mine() -> None:
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as p:
        name = f"kprt-{ownership.owner_tag(p.pid)}-client-abc"
        try:
            assert not ownership.orphaned(name)
            assert not ownership.mine(name)
        finally:
            p.communicate(b"")


def test_names_without_an_owner_are_never_orphaned() -> None:
    assert not ownership.orphaned("kprt-client-abcdef")
    assert not ownership.orphaned("something-else")


@pytest.mark.netns
def test_stale_cleanup_removes_a_dead_runs_objects_and_keeps_a_live_runs(tmp_path: Path) -> None:
    from netns import can_use_netns, sh
    from realkernel import cgroup2_root, leftovers, remove_stale

    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    root = cgroup2_root()
    suffix = secrets.token_hex(3)
    dead_ns = f"kprt-{_dead_owner()}-client-{suffix}"
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    live_ns = f"kprt-{ownership.owner_tag(live.pid)}-client-{suffix}"
    dead_cg = root / f"kprt-{_dead_owner()}-socklb-{suffix}" if root else None
    live_cg = root / f"kprt-{ownership.owner_tag(live.pid)}-socklb-{suffix}" if root else None
    try:
        sh("ip", "netns", "add", dead_ns)
        sh("ip", "netns", "add", live_ns)
        for cg in (dead_cg, live_cg):
            if cg is not None:
                cg.mkdir()
        assert not any(suffix in item for item in leftovers()), "another owner's objects are not this run's leak"
        removed = remove_stale()
        # Another run's cleanup on this machine (a CI job beside this one, an xdist worker starting) is the same code and
        # may remove the dead run's objects first: "removed by this call" is then "already gone", never "still there".
        assert f"netns {live_ns}" not in removed
        names = sh("ip", "netns", "list").stdout
        assert dead_ns not in names, "a SIGKILLed run's namespace must be removed by the next run"
        assert live_ns in names, "a live run's namespace must never be removed"
        if root is not None:
            assert dead_cg is not None and live_cg is not None
            assert not dead_cg.exists(), f"a dead run's socklb cgroup must be removed (this cleanup removed {removed})"
            assert live_cg.exists(), "a live run's cgroup must never be removed"
    finally:
        live.communicate(b"")
        for ns in (dead_ns, live_ns):
            sh("ip", "netns", "del", ns, check=False)
        for cg in (dead_cg, live_cg):
            if cg is not None and cg.exists():
                cg.rmdir()


@pytest.mark.netns
def test_stale_cleanup_removes_a_dead_runs_bpf_pins_and_keeps_a_live_runs() -> None:
    """A map the tier pinned for bpftool (realkernel.pin_path) and a SIGKILLed run left behind is removed by the next run;
    a live run's pin is neither removed nor counted as this run's leak."""
    from netns import sh
    from realkernel import bpftool, leftovers, pin_path, remove_stale

    if os.geteuid() != 0 or bpftool() is None or not Path("/sys/fs/bpf").is_dir():
        pytest.skip("needs root, bpftool and a bpffs at /sys/fs/bpf")
    suffix = secrets.token_hex(3)
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    dead_pin = pin_path(f"kprt-{_dead_owner()}-pin-{suffix}")
    live_pin = pin_path(f"kprt-{ownership.owner_tag(live.pid)}-pin-{suffix}")
    try:
        for pin in (dead_pin, live_pin):
            sh(bpftool() or "bpftool", "map", "create", str(pin), "type", "hash", "key", "4", "value", "4", "entries", "1", "name", "kprt_stale")
        assert not any(suffix in item for item in leftovers()), "another owner's pins are not this run's leak"
        removed = remove_stale()
        assert f"bpf pin {live_pin}" not in removed
        assert not dead_pin.exists(), f"a dead run's pin must be removed (this cleanup removed {removed})"
        assert live_pin.exists(), "a live run's pin must never be removed"
    finally:
        live.communicate(b"")
        for pin in (dead_pin, live_pin):
            pin.unlink(missing_ok=True)


@pytest.mark.netns
def test_two_tier_runs_started_together_both_pass_and_keep_a_third_runs_objects(tmp_path: Path) -> None:
    """Two real-kernel tier runs start at the same moment, each with start-of-run cleanup and an
    end-of-run leak check, while this process holds a topology of its own: all three survive."""
    from netns import can_use_netns, leftovers, three_namespaces

    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    mine = three_namespaces(tmp_path)
    try:
        env = dict(os.environ)
        subsets = (["tests/test_netns_topology.py"], ["tests/test_realkernel_datapath.py"])
        runs = [subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for files in subsets]
        outputs = [r.communicate(timeout=120)[0] for r in runs]
        for files, run, out in zip(subsets, runs, outputs, strict=True):
            assert run.returncode == 0, f"{files} failed next to a concurrent run:\n{out[-3000:]}"
            assert "left resources behind" not in out
            assert "removed leftovers" not in out, f"a run removed another's objects:\n{out[-3000:]}"
        assert set(mine.namespaces) <= set(leftovers()), "a concurrent run removed this run's namespaces"
    finally:
        mine.close()


@pytest.mark.netns
def test_a_leak_fails_the_run_with_an_error_of_its_own_not_a_green_summary(pytester: pytest.Pytester) -> None:
    from netns import can_use_netns, sh

    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    pytester.makeini("[pytest]\naddopts = -p ci_gate\nmarkers = netns: real kernel\n")
    pytester.makepyfile(
        """
        import pytest
        from netns import Topology

        @pytest.mark.netns
        def test_leaks():
            Topology(suffix="leak01").add_ns("forgotten")
        """
    )
    try:
        result = pytester.runpytest("-q")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(["*ERROR at teardown of real-kernel tier leak check*",
                                     "this run left resources behind: netns kprt-*-forgotten-leak01",
                                     "1 passed, 1 error in *"])
        assert not [line for line in result.stdout.lines if "[100%]" in line and "ERROR" in line], "glued to the progress line"
    finally:
        sh("ip", "netns", "del", ownership.name("forgotten", "leak01"), check=False)
