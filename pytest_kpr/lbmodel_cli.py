"""``kpr lbmodel replay FILE``: the final frontend ownership after a YAML event list, as one JSON document."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("lbmodel", help="Model Cilium's frontend ownership (shared VIPs, ErrFrontendConflict)",
                       description="A model of Cilium 1.18's load-balancer frontend ownership; see the README's shared-VIP section.")
    k = p.add_subparsers(dest="lbmodel", metavar="COMMAND", required=True)
    r = k.add_parser("replay", help="Replay a YAML event list; print the final state as JSON",
                     description="Events: {at_ms, op: upsert|delete, service: ns/name, frontends: [IP:PORT/PROTO, ...]}; "
                                 "file-level variant (cilium-1.18 | requeue), window_ms (500), batch_size (500).")
    r.add_argument("file", help="YAML file, or - for standard input")
    r.add_argument("--variant", choices=["cilium-1.18", "requeue"], help="Override the file's variant")
    r.add_argument("--trace", action="store_true", help="Also print what the model did, to stderr")
    r.set_defaults(func=_replay)


def _replay(args: argparse.Namespace) -> int:
    import yaml

    from .lbmodel import ModelError, Variant, load_scenario, replay

    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except OSError as e:
        print(f"kpr lbmodel: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        events, variant, window, size = load_scenario(yaml.safe_load(text))
    except yaml.YAMLError as e:
        print(f"kpr lbmodel: {args.file} is not YAML: {e}", file=sys.stderr)
        return 1
    except ModelError as e:
        print(f"kpr lbmodel: {args.file}: {e}", file=sys.stderr)
        return 1
    if args.variant:
        variant = Variant(args.variant)
    m = replay(events, variant, window, size)
    if args.trace:
        for line in m.log:
            print(line, file=sys.stderr)
    json.dump(m.state(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
