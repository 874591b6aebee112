"""``kpr with-net-raw COMMAND...``: run a command as the calling user with the outside view's two capabilities added,
CAP_NET_RAW and CAP_NET_ADMIN.

The outside view's raw SYN probes (the runner sending to a node's NodePort from outside the cluster) need CAP_NET_RAW;
routing a LoadBalancer VIP or an externalIPs address through a node (``ip route add <VIP>/32 via <node>``, removed after
the requests: cluster.outside.LocalOutside.via) needs CAP_NET_ADMIN. A CI runner's user lacks both, and without them
those tests could only skip. This adds them as *ambient* capabilities (``setpriv``, util-linux): the user, its groups
(docker), HOME and PATH stay, they survive the exec of make, the virtualenv's python, pytest and ``ip``, and no file is
given a capability. The run adds only /32 (/128) routes to its own VIPs, never over a route it did not add.

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

from ..core.exits import declare_exit
from ..core.inputs import BadInput

CAPS = ("--inh-caps", "+net_raw,+net_admin", "--ambient-caps", "+net_raw,+net_admin")


def command(argv: Sequence[str], *, uid: int, user: str, env: Mapping[str, str]) -> list[str]:
    """The command line that runs ``argv`` as ``user`` with CAP_NET_RAW and CAP_NET_ADMIN, from a process running as ``uid``."""
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
    p = sub.add_parser("with-net-raw", help="Run a command as you, with CAP_NET_RAW and CAP_NET_ADMIN added (the outside view: raw "
                       "probes, a VIP routed through a node)",
                       description=" ".join(__doc__.split("\n\n")[0].split()) + " Uses sudo unless run as root; KPR_AS_USER names another user.")
    p.description += " " + declare_exit(p, {2: "for bad input (no command named, no such KPR_AS_USER, setpriv or sudo not on "
                                            "PATH); any other status is the command's own (it replaces this process)"})
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND [ARG...]", help="the command and its arguments")
    p.set_defaults(func=_run)
