"""The random tokens the suites put in their requests (``?kpr=<token>``, a salt), from one source the run can record.

A suite calls :func:`token` (``pytest_kpr.suite.token``) instead of ``secrets.token_hex``: the run installs a source
that records each token it hands out beside the requests that carry it (pytest_kpr.run.recording), so that a replay of
the recording can hand out the same ones. Without a run, :func:`secrets.token_hex`.
"""

from __future__ import annotations

import secrets
from typing import Callable

_source: Callable[[int], str] = secrets.token_hex


def token(nbytes: int = 6) -> str:
    """``nbytes`` random bytes as hex, from the installed source."""
    return _source(nbytes)


def install(source: Callable[[int], str] | None) -> None:
    """Hand out tokens from ``source`` (None: :func:`secrets.token_hex` again)."""
    global _source
    _source = source or secrets.token_hex
