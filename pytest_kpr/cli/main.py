"""The ``kpr`` command: its parser, its subcommands (registered lazily: ``kpr version`` stays fast) and ``main``."""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from .args import EXIT_CODES, KprParser, group_help

def _cmd_version(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..run.resources import Pins, find_clusters_dir

    print(f"pytest-kpr {__version__}")
    d = find_clusters_dir()
    if d is not None:
        pins = Pins.load(d)
        print(f"pinned Cilium {pins.cilium_version} (matrix {', '.join(pins.cilium_matrix)}), kind {pins.kind_version}, node image {pins.node_image}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = KprParser(
        prog="kpr",
        description="pytest-kpr tools. The conformance suites themselves run with: pytest -m kpr",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=group_help(parser))
    parser.add_argument("--version", action="store_const", const=True, default=False, help="the same as: kpr version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("version", help="Print the plugin version and the pinned Cilium/kind versions")
    p.set_defaults(func=_cmd_version)
    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list[Callable[[argparse._SubParsersAction], None]]:  # type: ignore[type-arg]
    """Subcommands defined next to the code they expose (imported lazily: ``kpr version`` stays fast)."""
    from ..evidence.matrix import register as matrix
    from .access import register as check_access
    from .cleanup import register as cleanup
    from ..parse.cli import register as parse
    from .lbmodel import register as lbmodel
    from .netraw import register as with_net_raw
    from .probe import register as probe
    from .probe_image import register as probe_image
    from .replay import register as replay
    from .scaffold import register as scaffold

    return [parse, probe, probe_image, lbmodel, matrix, check_access, cleanup, with_net_raw, replay, scaffold]


def main(argv: Sequence[str] | None = None) -> int:
    from ..core.inputs import BadInput, one_line

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "version", False) and getattr(args, "command", None) is None:
        args.func, args.command = _cmd_version, "version"
    try:
        return int(args.func(args))
    except BadInput as e:  # found after parsing (a host that does not resolve, a file's content)
        print(f"kpr {args.command}: {one_line(str(e))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
