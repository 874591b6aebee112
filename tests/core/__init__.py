"""Tests of pytest_kpr.core: the clock and the waits. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
