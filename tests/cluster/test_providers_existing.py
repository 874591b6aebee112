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
    result.stdout.fnmatch_lines(["[[]kpr[]]   - the API server of * does not answer GET /version (waited at most 15 s): API server https://127.0.0.1:1 unreachable*"])
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
    # hostile YAML: an alias bomb (nine levels of nine: 387 million entries once expanded) and a key given twice
    ("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
     + "contexts: []\n", None, "more than 16 aliases"),
    ("apiVersion: v1\ncontexts:\n- name: a\n  context: {}\ncurrent-context: a\ncurrent-context: b\n", None,
     "is not one every client reads the same way (line 6: the key 'current-context' is given twice)"),
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


class _Answers:
    """A loopback HTTP server that answers every request the same way (what a refusing API server or another web server
    does). Loopback only: nothing leaves the machine."""

    def __init__(self, code: int, body: bytes, content_type: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class H(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def kubeconfig(self, path: "object") -> None:
        from pathlib import Path

        Path(str(path)).write_text(KUBECONFIG.replace("https://127.0.0.1:1', insecure-skip-tls-verify: true",
                                                      f"http://127.0.0.1:{self.server.server_address[1]}'"))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _status(code: int, reason: str, message: str) -> bytes:
    import json

    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message, "code": code}).encode()


@pytest.mark.parametrize(("code", "body", "ctype", "line"), [
    (401, _status(401, "Unauthorized", "Unauthorized"), "application/json",
     "*the API server of * refused its credentials (401 Unauthorized: Unauthorized); renew the token or certificate*"),
    (403, _status(403, "Forbidden", 'forbidden: User "system:anonymous" cannot get path "/version"'), "application/json",
     "*the API server of * denied reading /version (403 Forbidden: forbidden: User \"system:anonymous\" cannot get path \"/version\")*"),
    (404, b"<html>not found</html>", "text/html", "*the server of * is not a Kubernetes API: GET /version answered 404 *check the cluster's server URL*"),
    (200, b"<html>welcome</html>", "text/html", "*the server of * is not a Kubernetes API: GET /version *check the cluster's server URL*"),
    (200, b'{"major": "1"}', "application/json", "*the server of * is not a Kubernetes API: GET /version answered something that is not a Kubernetes version*"),
], ids=["401", "403", "404-html", "200-html", "200-json-without-version"])
def test_a_refusing_or_foreign_api_is_one_line_and_exit_4(pytester: pytest.Pytester, code: int, body: bytes, ctype: str, line: str) -> None:
    """Through the real kubernetes client: every refusal of the first request is one line in the plugin's words, exit 4
    (the machine cannot run the suites), no traceback, and cluster.json records the preflight as failed."""
    import json

    server = _Answers(code, body, ctype)
    try:
        cfg = pytester.path / "kubeconfig"
        server.kubeconfig(cfg)
        pytester.makepyfile(SUITE)
        result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={cfg}", "--kpr-artifacts=art")
    finally:
        server.close()
    assert result.ret == 4, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines([line])
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    (record,) = (pytester.path / "art").rglob("cluster.json")
    (pre,) = [p for p in json.loads(record.read_text())["phases"] if p["phase"] == "preflight"]
    assert pre["outcome"] == "failed" and pre["error"]


def test_a_crash_in_the_plugin_is_exit_70_never_a_setup_failure(pytester: pytest.Pytester) -> None:
    """An exception pytest-kpr did not expect (here from the client's first call) is its own bug: one line, exit status
    70 (not 3, the cluster could not be set up; not 4, the machine cannot run the suites), the traceback in crash.txt
    and the phase recorded as crashed -- never as ok."""
    import json

    cfg = pytester.path / "kubeconfig"
    cfg.write_text(KUBECONFIG)
    pytester.makeconftest("""
class Broken:
    def server_version(self, timeout=None):
        raise RuntimeError("a bug in the client wrapper")

def pytest_kpr_kube_client(config, kubeconfig, context):
    return Broken()
""")
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={cfg}", "--kpr-artifacts=art")
    assert result.ret == 70, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*pytest-kpr: internal error during preflight (RuntimeError: a bug in the client wrapper): a bug in "
                                 "pytest-kpr, not a verdict on this machine or cluster (exit status 70); traceback in *crash.txt*"])
    assert "INTERNALERROR" not in result.stdout.str()
    (record,) = (pytester.path / "art").rglob("cluster.json")
    (pre,) = [p for p in json.loads(record.read_text())["phases"] if p["phase"] == "preflight"]
    assert (pre["outcome"], pre["error"]) == ("failed", "crashed: RuntimeError: a bug in the client wrapper")
    (crash,) = (pytester.path / "art").rglob("crash.txt")
    assert "RuntimeError: a bug in the client wrapper" in crash.read_text()


@pytest.mark.parametrize(("make", "words"), [
    (lambda d: d / "nope", "--kpr-kubeconfig */nope does not exist"),
    (lambda d: (d / "dir").mkdir() or d / "dir", "--kpr-kubeconfig */dir is a directory"),
])
def test_a_kubeconfig_that_was_passed_but_is_missing_says_so(pytester: pytest.Pytester, make: object, words: str) -> None:
    path = make(pytester.path)  # type: ignore[operator]
    pytester.makepyfile(SUITE)
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=existing", f"--kpr-kubeconfig={path}")
    assert result.ret == 4
    result.stdout.fnmatch_lines([f"[[]kpr[]]   - {words}"])
    assert "pass --kpr-kubeconfig" not in result.stdout.str()
