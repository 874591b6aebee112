"""``kpr with-net-raw COMMAND...``: run a command as the calling user with one capability added, CAP_NET_RAW.

The outside view's raw SYN probes (the runner sending to a node's NodePort from outside the cluster) need CAP_NET_RAW;
a CI runner's user lacks it, and without it those tests could only skip. This adds it as an *ambient* capability
(``setpriv``, util-linux): the user, its groups (docker), HOME and PATH stay, it survives the exec of make, the
virtualenv's python and pytest, and no file is given a capability.

Why not run pytest as root: kind, Docker's socket and the kubeconfig would become root's and the artifacts root-owned.
Why not ``setcap`` on the interpreter: the virtualenv's python is a symlink to the shared one, and a file capability
puts the loader in secure mode, which ignores LD_LIBRARY_PATH (how actions/setup-python's Python finds libpython).
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
from typing import Mapping, Sequence

from ..core.inputs import BadInput

CAPS = ("--inh-caps", "+net_raw", "--ambient-caps", "+net_raw")


def command(argv: Sequence[str], *, uid: int, user: str, env: Mapping[str, str]) -> list[str]:
    """The command line that runs ``argv`` as ``user`` with CAP_NET_RAW, from a process running as ``uid``."""
    if not argv:
        raise BadInput("name the command to run (e.g. kpr with-net-raw make kpr)")
    if user == "root":
        return list(argv)  # root has it
    drop = ["setpriv", "--reuid", user, "--regid", str(pwd.getpwnam(user).pw_gid), "--init-groups", *CAPS, "--"]
    if uid == 0:
        return [*drop, *argv]
    # sudo's secure_path would replace PATH (and with it the Python a CI job set up): PATH and HOME are handed over
    return ["sudo", "--preserve-env", "env", f"PATH={env.get('PATH', '')}", f"HOME={env.get('HOME', '')}", *drop, *argv]


def _run(args: argparse.Namespace) -> int:
    user = os.environ.get("KPR_AS_USER") or pwd.getpwuid(os.getuid()).pw_name
    try:
        pwd.getpwnam(user)
    except KeyError:
        raise BadInput(f"no user {user!r} (KPR_AS_USER)") from None
    argv = command(args.argv, uid=os.getuid(), user=user, env=os.environ)
    if shutil.which(argv[0]) is None:
        raise BadInput(f"{argv[0]} is not on PATH ({'util-linux' if argv[0] == 'setpriv' else 'it'} provides it)")
    os.execvp(argv[0], argv)
    return 127  # pragma: no cover - execvp does not return


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("with-net-raw", help="Run a command as you, with CAP_NET_RAW added (the outside view's raw probes)",
                       description=__doc__.split("\n\n")[0] + " Uses sudo unless run as root; KPR_AS_USER names another user.")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND [ARG...]", help="the command and its arguments")
    p.set_defaults(func=_run)
