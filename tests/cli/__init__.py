"""Tests of pytest_kpr.cli: the kpr command. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
