"""``kpr lbmodel replay FILE``: the final frontend ownership after a YAML event list, as one JSON document."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..core import inputs


def register(sub: Any) -> None:
    p = sub.add_parser("lbmodel", help="Model Cilium's frontend ownership (shared VIPs, ErrFrontendConflict)",
                       description="A model of Cilium 1.18's load-balancer frontend ownership; see the documentation's shared-VIP page (explanation/shared-vip).")
    from .args import group_help

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


def _strict_loader() -> Any:
    """yaml.SafeLoader, stricter: an alias (``*a``) is refused -- an event list needs none, and a few hundred bytes of
    nested aliases expand to gigabytes -- and so is a key given twice in one mapping (the second would win silently)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in an event list", event.start_mark)
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    if key in seen:
                        raise yaml.constructor.ConstructorError(None, None, f"key {inputs.show(key)} given twice", key_node.start_mark)
                    seen.add(key)
                except TypeError:
                    raise yaml.constructor.ConstructorError(None, None, "a mapping key must be a plain value", key_node.start_mark) from None
            return super().construct_mapping(node, deep=deep)

    return Loader


def strict_load(text: str, strict: Any) -> Any:
    """Load with the strict rules (no alias, no key twice). With libyaml, the checks walk its event stream and node tree
    and the load is libyaml's (a 7 MB list of 100,000 events in seconds); without it, the pure-Python strict loader."""
    import json

    import yaml

    def no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        twice = next((k for k in keys if keys.count(k) > 1), None) if len(set(keys)) != len(keys) else None
        if twice is not None:
            raise yaml.constructor.ConstructorError(None, None, f"key {inputs.show(twice)} given twice")
        return dict(pairs)

    if text.lstrip()[:1] in ("{", "["):  # JSON, a subset of YAML without aliases: read as such, at JSON's speed
        try:
            return json.loads(text, object_pairs_hook=no_twice, parse_constant=lambda c: float(c))
        except (json.JSONDecodeError, RecursionError):
            pass  # YAML's flow style, or not JSON: YAML says what is wrong
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is None:
        return yaml.load(text, Loader=strict)  # noqa: S506 - a SafeLoader subclass
    for event in yaml.parse(text, Loader=fast):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in an event list", event.start_mark)
    from ..core.yamlfile import repeated_key

    twice = repeated_key([yaml.compose(text, Loader=fast)])
    if twice is not None:
        raise yaml.constructor.ConstructorError(None, None, f"key {inputs.show(twice.value)} given twice", twice.start_mark)
    return yaml.load(text, Loader=fast)  # noqa: S506 - libyaml's SafeLoader


def _replay(args: argparse.Namespace) -> int:
    import yaml

    from ..rules.lbmodel import ModelError, Variant, load_scenario, replay

    StrictLoader = _strict_loader()

    name, text = inputs.read_text(args.file, "a YAML event list")  # bad input: BadInput, one line from `kpr`
    try:
        data = strict_load(text, StrictLoader)
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

