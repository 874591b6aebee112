"""Several agent commands in one exec (Agent.run_many): each keeps its own output, errors and exit status."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Sequence

import pytest

from pytest_kpr.observe.agent import BATCH_MARK, Agent, agents
from pytest_kpr.k8s.api import ExecResult
from pytest_kpr.testing import FakeCluster, FakeConfig


class ShellKube:
    """Runs the batched script in a real /bin/sh here, with a stand-in `cilium-dbg`: the split is tested against
    what a shell really prints (trailing newlines or none, stderr, exit codes)."""

    def __init__(self, bin_dir: Path, kill_after: int | None = None):
        self.bin_dir = bin_dir
        self.kill_after = kill_after
        self.calls = 0

    def exec(self, namespace: str, pod: str, argv: Sequence[str], container: str | None = None, timeout: float = 60.0) -> ExecResult:
        self.calls += 1
        assert list(argv[:2]) == ["sh", "-c"]
        script = argv[2]
        if self.kill_after is not None:
            script = "\n".join(script.splitlines()[: self.kill_after]) + "\nexit 137"
        env = {**os.environ, "PATH": f"{self.bin_dir}:{os.environ.get('PATH', '')}"}
        cp = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10, env=env)
        return ExecResult(tuple(argv), cp.returncode, cp.stdout, cp.stderr, "pod kube-system/cilium-x")


# a stand-in `cilium-dbg`: prints by its first argument
STANDIN = """#!/bin/sh
case "$1" in
  ok) printf 'line 1\\nline 2\\n';;
  bare) printf 'no newline';;
  fail) echo boom >&2; exit 3;;
  empty) ;;
esac
"""


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    exe = tmp_path / "cilium-dbg"
    exe.write_text(STANDIN)
    exe.chmod(0o755)
    return tmp_path


def batch(kube: Any, *commands: Sequence[str]) -> list[ExecResult]:
    agent = Agent(kube, "node-1", "cilium-x", binary="cilium-dbg", _binary_checked=True)
    return agent.run_many(*commands)


def test_each_command_keeps_its_output_errors_and_status_in_one_exec(bin_dir: Path) -> None:
    kube = ShellKube(bin_dir)
    ok, bare, fail, empty = batch(kube, ("ok",), ("bare",), ("fail", "x y"), ("empty",))
    assert kube.calls == 1
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "line 1\nline 2\n", "")
    assert (bare.returncode, bare.stdout) == (0, "no newline"), "output without a trailing newline is kept as it is"
    assert (fail.returncode, fail.stdout, fail.stderr) == (3, "", "boom\n")
    assert fail.argv == ("cilium-dbg", "fail", "x y")
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "")


def test_a_batch_that_ends_early_says_which_commands_did_not_run(bin_dir: Path) -> None:
    first, second = batch(ShellKube(bin_dir, kill_after=1), ("ok",), ("ok",))
    assert first.returncode == 0 and first.stdout == "line 1\nline 2\n"
    assert second.returncode == -1 and second.stderr.startswith("did not run: the batched exec ended early (exit 137")
    with pytest.raises(Exception, match="did not run"):
        second.check()


def test_the_mark_is_a_line_of_its_own_that_tool_output_does_not_contain() -> None:
    assert BATCH_MARK.startswith("::") and "\n" not in BATCH_MARK


def test_on_the_fake_a_batch_equals_the_single_commands() -> None:
    fake = FakeCluster(FakeConfig())
    agent = agents(fake)[0]
    plain, db, verbose = agent.health_snapshot()
    assert plain == agent.status_text(verbose=False)
    assert db == agent.health()
    assert verbose == agent.status_text(verbose=True)


def test_read_parses_each_view_with_its_own_parser_and_names_a_failed_command() -> None:
    fake = FakeCluster(FakeConfig())
    agent = agents(fake)[0]
    before = len(fake.calls)
    version, config, frontends = agent.read("version", "config", "frontends")
    assert len(fake.calls) - before == 1, "three views, one exec"
    assert version == agent.version() and config == agent.config() and frontends == agent.frontends()
    bad = FakeCluster(FakeConfig(cilium_version="1.17.6"))  # no StateDB frontends table before 1.18
    with pytest.raises(Exception, match="db/show frontends"):
        agents(bad)[0].read("version", "frontends")


def test_the_binary_name_is_learnt_from_the_first_command_not_an_extra_exec() -> None:
    fake = FakeCluster(FakeConfig())
    a = agents(fake)[0]
    before = len(fake.calls)
    a.status()
    assert len(fake.calls) - before == 1 and a.binary == "cilium-dbg"
    old = FakeCluster(FakeConfig(agent_binary="cilium", cilium_version="1.16.19"))
    b = agents(old)[0]
    before = len(old.calls)
    assert b.status().healthy
    assert len(old.calls) - before == 2 and b.binary == "cilium", "cilium-dbg (127), then cilium"
    c = agents(old)[0]
    c.read("version", "config")
    assert c.binary == "cilium", "a batch learns the name the same way"


def test_a_node_reads_its_rule_views_and_listeners_in_one_exec() -> None:
    from pytest_kpr.observe.node import Node
    from pytest_kpr.testing import Faults

    fake = FakeCluster(FakeConfig(faults=Faults(unreadable_rule_view="iptables-legacy")))
    node = Node(fake, "fake-worker")
    before = len(fake.calls)
    dumps, listeners = node.rules_and_listeners(22)
    assert len(fake.calls) - before == 1
    assert dumps["iptables-legacy"] is None, "a view whose tool is missing (exit 127) is None: not read"
    assert dumps["iptables-nft"] is not None and dumps["nft"] is not None
    assert dumps["iptables-nft"] == node.iptables("nft") and dumps["nft"] == node.nft()
    assert listeners == node.listening(22)
    assert node.rule_dumps() == dumps


def test_a_real_shell_runs_a_node_batch_with_a_missing_tool(tmp_path: Path) -> None:
    """What sh really does with a tool that is not installed: exit 127, and the next command still runs."""
    from pytest_kpr.observe import batch as b

    r = subprocess.run(["sh", "-c", b.script([["kpr-no-such-tool-x"], ["echo", "still here"]])], capture_output=True, text=True, timeout=10)
    missing, echo = b.split([["kpr-no-such-tool-x"], ["echo", "still here"]], ExecResult(("sh",), r.returncode, r.stdout, r.stderr, "here"))
    assert missing.returncode == 127 and "not found" in missing.stderr
    assert (echo.returncode, echo.stdout) == (0, "still here\n")
