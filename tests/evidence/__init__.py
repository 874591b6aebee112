"""Tests of pytest_kpr.evidence: the run record, kpr matrix and its gate. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
