"""The existing-cluster provider: a kubeconfig the user gives, checked before any test runs."""

from __future__ import annotations

import pytest

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}
  name: closed
contexts:
- context: {cluster: closed, user: u}
  name: closed
current-context: closed
users:
- name: u
  user: {token: dummy}
"""

FAKE_API = """
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, Faults

CALLS = []

def pytest_kpr_kube_client(config, kubeconfig, context):
    CALLS.append((str(kubeconfig), context))
    return FakeCluster(FakeConfig(faults=Faults(kpr_disabled={kpr_disabled})))
"""

SUITE = "import pytest\n@pytest.mark.kpr\ndef test_x(kpr_facts, kpr_cluster):\n    assert not kpr_cluster.created\n"


def test_missing_kubeconfig_is_one_clear_line(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(pytester.path))
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["[[]kpr[]]   - no kubeconfig for --kpr-provider=existing*pass --kpr-kubeconfig=PATH*"])


def test_unreachable_api_server_is_one_clear_line(pytester: pytest.Pytester) -> None:
    """Through the real kubernetes client: a closed port is an InfraError, reported as unavailable."""
    cfg = pytester.path / "kubeconfig"
    cfg.write_text(KUBECONFIG)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={cfg}")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["[[]kpr[]]   - the API server of * does not answer: API server https://127.0.0.1:1 unreachable*"])
    assert "Traceback" not in result.stdout.str()


def test_unreachable_api_server_can_skip(pytester: pytest.Pytester) -> None:
    cfg = pytester.path / "kubeconfig"
    cfg.write_text(KUBECONFIG)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={cfg}", "--kpr-if-unavailable=skip")
    result.assert_outcomes(skipped=1)


def test_existing_cluster_with_kpr_is_used_and_not_torn_down(pytester: pytest.Pytester) -> None:
    cfg = pytester.path / "kubeconfig"
    cfg.write_text(KUBECONFIG)
    pytester.makeconftest(FAKE_API.format(kpr_disabled=False))
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={cfg}", "--kpr-context=closed", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["[[]kpr[]] using existing cluster from */kubeconfig (context closed)", "kpr cluster: closed (existing), *"])


def test_existing_cluster_without_kpr_is_refused(pytester: pytest.Pytester) -> None:
    cfg = pytester.path / "kubeconfig"
    cfg.write_text(KUBECONFIG)
    pytester.makeconftest(FAKE_API.format(kpr_disabled=True))
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={cfg}")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*Cilium runs without kube-proxy replacement on *; install it with kubeProxyReplacement=true*"])
    result.assert_outcomes()
