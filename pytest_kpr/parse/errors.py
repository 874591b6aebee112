from __future__ import annotations


class ParseError(ValueError):
    """Tool output that does not match the expected format. Names the line number and the text."""

    def __init__(self, fmt: str, lineno: int, line: str, reason: str = "unrecognised line"):
        self.fmt = fmt
        self.lineno = lineno
        self.line = line
        self.reason = reason
        super().__init__(f"{fmt}: line {lineno}: {reason}: {shown_line(line)}")


def shown_line(line: str, limit: int = 120) -> str:
    """A line as an error shows it: its repr, cut to ``limit`` characters (the repr, not the line, is
    cut: a line of control bytes is four times longer written as escapes)."""
    r = repr(line)
    return r if len(r) <= limit else r[: limit - 3] + "..."
