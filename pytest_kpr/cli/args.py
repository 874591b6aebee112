"""What every ``kpr`` subcommand's parser shares: one-line usage errors, checks as argparse types, the exit statuses."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Callable, NoReturn

Handler = Callable[[argparse.Namespace], int]

from ..core.exits import EXIT_CODES  # noqa: F401  (the general statuses, for the parser's epilog: cli.main)


class KprParser(argparse.ArgumentParser):
    """argparse with one-line usage errors: the message and where to look, on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        choice = re.match(r"argument ([^:]+): invalid choice: ('.*') \(choose from .*\)$", message)
        if choice:  # the list of choices can be hundreds of characters: --help has it
            message = f"{choice.group(1)} {choice.group(2)} is not one of the choices"
        m = re.match(r"argument ([^:]+): (.*)", message)
        if m and m.group(2).startswith(m.group(1).split("/")[0]):
            message = m.group(2)  # the check already names the option: "--sport must be ..."
        from ..core.inputs import one_line

        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def argtype(check: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """An argparse ``type=`` from an :mod:`inputs` check: its one-line message becomes the usage error."""
    from ..core.inputs import BadInput

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
