"""``kpr with-net-raw``: the outside view gets CAP_NET_RAW (raw probes) and CAP_NET_ADMIN (a VIP routed through a node)
without running pytest as root.

The command line is table-tested without root; as root the real thing runs: a user without the capability gains it
(an ambient capability that survives exec), and nothing else about the user changes. No packet is sent: opening a raw
socket is the whole check."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_kpr.core.inputs import BadInput
from pytest_kpr.cli.netraw import command

ENV = {"PATH": "/opt/py/bin:/usr/bin", "HOME": "/home/runner"}
NOBODY_GID = str(pwd.getpwnam("nobody").pw_gid)


@pytest.mark.parametrize(("uid", "user", "expected"), [
    (0, "root", ["make", "kpr"]),  # root has it: nothing to add
    (0, "nobody", ["setpriv", "--reuid", "nobody", "--regid", NOBODY_GID, "--init-groups", "--inh-caps", "+net_raw,+net_admin",
                   "--ambient-caps", "+net_raw,+net_admin", "--", "make", "kpr"]),
    (1001, "nobody", ["sudo", "--preserve-env", "env", "PATH=/opt/py/bin:/usr/bin", "HOME=/home/runner", "setpriv", "--reuid", "nobody",
                      "--regid", NOBODY_GID, "--init-groups", "--inh-caps", "+net_raw,+net_admin", "--ambient-caps", "+net_raw,+net_admin", "--", "make",
                      "kpr"]),
])
def test_the_command_line_adds_only_the_two_capabilities_and_keeps_path_through_sudo(uid: int, user: str, expected: list[str]) -> None:
    assert command(["make", "kpr"], uid=uid, user=user, env=ENV) == expected


def test_nothing_to_run_is_a_usage_error() -> None:
    with pytest.raises(BadInput, match="name the command"):
        command([], uid=1000, user="nobody", env=ENV)


CHECK = ("import os, socket\n"
         "try:\n    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP).close(); raw = 'raw'\n"
         "except PermissionError:\n    raw = 'no-raw'\n"
         "eff = int(next(l for l in open('/proc/self/status') if l.startswith('CapEff:')).split()[1], 16)\n"
         "print(os.getuid(), raw, 'admin' if eff >> 12 & 1 else 'no-admin')")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_as_root_a_user_without_the_capability_gains_it_and_stays_itself(tmp_path: Path) -> None:
    python = "/usr/bin/python3"  # readable by nobody (the venv may live under root's home)
    nobody = pwd.getpwnam("nobody").pw_uid
    plain = subprocess.run(["setpriv", "--reuid", "nobody", "--regid", NOBODY_GID, "--clear-groups", python, "-c", CHECK],
                           capture_output=True, text=True, timeout=60)
    assert plain.stdout.split() == [str(nobody), "no-raw", "no-admin"], plain.stderr
    kpr = [sys.executable, "-m", "pytest_kpr", "with-net-raw", python, "-c", CHECK]
    granted = subprocess.run(kpr, capture_output=True, text=True, timeout=60, env={**os.environ, "KPR_AS_USER": "nobody"})
    assert granted.stdout.split() == [str(nobody), "raw", "admin"], granted.stderr
