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


@pytest.mark.parametrize(("text", "context", "words"), [
    ("apiVersion: v1\nclusters: [\n  - name: a\n", None, "is not valid YAML (line "),
    ("- just\n- a list\n", None, "is not a kubeconfig (no 'contexts' list)"),
    ("apiVersion: v1\ncontexts:\n- name: a\n  context: {}\n", None, "has no current-context; pass --kpr-context (contexts: a)"),
    ("apiVersion: v1\ncontexts:\n- name: a\n  context: {}\ncurrent-context: a\n", "b", "has no context 'b' (contexts: a)"),
    ("apiVersion: v1\ncontexts:\n- name: a\n  context: {}\ncurrent-context: a\n", None, None),
])
def test_a_bad_kubeconfig_is_one_line_before_any_client_reads_it(tmp_path: Path, text: str, context: str | None, words: str | None) -> None:
    from pytest_kpr.cluster.existing import kubeconfig_problem

    p = tmp_path / "kubeconfig"
    p.write_text(text)
    got = kubeconfig_problem(p, context)
    assert (got is None) if words is None else (got is not None and got.startswith(f"kubeconfig {p} ") and words in got and "\n" not in got), got


def test_a_malformed_kubeconfig_exits_4_in_one_line(pytester: pytest.Pytester) -> None:
    """Not an INTERNALERROR with exit 3 ("provisioning failed"): this machine cannot run the suites as configured."""
    (pytester.path / "kc").write_text("apiVersion: v1\nclusters: [\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.kpr\ndef test_x(kpr_cluster):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={pytester.path / 'kc'}", "-p", "no:cacheprovider")
    assert result.ret == 4
    out = result.stdout.str() + result.stderr.str()
    assert "is not valid YAML (line 3" in out and "Traceback" not in out and "INTERNALERROR" not in out


@pytest.mark.parametrize(("args", "words"), [
    (["--kpr-kubeconfig=/x"], "--kpr-kubeconfig means nothing with --kpr-provider=kind; it is for --kpr-provider=existing"),
    (["--kpr-provider=existing", "--kpr-cluster-name=a"], "--kpr-cluster-name means nothing with --kpr-provider=existing; it is for --kpr-provider=kind"),
    (["--kpr-provider=fake", "--kpr-helm-values=/x"], "--kpr-helm-values means nothing with --kpr-provider=fake; it is for --kpr-provider=kind"),
])
def test_an_option_that_means_nothing_for_the_provider_is_refused(pytester: pytest.Pytester, args: list[str], words: str) -> None:
    result = pytester.runpytest("-m", "kpr", *args)
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"ERROR: pytest-kpr: {words}"])
