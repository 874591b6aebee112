"""Tests of pytest_kpr.cluster: the providers (kind with stub tools, existing), the Helm upgrade, profiles, the outside view's route. A package, so that its modules' names cannot meet those of suites/ or of the other
test packages."""
