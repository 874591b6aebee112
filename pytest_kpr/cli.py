"""The ``kpr`` command: tools around the plugin that work without pytest or a cluster."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Callable, NoReturn, Sequence

Handler = Callable[[argparse.Namespace], int]

EXIT_CODES = """exit status:
  0    done (for probe: a verdict was reached, whichever it is)
  1    the command ran and failed (e.g. probe hold could not connect)
  2    bad input: usage, an option's value, a file that cannot be read or is not the format
  130  interrupted (Ctrl-C)"""


class KprParser(argparse.ArgumentParser):
    """argparse with one-line usage errors: the message and where to look, on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        choice = re.match(r"argument ([^:]+): invalid choice: ('.*') \(choose from .*\)$", message)
        if choice:  # the list of choices can be hundreds of characters: --help has it
            message = f"{choice.group(1)} {choice.group(2)} is not one of the choices"
        m = re.match(r"argument ([^:]+): (.*)", message)
        if m and m.group(2).startswith(m.group(1).split("/")[0]):
            message = m.group(2)  # the check already names the option: "--sport must be ..."
        from .inputs import one_line

        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def argtype(check: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """An argparse ``type=`` from an :mod:`inputs` check: its one-line message becomes the usage error."""
    from .inputs import BadInput

    def convert(text: str) -> Any:
        try:
            return check(text)
        except BadInput as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = name
    return convert


def group_help(parser: argparse.ArgumentParser) -> Handler:
    """The handler of a command group run without its subcommand: its help on stderr, exit status 2
    (the same as ``kpr`` alone: a command is missing)."""

    def show(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return show


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
    parser = KprParser(
        prog="kpr",
        description="pytest-kpr tools. The conformance suites themselves run with: pytest -m kpr",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=group_help(parser))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("version", help="Print the plugin version and the pinned Cilium/kind versions")
    p.set_defaults(func=_cmd_version)
    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list[Callable[[argparse._SubParsersAction], None]]:  # type: ignore[type-arg]
    """Subcommands defined next to the code they expose (imported lazily: ``kpr version`` stays fast)."""
    from .lbmodel_cli import register as lbmodel
    from .matrix import register as matrix
    from .netraw import register as with_net_raw
    from .parse.cli import register as parse
    from .probe_cli import register as probe

    return [parse, probe, lbmodel, matrix, with_net_raw]


def main(argv: Sequence[str] | None = None) -> int:
    from .inputs import BadInput, one_line

    parser = build_parser()
    args = parser.parse_args(argv)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
