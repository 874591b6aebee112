"""The fault table, a module per property: tests/faults/<suite>.py holds the rows of the faults that break that suite's
property (each fault's ``property=`` in pytest_kpr.testing), whichever other suites a row declares too.
tests/test_faults.py runs them; scripts/gen_docs.py reads them (as literals) for the suites page."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def modules() -> list[str]:
    """The property modules, by name (each a suite's name without ``test_``)."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def fault_table() -> list[tuple[str, tuple[str, ...], str, set[str], list[str]]]:
    """Every row, module by module in name order, each module's rows in file order."""
    rows: list[Any] = []
    for name in modules():
        rows.extend(importlib.import_module(f"{__name__}.{name}").ROWS)
    return rows
