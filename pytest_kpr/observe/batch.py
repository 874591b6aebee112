"""Several commands in one exec: one ``sh -c`` whose output is split per command at a marker line.

An exec stream (``kubectl exec`` into an agent, ``docker exec`` into a kind node) costs 0.1-0.5 s; a
command inside it almost nothing. Each command's stdout, stderr and exit status come back as its own
:class:`~pytest_kpr.k8s.api.ExecResult`, to be parsed by its own parser; a command that did not run
(the shell died) comes back with exit status -1 and says so. Needs a POSIX ``sh`` where the commands run:
the agent image's rootfs is Ubuntu (cilium/cilium images/runtime/Dockerfile), kind's node image is
Debian (kubernetes-sigs/kind images/base/Dockerfile).
"""

from __future__ import annotations

import re
import shlex
from typing import Callable, Sequence

from ..k8s.api import ExecResult

#: ends each command's output, followed by its exit status
BATCH_MARK = "::kpr-end-of-command::"
_SPLIT = re.compile(r"(.*?)" + re.escape(BATCH_MARK) + r" (-?\d+)\n", re.S)
_TAIL = "; rc=$?;"


def script(commands: Sequence[Sequence[str]]) -> str:
    """The ``sh -c`` script: one line per command, each followed by the marker and its status on both streams."""
    return "\n".join(f"{shlex.join(list(argv))}{_TAIL} echo '{BATCH_MARK}' \"$rc\"; echo '{BATCH_MARK}' \"$rc\" >&2" for argv in commands)


def split(commands: Sequence[Sequence[str]], r: ExecResult) -> list[ExecResult]:
    """One result per command from the batched exec's result."""
    outs, errs = _SPLIT.findall(r.stdout), _SPLIT.findall(r.stderr)
    results = []
    for i, argv in enumerate(commands):
        if i < len(outs):
            out, rc = outs[i]
            results.append(ExecResult(tuple(argv), int(rc), out, errs[i][0] if i < len(errs) else "", r.where))
        else:
            results.append(ExecResult(tuple(argv), -1, "", f"did not run: the batched exec ended early (exit {r.returncode}: "
                                                           f"{(r.stderr or r.stdout).strip()[-200:]})", r.where))
    return results


def interpret(text: str, handle: Callable[[list[str]], tuple[int, str, str]]) -> tuple[int, str, str]:
    """For fakes: run a :func:`script` through ``handle(argv) -> (rc, stdout, stderr)``, as sh would."""
    out, err = [], []
    for line in text.splitlines():
        command, sep, _ = line.partition(_TAIL)
        if not sep:
            return 2, "", f"sh: the fake runs only pytest_kpr.observe.batch scripts, not {line!r}\n"
        rc, o, e = handle(shlex.split(command))
        out.append(f"{o}{BATCH_MARK} {rc}\n")
        err.append(f"{e}{BATCH_MARK} {rc}\n")
    return 0, "".join(out), "".join(err)
