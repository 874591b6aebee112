"""The ``kpr`` command (the ``kpr`` console script is ``pytest_kpr.cli:main``)."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
