"""The shape of a recording's answers, and what a real cluster answered that the fake never does.

A recording from a real cluster is the fake's test: each kind of answer (an API read of one kind of object, one command
in an agent or on a node, one request from outside) has a shape -- for an object its fields (as paths, with their JSON
types) and their order, for a command's output its lines' formats (numbers, addresses and hex ids made alike) and their
order -- and :func:`blind_spots` lists, per kind, what a recording holds that a fake run's recording of the same suites
never produced. ``kpr replay DIR --blind-spots`` makes that fake run and prints them: where the fake is wrong or too
narrow (a field it lacks, a header it prints otherwise, lines in another order).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Iterable

#: what makes two lines of one format differ: addresses, numbers, hex ids, durations
_VARIABLE = re.compile(r"0x[0-9a-fA-F]+|\[?[0-9a-fA-F]*:[0-9a-fA-F:]+\]?(?::\d+)?|\b[a-z]*[0-9a-f]{10,}\b|\b[A-Z0-9]{12,}\b"
                       r"|\b(?=[0-9a-f]*\d)[0-9a-f]{6,}\b|\d+(?:\.\d+){0,3}(?::\d+)?(?:/\d+)?")
_SPACES = re.compile(r"\s+")
#: at most this many lines of one answer are looked at, and this many keys' order kept per object
MAX_LINES, MAX_ORDER = 200, 12


def line_format(line: str, run_id: str = "") -> str:
    """A line with what varies between answers of one format made alike (``N``; the run's id in names ``<run>``), runs of
    blanks one blank."""
    if run_id:
        line = line.replace(run_id, "<run>")
    return _SPACES.sub(" ", _VARIABLE.sub("N", line)).strip()


def _command(argv: list[str]) -> str:
    """A command's identity: its words before the first that names something variable (an address, a number, a path's
    end); a shell script (an agent batch): its first command."""
    words = argv
    if len(argv) >= 3 and argv[0] in ("sh", "bash") and argv[1] == "-c":
        words = argv[2].split(";", 1)[0].split("\n", 1)[0].split()
    out = []
    for w in words[:6]:
        if _VARIABLE.search(w) or "/" in w.strip("/") and w.count("/") > 1:
            break
        out.append(w)
    return " ".join(out)


def kind_of(entry: dict[str, Any]) -> str:
    seam, op, args = entry.get("seam"), entry.get("op"), entry.get("args") or {}
    if seam == "kube" and op in ("get", "list", "create", "patch", "delete") and args.get("args"):
        first = args["args"][0]
        return f"kube {op} {first.get('kind') if isinstance(first, dict) else first}"
    if seam in ("kube", "node") and op in ("exec", "run"):
        return f"{seam} {op} {_command(list(args.get('argv') or []))}"
    return f"{seam} {op}"


def _paths(value: Any, prefix: str, out: set[str], order: list[str]) -> None:
    if isinstance(value, dict):
        keys = list(value)
        if prefix.count(".") < 3:
            order.append(f"order {prefix or '.'}: " + ",".join(keys[:MAX_ORDER]))
        for k in keys:
            _paths(value[k], f"{prefix}.{k}" if prefix else str(k), out, order)
    elif isinstance(value, list):
        for v in value[:20]:
            _paths(v, prefix + "[]", out, order)
        if not value:
            out.add(f"{prefix}[]")
    else:
        out.add(f"{prefix}: {type(value).__name__ if value is not None else 'null'}")


def shape(entry: dict[str, Any], run_id: str = "") -> set[str]:
    """The shape of an entry's answer: field paths with their types and key orders (an object), line formats and the
    header (a command's output: its first line when nothing in it varies); an error's type."""
    if "error" in entry:
        return {f"error {entry['error'].get('type')}"}
    answer = entry.get("answer")
    if isinstance(answer, dict) and set(answer) >= {"argv", "returncode", "stdout"}:  # a command's result
        lines = [line_format(x, run_id) for x in str(answer.get("stdout") or "").splitlines()[:MAX_LINES] if x.strip()]
        out = {f"line {x}" for x in lines}
        if lines and "N" not in lines[0].split():
            out.add(f"header {lines[0]}")
        return out
    out: set[str] = set()
    order: list[str] = []
    _paths(answer, "", out, order)
    return out | set(order)


def shapes(entries: Iterable[dict[str, Any]], run_id: str = "") -> dict[str, set[str]]:
    """Per kind of answer, every shape element its answers had (``run_id``: the recording's, made alike in names)."""
    out: dict[str, set[str]] = defaultdict(set)
    for e in entries:
        if "seq" in e:
            out[kind_of(e)] |= shape(e, run_id)
    return dict(out)


def blind_spots(recording: Iterable[dict[str, Any]], fake: Iterable[dict[str, Any]], run_ids: tuple[str, str] = ("", "")) -> dict[str, list[str]]:
    """Per kind of answer in ``recording``: its shape elements that no answer of that kind in ``fake`` had (a kind the
    fake never answered: ``["never answered by the fake"]``), the kinds in order. ``run_ids``: each recording's run id."""
    mine, theirs = shapes(recording, run_ids[0]), shapes(fake, run_ids[1])
    out: dict[str, list[str]] = {}
    for kind in sorted(mine):
        if kind not in theirs:
            out[kind] = ["never answered by the fake"]
        elif missing := sorted(mine[kind] - theirs[kind]):
            out[kind] = missing
    return out
