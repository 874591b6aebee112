"""Tests of pytest_kpr.k8s: the kubernetes-client implementation against a small API server on loopback. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
