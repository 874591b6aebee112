"""parse.common.row_matches, the one-row-per-line table reader six parsers share (map list, ss, netstat, conntrack,
tc filter, lb/maps-dump): blanks and skipped lines pass, every other line matches whole or is a ParseError naming the
format and the line."""

from __future__ import annotations

import re

import pytest

from pytest_kpr.parse.common import row_matches
from pytest_kpr.parse.errors import ParseError

ROW = re.compile(r"(\w+)=(\d+)")


@pytest.mark.parametrize(("text", "kwargs", "rows"), [
    ("a=1\nb=2\n", {}, [(1, "a", "1"), (2, "b", "2")]),
    ("\n  \na=1\n", {}, [(3, "a", "1")]),  # blank lines pass
    ("NAME VALUE\na=1", {"skip": lambda line: line.startswith("NAME")}, [(2, "a", "1")]),  # a header skipped
    ("a=1   \n", {"rstrip": True}, [(1, "a", "1")]),  # trailing blanks dropped on request
    ("a=1\r\n", {}, [(1, "a", "1")]),  # a CRLF line end
])
def test_rows_are_the_lines_the_pattern_matches_whole(text: str, kwargs: dict, rows: list) -> None:
    assert [(n, m.group(1), m.group(2)) for n, _, m in row_matches(text, "fmt", ROW, **kwargs)] == rows


@pytest.mark.parametrize(("text", "kwargs", "where"), [
    ("a=1\nb=x\n", {}, (2, "b=x")),
    ("a=1   \n", {}, (1, "a=1   ")),  # trailing blanks are not dropped unless asked
    ("a=1 junk", {}, (1, "a=1 junk")),  # the whole line, not a prefix
    ("NAME VALUE\n", {}, (1, "NAME VALUE")),  # a header nobody skips
    ("a=1\x0b", {}, (1, "a=1\x0b")),  # a line no tool prints (parse.common.tool_line_problem)
])
def test_any_other_line_is_a_parse_error_naming_the_format_and_the_line(text: str, kwargs: dict, where: tuple[int, str]) -> None:
    with pytest.raises(ParseError) as e:
        list(row_matches(text, "fmt", ROW, **kwargs))
    assert (e.value.fmt, e.value.lineno, e.value.line) == ("fmt", *where)
