"""Who owns an object of the real-kernel tier, so that runs sharing a machine never touch each other.

Every namespace and cgroup the tier creates is named ``kprt-<pid>.<start>-<role>-<suffix>``: the PID
of the pytest process that created it and that process's start time (field 22 of /proc/<pid>/stat,
in clock ticks since boot), so a PID reused by an unrelated process is not mistaken for the owner.

- :func:`mine` — created by this process: the end-of-run leak check looks only at these.
- :func:`orphaned` — its owner is no longer running: only these may be removed by a later run.
- anything else (a live run's, or not ours at all) is never touched.
"""

from __future__ import annotations

import os
import re

PREFIX = "kprt"
_NAME = re.compile(rf"^{PREFIX}-(\d+)\.(\d+)-")


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, or None if no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'
    rest = stat.rsplit(")", 1)[1].split()
    return rest[19] if len(rest) > 19 else None


def owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    start = start_time(pid)
    if start is None:
        raise ProcessLookupError(pid)
    return f"{pid}.{start}"


def name(role: str, suffix: str, pid: int | None = None) -> str:
    return f"{PREFIX}-{owner_tag(pid)}-{role}-{suffix}"


def owner(obj: str) -> tuple[int, str] | None:
    """(pid, start time) from a name made by :func:`name`; None for names that are not ours."""
    m = _NAME.match(obj)
    return (int(m.group(1)), m.group(2)) if m else None


def mine(obj: str, pid: int | None = None) -> bool:
    own = owner(obj)
    return own is not None and f"{own[0]}.{own[1]}" == owner_tag(pid)


def orphaned(obj: str) -> bool:
    """True if ``obj`` carries an owner and that owner is gone (exited, or its PID now belongs to another
    process). Names without an owner are not ours to judge: False."""
    own = owner(obj)
    if own is None:
        return False
    return start_time(own[0]) != own[1]
