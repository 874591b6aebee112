"""RealKube (the kubernetes-client implementation of KubeAPI) against a small API server on loopback.

The server speaks just enough of the Kubernetes API for the dynamic client: /version, discovery
(/api, /apis, /api/v1, /apis/apps/v1, ...) and get/list/create/merge-patch/delete of namespaced and
cluster-scoped objects, plus pod logs and error statuses. The exec websocket is not served here (it is
exercised only against real clusters)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlparse

import pytest

from pytest_kpr.core.errors import ApiError, InfraError

RESOURCES = {
    ("", "v1"): [("namespaces", "Namespace", False), ("pods", "Pod", True), ("services", "Service", True), ("nodes", "Node", False)],
    ("apps", "v1"): [("deployments", "Deployment", True)],
    ("discovery.k8s.io", "v1"): [("endpointslices", "EndpointSlice", True)],
    ("cilium.io", "v2"): [("ciliumendpoints", "CiliumEndpoint", True), ("ciliumloadbalancerippools", "CiliumLoadBalancerIPPool", False)],
}


class Api(BaseHTTPRequestHandler):
    store: dict[tuple[str, str | None, str], dict[str, Any]] = {}
    requests: list[str] = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message, "code": code})

    def _route(self) -> tuple[str, str | None, str | None, str | None, str] | None:
        """(resource plural, namespace, name, subresource, apiVersion) for a resource path."""
        parts = urlparse(self.path).path.strip("/").split("/")
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        ns = None
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
            ns, rest = rest[1], rest[2:]
        if not rest:
            return None
        plural, name, sub = rest[0], rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None
        return plural, ns, name, sub, f"{group}/{version}".lstrip("/")

    def _exec(self) -> None:
        """The exec websocket (v4.channel.k8s.io): one binary frame per channel message, then close.
        Commands: `say WORDS` (stdout), `err WORDS` (stderr), `exit N`, `missing` (not in the image)."""
        import base64
        import hashlib

        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n").encode())

        def frame(channel: int, data: bytes) -> None:
            payload = bytes([channel]) + data
            n = len(payload)
            head = bytes([0x82]) + (bytes([n]) if n < 126 else bytes([126]) + n.to_bytes(2, "big"))
            self.wfile.write(head + payload)

        argv = parse_qs(urlparse(self.path).query).get("command", [])
        if argv[:1] == ["say"]:
            frame(1, (" ".join(argv[1:]) + "\n").encode())
            frame(3, json.dumps({"metadata": {}, "status": "Success"}).encode())
        elif argv[:1] == ["err"]:
            frame(2, (" ".join(argv[1:]) + "\n").encode())
            frame(3, json.dumps({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode", "message": "command terminated with non-zero exit code",
                                 "details": {"causes": [{"reason": "ExitCode", "message": "1"}]}}).encode())
        elif argv[:1] == ["exit"]:
            frame(3, json.dumps({"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode", "message": "command terminated with non-zero exit code",
                                 "details": {"causes": [{"reason": "ExitCode", "message": argv[1]}]}}).encode())
        else:
            frame(3, json.dumps({"metadata": {}, "status": "Failure", "message": f'exec: "{argv[0]}": executable file not found in $PATH',
                                 "reason": "InternalError"}).encode())
        self.wfile.write(bytes([0x88, 0x02, 0x03, 0xE8]))  # close, 1000
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self.requests.append(f"GET {self.path}")
        path = urlparse(self.path).path.rstrip("/")
        if path.endswith("/exec") and self.headers.get("Upgrade", "").lower() == "websocket":
            return self._exec()
        if path == "/version":
            return self._send(200, {"major": "1", "minor": "34", "gitVersion": "v1.34.0", "gitCommit": "0123456", "gitTreeState": "clean",
                                    "buildDate": "2025-08-27T00:00:00Z", "goVersion": "go1.24.6", "compiler": "gc", "platform": "linux/amd64"})
        if path == "/api":
            return self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if path == "/apis":
            groups = [{"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}], "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}}
                      for (g, v) in RESOURCES if g]
            return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        for (g, v), res in RESOURCES.items():
            if path == (f"/apis/{g}/{v}" if g else f"/api/{v}"):
                return self._send(200, {"kind": "APIResourceList", "groupVersion": f"{g}/{v}".lstrip("/"), "resources": [
                    {"name": p, "singularName": k.lower(), "namespaced": nsd, "kind": k, "verbs": ["create", "delete", "get", "list", "patch", "update"]}
                    for p, k, nsd in res] + [{"name": f"{p}/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]} for p, k, nsd in res if p == "pods"]})
        r = self._route()
        if r is None:
            return self._status(404, "NotFound", f"no route {path}")
        plural, ns, name, sub, _ = r
        if sub == "log":
            obj = self.store.get((plural, ns, name or ""))
            if obj is None:
                return self._status(404, "NotFound", f'pods "{name}" not found')
            data = obj.get("_log", "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if name is None:
            sel = parse_qs(urlparse(self.path).query).get("labelSelector", [""])[0]
            items = [o for (p, n, _), o in sorted(self.store.items()) if p == plural and (ns is None or n == ns)
                     and all(o["metadata"].get("labels", {}).get(k) == v for k, v in (t.split("=") for t in sel.split(",") if t))]
            return self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items})
        obj = self.store.get((plural, ns, name))
        if obj is None:
            return self._status(404, "NotFound", f'{plural} "{name}" not found')
        return self._send(200, obj)

    def _body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

    def do_POST(self) -> None:  # noqa: N802
        self.requests.append(f"POST {self.path}")
        r = self._route()
        assert r is not None
        plural, ns, _, _, _ = r
        obj = self._body()
        key = (plural, ns, obj["metadata"]["name"])
        if key in self.store:
            return self._status(409, "AlreadyExists", f'{plural} "{key[2]}" already exists')
        if obj["metadata"]["name"] == "invalid":
            return self._status(422, "Invalid", 'Service "invalid" is invalid: spec.ports[0].nodePort: Invalid value: 30780: provided port is already allocated')
        self.store[key] = obj
        return self._send(201, obj)

    def do_PATCH(self) -> None:  # noqa: N802
        self.requests.append(f"PATCH {self.path} {self.headers.get('Content-Type')}")
        r = self._route()
        assert r is not None
        plural, ns, name, _, _ = r
        obj = self.store.get((plural, ns, name or ""))
        if obj is None:
            return self._status(404, "NotFound", f'{plural} "{name}" not found')

        def merge(a: Any, b: Any) -> Any:
            if not isinstance(b, dict):
                return b
            a = dict(a) if isinstance(a, dict) else {}
            for k, v in b.items():
                if v is None:
                    a.pop(k, None)
                else:
                    a[k] = merge(a.get(k), v)
            return a

        self.store[(plural, ns, name or "")] = merge(obj, self._body())
        return self._send(200, self.store[(plural, ns, name or "")])

    def do_DELETE(self) -> None:  # noqa: N802
        self.requests.append(f"DELETE {self.path}")
        r = self._route()
        assert r is not None
        plural, ns, name, _, _ = r
        if self.store.pop((plural, ns, name or ""), None) is None:
            return self._status(404, "NotFound", f'{plural} "{name}" not found')
        return self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})


def kubeconfig(path: Path, server: str, name: str, user: str = "{token: dummy}") -> Path:
    """A one-context kubeconfig at ``path`` (context, cluster and the user ``u`` as given)."""
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- cluster: {{server: '{server}'}}
  name: {name}
contexts:
- context: {{cluster: {name}, user: u}}
  name: {name}
current-context: {name}
users:
- name: u
  user: {user}
""")
    return path


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Path]:
    Api.store = {}
    Api.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    cfg = kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{server.server_address[1]}", "loop")
    try:
        yield cfg
    finally:
        server.shutdown()
        server.server_close()


def test_realkube_round_trips_objects_through_the_dynamic_client(api: Path) -> None:
    from pytest_kpr.k8s.client import RealKube

    kube = RealKube(api, "loop")
    assert kube.server_version() == "v1.34.0"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kpr-x", "labels": {"app.kubernetes.io/managed-by": "pytest-kpr"}}})
    assert kube.get("Namespace", "kpr-x")["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "pytest-kpr"}
    kube.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "kpr-x", "labels": {"app": "web"}}, "spec": {"replicas": 2}})
    kube.patch("Deployment", "web", "kpr-x", {"spec": {"replicas": 4}})
    assert kube.get("Deployment", "web", "kpr-x")["spec"]["replicas"] == 4
    assert any("PATCH /apis/apps/v1/namespaces/kpr-x/deployments/web application/merge-patch+json" == r for r in Api.requests)
    (dep,) = kube.list("Deployment", "kpr-x", "app=web")
    assert (dep["kind"], dep["apiVersion"], dep["metadata"]["name"]) == ("Deployment", "apps/v1", "web")
    assert kube.list("Deployment", "kpr-x", "app=nope") == []
    pool = {"apiVersion": "cilium.io/v2", "kind": "CiliumLoadBalancerIPPool", "metadata": {"name": "p"}, "spec": {"blocks": []}}
    kube.create(pool)
    assert kube.get("CiliumLoadBalancerIPPool", "p")["spec"] == {"blocks": []}
    kube.delete("Deployment", "web", "kpr-x")
    assert kube.get("Deployment", "web", "kpr-x") is None
    kube.delete("Deployment", "web", "kpr-x")  # deleting what is gone is not an error
    cache_dir = kube._cache_dir
    assert Path(cache_dir, "discovery.json").exists()
    del kube
    import gc

    gc.collect()
    assert not Path(cache_dir).exists(), "the private discovery cache is removed with the client"


def test_realkube_turns_api_refusals_into_api_errors_and_reads_logs(api: Path) -> None:
    from pytest_kpr.k8s.client import RealKube

    kube = RealKube(api, "loop")
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    with pytest.raises(ApiError) as e:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    assert e.value.status == 409 and "already exists" in e.value.message
    with pytest.raises(ApiError) as e:
        kube.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "invalid", "namespace": "t"}, "spec": {}})
    assert e.value.status == 422 and "provided port is already allocated" in e.value.message
    with pytest.raises(ApiError) as e:
        kube.patch("Service", "nope", "t", {"metadata": {"labels": {"a": "b"}}})
    assert e.value.status == 404
    Api.store[("pods", "t", "holder")] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "holder", "namespace": "t"}, "_log": '{"event": "connected"}\n'}
    assert kube.logs("t", "holder", "probe") == '{"event": "connected"}\n'


def test_realkube_reports_a_dead_api_server_as_infra_error(api: Path, tmp_path: Path) -> None:
    from pytest_kpr.k8s.client import RealKube

    dead = tmp_path / "dead"
    dead.write_text(api.read_text().replace("http://127.0.0.1:", "http://127.0.0.1:1#"))
    with pytest.raises(InfraError, match="unreachable"):
        RealKube(dead, "loop").server_version()


def test_realkube_exec_returns_output_exit_codes_and_127_for_a_missing_binary(api: Path) -> None:
    """The exec websocket end to end: stdout, stderr, the exit code from the error channel, and a
    command missing from the image as 127 (what the agent's cilium-dbg -> cilium fallback relies on)."""
    from pytest_kpr.k8s.client import RealKube

    kube = RealKube(api, "loop")
    ok = kube.exec("kube-system", "cilium-x", ["say", "hello", "agent"], container="cilium-agent", timeout=10)
    assert (ok.returncode, ok.stdout, ok.where) == (0, "hello agent\n", "pod kube-system/cilium-x")
    err = kube.exec("kube-system", "cilium-x", ["err", "boom"], timeout=10)
    assert (err.returncode, err.stderr.splitlines()[0]) == (1, "boom")
    assert kube.exec("kube-system", "cilium-x", ["exit", "42"], timeout=10).returncode == 42
    missing = kube.exec("kube-system", "cilium-x", ["cilium-dbg", "version"], timeout=10)
    assert missing.returncode == 127 and "executable file not found" in missing.stderr
    assert any("/api/v1/namespaces/kube-system/pods/cilium-x/exec?" in r and "container=cilium-agent" in r for r in Api.requests)


def test_an_api_that_never_answers_is_an_infra_error_within_the_bound(tmp_path: Path) -> None:
    """A server that accepts the connection and never answers: server_version gives up after its timeout (the preflight's
    bound on the first request) with an InfraError, which the preflight reports as one line."""
    import socket
    import time

    from pytest_kpr.k8s.client import RealKube

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    cfg = kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{listener.getsockname()[1]}", "mute")
    try:
        kube = RealKube(cfg, "mute")
        start = time.monotonic()
        with pytest.raises(InfraError, match="unreachable"):
            kube.server_version(timeout=0.3)
        # the bound holds: 0.3 s for the read, plus generous slack for a loaded runner (no retry may stretch it to minutes)
        assert time.monotonic() - start < 20
    finally:
        listener.close()


def _chained(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


def _cases() -> list[Any]:
    import ssl

    from urllib3.exceptions import MaxRetryError, NameResolutionError, NewConnectionError, ProtocolError, ReadTimeoutError, SSLError

    refused = _chained(NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused"),  # type: ignore[arg-type]
                       ConnectionRefusedError(111, "Connection refused"))
    cert = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    cert.reason = "CERTIFICATE_VERIFY_FAILED"  # type: ignore[attr-defined]
    return [
        (MaxRetryError(None, "/version", refused), "connection refused"),  # type: ignore[arg-type]
        (MaxRetryError(None, "/version", ReadTimeoutError(None, "/version", "Read timed out.")), "no answer within the timeout"),  # type: ignore[arg-type]
        (MaxRetryError(None, "/version", SSLError(cert)), "tls: certificate verify failed"),  # type: ignore[arg-type]
        (MaxRetryError(None, "/version", NameResolutionError("nowhere.invalid", None, OSError("x"))), "the host name does not resolve"),  # type: ignore[arg-type]
        (ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset by peer")), "connection reset by peer"),
        (OSError(113, "No route to host"), "no route to host"),
        (ValueError("something\nelse  entirely"), "something else entirely"),
    ]


@pytest.mark.parametrize(("error", "words"), _cases())
def test_a_transport_failure_is_named_by_its_root_not_urllib3s_text(error: BaseException, words: str) -> None:
    from pytest_kpr.k8s.client import transport_reason

    assert transport_reason(error) == words


def test_an_exec_credential_plugin_that_never_answers_is_ended_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """A kubeconfig whose user runs an exec plugin that hangs (waiting for a browser login): the client gives up after the
    bound, the plugin process is ended (nothing left behind), and the error is one line naming the plugin."""
    import os

    from pytest_kpr.core.errors import Unavailable
    from pytest_kpr.k8s import client

    monkeypatch.setattr(client, "EXEC_PLUGIN_TIMEOUT", 0.5)
    marker = f"31.{os.getpid()}"
    plugin = ("\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: sleep\n"
              f"      args: [\"{marker}\"]\n      interactiveMode: Never")
    cfg = kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1", "c", plugin)
    import logging
    import time

    start = time.monotonic()
    with caplog.at_level(logging.ERROR):
        try:
            client.RealKube(cfg, "c").server_version(timeout=1)
        except (Unavailable, InfraError, ApiError):
            pass  # the client goes on without credentials; what matters here is that it went on
    assert time.monotonic() - start < 30  # not the plugin's 31 s: the bound held (generous slack for a loaded runner)
    assert "the credential plugin sleep did not answer within 0.5 s (it was ended)" in caplog.text, caplog.text
    left = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                    left.append(pid)
            except OSError:
                pass
    assert not left, f"the plugin outlived the error: {left}"
