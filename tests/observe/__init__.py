"""Tests of pytest_kpr.observe: the agent and node handles, batched reads, the lab's jigs, against the fake. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
