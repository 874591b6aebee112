"""What a ``kpr`` command's exit status means: the general statuses, and each command's own where it declares them.

A command declares its statuses on its parser (:func:`declare_exit`), which puts the sentence in its ``--help``; the
docs' exit-status table is generated from the same declarations (scripts/gen_docs.py), so the help and every page say
the same. Here in core: commands of any layer (the matrix's gate lives in evidence/) declare theirs.
"""

from __future__ import annotations

import argparse

#: what a kpr command's exit status means, unless the command declares its own (:func:`declare_exit`)
GENERAL_EXIT = {0: "done (for probe: a verdict was reached, whichever it is)",
                1: "the command ran and failed (e.g. probe hold could not connect)",
                2: "bad input: usage, an option's value, a file that cannot be read or is not the format",
                130: "interrupted (Ctrl-C)"}
EXIT_CODES = "exit status:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in GENERAL_EXIT.items())


def declare_exit(parser: argparse.ArgumentParser, statuses: dict[int, str]) -> str:
    """Declare a command's own exit statuses (130, interrupted, is every command's): the parser keeps them, where the
    docs' exit-status table is generated from (``parser.get_default("exit_statuses")``); the sentence for its
    description is returned."""
    parser.set_defaults(exit_statuses=statuses)
    return "Exit status " + ", ".join(f"{code} {meaning}" for code, meaning in statuses.items()) + "."


def exit_statuses(parser: argparse.ArgumentParser) -> dict[int, str]:
    """A command's exit statuses: its own, or the general ones; 130 (interrupted) in either case."""
    own = parser.get_default("exit_statuses")
    return {**own, 130: GENERAL_EXIT[130]} if own else dict(GENERAL_EXIT)
