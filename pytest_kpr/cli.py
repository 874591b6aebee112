"""The ``kpr`` command: tools around the plugin that work without pytest or a cluster."""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


def _cmd_version(args: argparse.Namespace) -> int:
    from . import __version__
    from .resources import Pins, find_clusters_dir

    print(f"pytest-kpr {__version__}")
    d = find_clusters_dir()
    if d is not None:
        pins = Pins.load(d)
        print(f"pinned Cilium {pins.cilium_version} (matrix {', '.join(pins.cilium_matrix)}), kind {pins.kind_version}, node image {pins.node_image}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kpr",
        description="pytest-kpr tools. The conformance suites themselves run with: pytest -m kpr",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("version", help="Print the plugin version and the pinned Cilium/kind versions")
    p.set_defaults(func=_cmd_version)
    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list[Callable[[argparse._SubParsersAction], None]]:  # type: ignore[type-arg]
    """Subcommands defined next to the code they expose (imported lazily: ``kpr version`` stays fast)."""
    from .lbmodel_cli import register as lbmodel
    from .parse.cli import register as parse
    from .probe_cli import register as probe

    return [parse, probe, lbmodel]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
