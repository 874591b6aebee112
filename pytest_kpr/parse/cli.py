"""``kpr parse FORMAT [FILE|-]``: print what the plugin would see, as one JSON document."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from typing import Any

from ..core import inputs
from .errors import ParseError
from .formats import FORMATS, JSON_ENTRIES, parse_as


def register(sub: Any) -> None:
    formats = "\n".join(f"  {name:<20} {desc}" for name, (_, _, desc) in FORMATS.items())
    p = sub.add_parser(
        "parse",
        help="Parse Cilium/node tool output and print it as JSON",
        description="Parse the output of a Cilium or node command and print the result as one JSON document.",
        epilog=f"formats:\n{formats}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("format", choices=sorted(FORMATS), metavar="FORMAT", help="one of the formats below")
    p.add_argument("file", nargs="?", default="-", help="input file, or - for standard input (default)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Bad input raises :class:`~pytest_kpr.core.inputs.BadInput`, which ``kpr`` prints as one line (exit 2)."""
    name, text = inputs.read_text(args.file, f"the output of the tool for {args.format}")
    if not text.strip():
        # One rule for every format: an empty input is far more often a command that failed upstream of
        # the pipe (kubectl exec, a missing binary) than a tool that had nothing to print.
        raise inputs.BadInput(f"{args.format}: {name} is empty (nothing to parse)")
    # A one-shot command building up to millions of small, acyclic objects: the cyclic GC would rescan
    # them again and again (a third of the run for 200,000 conntrack entries) and can free nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if args.format in JSON_ENTRIES:
            write_entries(JSON_ENTRIES[args.format](text), sys.stdout)
        else:
            write_json(parse_as(args.format, text), sys.stdout)
    except ParseError as e:
        raise inputs.BadInput(str(e)) from None
    finally:
        if was_enabled:
            gc.enable()
    return 0


def write_json(result: Any, out: Any) -> None:
    """One JSON document: a list one entry per line, anything else indented. Each entry goes through the
    C encoder in one call (``json.dump`` with ``indent`` runs the pure-Python encoder: millions of small
    writes, which made a 200,000-entry conntrack table take 20 s to print)."""
    if isinstance(result, list):
        write_entries(list(map(json.JSONEncoder(ensure_ascii=False).encode, result)), out)
    else:
        out.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")


def write_entries(entries: list[str], out: Any) -> None:
    """A JSON list from its entries' JSON texts, one per line (``jq``-friendly and ``grep``-able)."""
    out.write("[\n  " + ",\n  ".join(entries) + "\n]\n" if entries else "[]\n")

