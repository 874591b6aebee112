from __future__ import annotations


class ParseError(ValueError):
    """Tool output that does not match the expected format. Names the line number and the text."""

    def __init__(self, fmt: str, lineno: int, line: str, reason: str = "unrecognised line"):
        self.fmt = fmt
        self.lineno = lineno
        self.line = line
        self.reason = reason
        shown = line if len(line) <= 200 else line[:200] + "..."
        super().__init__(f"{fmt}: line {lineno}: {reason}: {shown!r}")
