"""Helpers shared by the text parsers: line iteration and the printer's trailing-space contract.

Cilium's printers end lines with a space (tabwriter pads every cell terminated by a tab; the
conntrack dump writes ``BackendID=%d \\n``). Pasted output (issues, commit messages) loses it. A parser
is therefore *strict* when the text came straight from the tool (``strict=True``: a line without the
trailing space was cut off), *lenient* for pasted text (``strict=False``), or decides from the text
itself (``strict=None``: strict if any line carries the trailing space).
"""

from __future__ import annotations

from typing import Iterator


def numbered(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline); a trailing '\\r' is dropped."""
    for i, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        yield i, line


def decide_strict(text: str, strict: bool | None) -> bool:
    if strict is not None:
        return strict
    return any(line.endswith(" ") and line.strip() for line in text.split("\n"))


def load_json(text: str, fmt: str) -> object:
    """``json.loads`` whose failure is a :class:`ParseError` naming the line and its text."""
    import json

    from .errors import ParseError

    try:
        return json.loads(text)
    except ValueError as e:
        lines = text.splitlines() or [""]
        lineno = getattr(e, "lineno", 1)
        raise ParseError(fmt, lineno, lines[min(lineno, len(lines)) - 1], f"invalid JSON ({getattr(e, 'msg', e)})") from None
