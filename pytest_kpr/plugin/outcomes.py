"""Outcomes of a kpr test that the plugin treats specially: a skip for want of the outside view.

A module of its own, importing only pytest: the suites raise it, the plugin judges it (plugin.py), and neither imports
the other for it.
"""

from __future__ import annotations

from typing import NoReturn

import pytest


class NoOutsideView(pytest.skip.Exception):  # type: ignore[name-defined,misc]
    """The skip of a test that needs the outside view (the runner as a client outside the cluster) and has none. The
    plugin turns it into a failure when the outside view is required (--kpr-require-outside; by default under CI on a
    cluster the run creates), so a CI job that forgot CAP_NET_RAW cannot pass with the outside plane untested."""

    # reported as pytest's own skip ("SKIPPED ... no outside view: ..."), as pytest names its Skipped
    __module__ = "builtins"
    __qualname__ = "Skipped"


def no_outside_view(reason: str) -> NoReturn:
    """Skip -- or, when the outside view is required, fail -- a test that needs the outside view, naming why it has none."""
    raise NoOutsideView(f"no outside view: {reason}", _use_item_location=True)
