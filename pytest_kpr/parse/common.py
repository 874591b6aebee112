"""Helpers shared by the text parsers: line iteration and the printer's trailing-space contract.

Cilium's printers end lines with a space (tabwriter pads every cell terminated by a tab; the
conntrack dump writes ``BackendID=%d \\n``). Pasted output (issues, commit messages) loses it. A parser
is therefore *strict* when the text came straight from the tool (``strict=True``: a line without the
trailing space was cut off), *lenient* for pasted text (``strict=False``), or decides from the text
itself (``strict=None``: strict if any line carries the trailing space).
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

from .errors import ParseError


#: line breaks str.splitlines() knows and no tool this reads prints (U+2028/U+2029, NEL, VT, FF, FS/GS/RS)
_FOREIGN_BREAKS = re.compile("[\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e]")
#: a number longer than any the tools print (a 64-bit counter has 20 digits)
_LONG_NUMBER = re.compile(r"[0-9]{41,}")
MAX_DIGITS = 40


def tool_line_problem(line: str) -> str | None:
    """Why ``line`` cannot be a line the tools print (the parsers would read it more loosely than the tool writes), or
    None: a carriage return inside it, a line break of another alphabet, a digit of another script (int() and \\d would
    read ٣ as 3), a number of more than MAX_DIGITS digits."""
    if "\r" in line:
        return "a carriage return inside the line (no tool prints one there)"
    m = _FOREIGN_BREAKS.search(line)
    if m:
        return f"a line break U+{ord(m.group(0)):04X} no tool prints"
    if not line.isascii():
        odd = next((c for c in line if c.isdigit() and not c.isascii()), None)
        if odd is not None:
            return f"the digit {odd!r} (U+{ord(odd):04X}) of another script; the tools print ASCII digits"
    m = _LONG_NUMBER.search(line)
    if m:
        return f"a number of {len(m.group(0))} digits (more than {MAX_DIGITS}: no tool prints one)"
    return None


def numbered(text: str, fmt: str = "tool output") -> Iterator[tuple[int, str]]:
    """(line number, line without its newline); a trailing '\\r' is dropped. A line no tool prints
    (:func:`tool_line_problem`) is a :class:`ParseError`."""
    for i, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        why = tool_line_problem(line)
        if why:
            raise ParseError(fmt, i, line, why)
        yield i, line


def row_matches(text: str, fmt: str, row: "re.Pattern[str]", skip: "Callable[[str], object]" = lambda line: False,
                rstrip: bool = False) -> Iterator[tuple[int, str, "re.Match[str]"]]:
    """The one-row-per-line table reader: each line that is not blank and not ``skip``ped (a header, a section line),
    matched whole by ``row`` (after dropping trailing blanks with ``rstrip``): (line number, line, match). A line that
    does not match is a :class:`ParseError` of ``fmt`` naming it."""
    for lineno, line in numbered(text, fmt):
        if not line.strip() or skip(line):
            continue
        m = row.fullmatch(line.rstrip() if rstrip else line)
        if m is None:
            raise ParseError(fmt, lineno, line)
        yield lineno, line, m


def decide_strict(text: str, strict: bool | None) -> bool:
    if strict is not None:
        return strict
    return any(line.endswith(" ") and line.strip() for line in text.split("\n"))


class BadJSON(ValueError):
    """JSON that Cilium never prints and the printer could not print back: NaN/Infinity, a lone surrogate, a NUL in a
    string, nesting past :data:`MAX_JSON_DEPTH`."""


#: deeper than any Cilium output nests (a statedb object: about 6 levels)
MAX_JSON_DEPTH = 100


def _constant(name: str) -> object:
    raise BadJSON(f"{name} is not JSON")


def _finite(text: str) -> float:
    import math

    f = float(text)
    if not math.isfinite(f):
        raise BadJSON(f"{text[:24]} is not a finite number")
    return f


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_json(value: object) -> object:
    """``value`` if its strings are printable back as JSON and it nests at most :data:`MAX_JSON_DEPTH` levels."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise BadJSON(f"nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(v, str):
            if "\x00" in v:
                raise BadJSON("a NUL character inside a string")
            if not v.isascii() and _SURROGATE.search(v):  # isascii() is O(1): most strings skip the scan
                raise BadJSON("a lone surrogate (\\ud800-\\udfff) inside a string")
        elif isinstance(v, dict):
            stack += [(k, depth + 1) for k in v] + [(x, depth + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, depth + 1) for x in v]
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise BadJSON(f"a number of {len(text.lstrip('-'))} digits (more than {MAX_DIGITS}: Cilium prints none)")
    return int(text)


def _once(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in pairs:
        if k in out:
            raise BadJSON(f"the key {k[:40]!r} is given twice in one object (the tools print each once; readers differ on which wins)")
        out[k] = v
    return out


def strict_json(text: str) -> object:
    """``json.loads`` without NaN/Infinity, without deep nesting (no RecursionError), without a key twice in one object,
    without numbers longer than any the tools print and with printable strings; :class:`ValueError`
    (``json.JSONDecodeError`` or :class:`BadJSON`) otherwise."""
    import json

    try:
        return check_json(json.loads(text, parse_constant=_constant, parse_float=_finite, parse_int=_int, object_pairs_hook=_once))
    except RecursionError:
        raise BadJSON(f"nested more than {MAX_JSON_DEPTH} levels deep") from None


def load_json(text: str, fmt: str) -> object:
    """:func:`strict_json` whose failure is a :class:`ParseError` naming the line and its text."""
    from .errors import ParseError

    try:
        return strict_json(text)
    except ValueError as e:
        lines = text.splitlines() or [""]
        lineno = getattr(e, "lineno", 1)
        raise ParseError(fmt, lineno, lines[min(lineno, len(lines)) - 1], f"invalid JSON ({getattr(e, 'msg', e)})") from None


def cut_table(text: str, fmt: str, columns: tuple[str, ...], first: str,
              continuation: Callable[[dict[str, str]], bool] = lambda cells: False, table: str = "") -> list[tuple[int, str, dict[str, str]]]:
    """statedb's ``db/show`` table: rows cut at the header's column starts (cells may be empty). A line
    ``continuation`` accepts is passed through without the alignment check (the caller reads it)."""
    table = table or fmt
    cols: list[tuple[str, int]] | None = None
    rows = []
    for lineno, line in numbered(text):
        if not line.strip():
            continue
        if cols is None:
            cols = [(m.group(0), m.start()) for m in re.finditer(r"\S+", line.rstrip())]
            names = [c for c, _ in cols]
            unknown = [n for n in names if n not in columns]
            if unknown or not names or names[0] != first or len(set(names)) != len(names):
                raise ParseError(fmt, lineno, line, f"not a {table} table header (unknown columns {unknown})")
            continue
        cells: dict[str, str] = {}
        misaligned = None
        for i, (name, start) in enumerate(cols):
            end = cols[i + 1][1] if i + 1 < len(cols) else None
            if misaligned is None and start > 0 and len(line) > start and line[start - 1] != " ":
                misaligned = name
            cells[name] = (line[start:end] if end is not None else line[start:]).strip()
        if misaligned is not None and not continuation(cells):
            raise ParseError(fmt, lineno, line, f"text runs into column {misaligned} (misaligned row)")
        rows.append((lineno, line, cells))
    if cols is None:
        raise ParseError(fmt, 1, text.splitlines()[0] if text.strip() else "", "no header")
    return rows
