"""``kpr parse FORMAT [FILE|-]``: print what the plugin would see, as one JSON document."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .errors import ParseError
from .formats import FORMATS, parse_as


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
    try:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        print(f"kpr parse: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as e:
        print(f"kpr parse: {args.file} is not UTF-8 text: {e}", file=sys.stderr)
        return 2
    try:
        result = parse_as(args.format, text)
    except ParseError as e:
        print(f"kpr parse: {e}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
