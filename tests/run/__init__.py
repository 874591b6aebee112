"""Tests of pytest_kpr.run: the run without pytest."""
