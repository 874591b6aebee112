"""Tests of pytest_kpr.rules: the sourced expectations (datapath, upgrade, kernels, workloads, the lbmodel). A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
