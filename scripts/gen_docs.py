#!/usr/bin/env python3
"""Regenerate the documentation blocks that are built from the code: the README's suite table, from each suite's
contract (``pytest.mark.kpr(property=..., evidence=...)``) and the first paragraph of its docstring.

    python scripts/gen_docs.py          # rewrite the blocks in place
    python scripts/gen_docs.py --check  # exit 1 and name the stale file when a block differs (tests/test_suite_contract.py)
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- generated: suites (scripts/gen_docs.py) -->", "<!-- end generated: suites -->"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def suites_table(suites_dir: Path = REPO / "suites") -> str:
    """The README's suite table: one row per suite module, in file order."""
    from pytest_kpr.plugin.markers import suites_in

    rows = ["| suite | property | what it proves | evidence |", "|---|---|---|---|"]
    for name, (suite, doc) in suites_in(suites_dir).items():
        summary = doc.strip().split("\n\n", 1)[0]
        summary = _cell(summary)
        last = " Runs after every other suite." if suite.last else ""
        rows.append(f"| `{name}` | {_cell(suite.property)} | {summary}{last} | {', '.join(f'`{e}`' for e in suite.evidence)} |")
    return "\n".join(rows)


def render(readme: str) -> str:
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    return readme[:start] + "\n" + suites_table() + "\n" + readme[end:]


def main(argv: list[str]) -> int:
    path = REPO / "README.md"
    old = path.read_text()
    new = render(old)
    if "--check" in argv:
        if new != old:
            print(f"{path.relative_to(REPO)}: the generated suite table is stale; run python scripts/gen_docs.py", file=sys.stderr)
            return 1
        return 0
    if new != old:
        path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main(sys.argv[1:]))
