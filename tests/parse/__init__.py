"""Tests of pytest_kpr.parse: the parsers, on authentic fixtures, hostile input and properties. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
