"""Tests of pytest_kpr.traffic: the probes and the flow meter, as units. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
