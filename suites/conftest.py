"""Composed fixtures shared by the conformance suites. Everything else comes from the pytest-kpr plugin."""
