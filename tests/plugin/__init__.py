"""Tests of pytest_kpr.plugin: the options and the session, through pytester. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
