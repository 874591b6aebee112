"""Tests of pytest_kpr.testing: the fake cluster and its faults. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
