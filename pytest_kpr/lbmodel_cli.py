"""``kpr lbmodel replay FILE``: the final frontend ownership after a YAML event list, as one JSON document."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import inputs


def register(sub: Any) -> None:
    p = sub.add_parser("lbmodel", help="Model Cilium's frontend ownership (shared VIPs, ErrFrontendConflict)",
                       description="A model of Cilium 1.18's load-balancer frontend ownership; see the README's shared-VIP section.")
    from .cli import group_help

    p.set_defaults(func=group_help(p))
    k = p.add_subparsers(dest="lbmodel", metavar="COMMAND")
    r = k.add_parser("replay", help="Replay a YAML event list; print the final state as JSON",
                     description="Events: {at_ms, op: upsert|delete, service: ns/name, frontends: [IP:PORT/PROTO, ...]}, "
                                 "in time order (at_ms never decreases); file-level variant (cilium-1.18 | requeue), "
                                 "window_ms (500), batch_size (500). Unknown keys, non-finite numbers and invalid "
                                 "addresses are errors (exit status 2).")
    r.add_argument("file", help="YAML file, or - for standard input")
    r.add_argument("--variant", choices=["cilium-1.18", "requeue"], help="Override the file's variant")
    r.add_argument("--trace", action="store_true", help="Also print what the model did, to stderr")
    r.set_defaults(func=_replay)


def _replay(args: argparse.Namespace) -> int:
    import yaml

    from .lbmodel import ModelError, Variant, load_scenario, replay

    name, text = inputs.read_text(args.file, "a YAML event list")  # bad input: BadInput, one line from `kpr`
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise inputs.BadInput(f"{name} is not YAML{where}: {problem}") from None
    try:
        events, variant, window, size = load_scenario(data)
    except ModelError as e:
        raise inputs.BadInput(f"{name}: {e}") from None
    if args.variant:
        variant = Variant(args.variant)
    m = replay(events, variant, window, size)
    if args.trace:
        for line in m.log:
            print(line, file=sys.stderr)
    json.dump(m.state(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0

