"""Pure judgements, one module per property: an observation (its type defined beside the judge) and a sourced rule in,
the list of problems out (empty = the property holds)."""

from __future__ import annotations

from typing import Sequence


def holds(problems: Sequence[str], what: str, *, then: str = "") -> None:
    """The one assertion of a suite: the property holds (no problems), or an AssertionError that names it (``what``:
    the property, and which view of it) and lists every problem, separated by "; " (``then``: what follows, e.g. the
    documented way out)."""
    if problems:
        raise AssertionError(f"{what}: {'; '.join(problems)}{then}")
