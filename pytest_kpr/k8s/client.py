""":class:`RealKube`: :class:`~pytest_kpr.k8s.api.KubeAPI` over the official kubernetes client.

One ``ApiClient`` per cluster, built from a kubeconfig path and context (never the process-global
default configuration). API objects go in and come out as plain dicts.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Sequence

import yaml

from ..core.errors import ApiError, InfraError, Unavailable
from .api import ExecResult, api_version_of

# Status codes that mean "the API server or the network is in trouble": retryable, never a verdict.
_TRANSIENT_HTTP = {429, 500, 502, 503, 504}
#: every request's bound (connect, and each read), seconds: an API server that accepts a connection and never answers
#: is an InfraError ("no answer within the timeout"), never a wait for ever; exec streams have their own (``timeout``)
REQUEST_TIMEOUT = 30.0


def transport_reason(e: BaseException) -> str:
    """The root of a transport failure in a few words, not urllib3's nested retry text: "connection refused", "TLS:
    certificate verify failed", "no answer within the timeout", "name or service not known", ..."""
    import ssl

    from urllib3.exceptions import MaxRetryError, NameResolutionError, ProtocolError, ReadTimeoutError, SSLError
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, NameResolutionError):  # a NewConnectionError by class
            return "the host name does not resolve"
        if isinstance(cur, NewConnectionError):  # a ConnectTimeoutError by class, but its cause says what happened
            nxt_cause = cur.__cause__ or cur.__context__
            if nxt_cause is not None:
                cur = nxt_cause
                continue
        if isinstance(cur, (ReadTimeoutError, ConnectTimeoutError, TimeoutError)):
            return "no answer within the timeout"
        if isinstance(cur, (SSLError, ssl.SSLError)):
            inner = cur.args[0] if cur.args and isinstance(cur.args[0], ssl.SSLError) else cur
            return f"TLS: {getattr(inner, 'reason', None) or ' '.join(str(inner).split())[:120]}".replace("_", " ").lower()
        if isinstance(cur, OSError) and cur.errno is not None and cur.strerror:
            return cur.strerror[0].lower() + cur.strerror[1:]
        if isinstance(cur, ProtocolError) and len(cur.args) > 1 and isinstance(cur.args[1], BaseException):
            cur = cur.args[1]
            continue
        nxt = cur.reason if isinstance(cur, MaxRetryError) else None
        cur = nxt if isinstance(nxt, BaseException) else (cur.__cause__ or cur.__context__)
    return " ".join(str(e).split())[:160]


#: how long a kubeconfig's exec credential plugin (aws eks get-token, gke-gcloud-auth-plugin, ...) may take to answer
EXEC_PLUGIN_TIMEOUT = 60.0


def bound_exec_plugins() -> None:
    """The kubernetes client runs a kubeconfig's exec credential plugin with no time bound (``communicate()``): one that
    waits for a browser login or a dead metadata service hangs the run. Its ``subprocess`` becomes one whose
    ``communicate`` gives up after :data:`EXEC_PLUGIN_TIMEOUT`, ending the plugin (and waiting for it) and saying so in
    the client's own error type. Idempotent; only the client's exec provider sees the change."""
    import subprocess
    import types

    from kubernetes.config import exec_provider
    from kubernetes.config.config_exception import ConfigException

    if getattr(exec_provider.subprocess, "kpr_bounded", False):
        return

    class BoundedPopen(subprocess.Popen):  # type: ignore[type-arg]
        def communicate(self, input: Any = None, timeout: float | None = None) -> Any:  # noqa: A002 - Popen's own name
            try:
                return super().communicate(input, timeout=timeout if timeout is not None else EXEC_PLUGIN_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.kill()
                self.wait()
                cmd = self.args[0] if isinstance(self.args, (list, tuple)) and self.args else self.args
                raise ConfigException(f"exec: the credential plugin {cmd} did not answer within {EXEC_PLUGIN_TIMEOUT:g} s "
                                      "(it was ended); log in with it once by hand, or use a token") from None

    proxy = types.ModuleType("subprocess")
    proxy.__dict__.update({k: v for k, v in vars(subprocess).items() if not k.startswith("__")})
    proxy.Popen = BoundedPopen  # type: ignore[attr-defined]
    proxy.kpr_bounded = True  # type: ignore[attr-defined]
    exec_provider.subprocess = proxy  # type: ignore[attr-defined]


class RealKube:
    def __init__(self, kubeconfig: Path | None, context: str | None = None, request_timeout: float = REQUEST_TIMEOUT):
        from kubernetes import config as kconfig
        from kubernetes.config.config_exception import ConfigException

        bound_exec_plugins()
        self.kubeconfig = kubeconfig
        self.context = context
        try:
            self.api_client = kconfig.new_client_from_config(
                config_file=str(kubeconfig) if kubeconfig else None, context=context, persist_config=False
            )
        except (ConfigException, OSError) as e:
            where = kubeconfig or "the default kubeconfig"
            raise Unavailable(f"cannot load {where}{f' context {context}' if context else ''}: {e}") from None
        self._bound(request_timeout)
        self._dynamic: Any = None
        # The dynamic client caches discovery in a file, by default shared in /tmp across runs and
        # clusters (stale after a cluster is recreated with other CRD versions): keep ours private.
        self._cache_dir = tempfile.mkdtemp(prefix="kpr-discovery-")
        weakref.finalize(self, shutil.rmtree, self._cache_dir, True)

    # -- plumbing ---------------------------------------------------------------------------------

    def _bound(self, seconds: float) -> None:
        """Every request of this client (discovery, get, list, create, patch, delete, logs) without a timeout of its own
        gets ``seconds`` for connecting and for each read (the generated client's default is none: wait for ever)."""
        call_api = self.api_client.call_api

        def bounded(*args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
            return call_api(*args, _request_timeout=_request_timeout if _request_timeout is not None else (seconds, seconds), **kwargs)

        self.api_client.call_api = bounded  # type: ignore[method-assign]

    @property
    def dynamic(self) -> Any:
        if self._dynamic is None:
            from kubernetes import dynamic

            cache = os.path.join(self._cache_dir, "discovery.json")
            self._dynamic = self._call(lambda: dynamic.DynamicClient(self.api_client, cache_file=cache))
        return self._dynamic

    def _resource(self, kind: str, api_version: str | None = None) -> Any:
        return self._call(lambda: self.dynamic.resources.get(api_version=api_version or api_version_of(kind), kind=kind))

    def _call(self, fn: Any) -> Any:
        """Run an API call; transport failures become :class:`InfraError`, other API errors propagate."""
        from kubernetes.client.exceptions import ApiException
        from kubernetes.dynamic.exceptions import DynamicApiError
        from urllib3.exceptions import HTTPError

        try:
            return fn()
        except (ApiException, DynamicApiError) as e:
            status = getattr(e, "status", None)
            if status in _TRANSIENT_HTTP:
                raise InfraError(f"API server answered {status}: {getattr(e, 'reason', e)}") from e
            raise ApiError(int(status or 0), str(getattr(e, "reason", "")), _api_message(e)) from e
        except (HTTPError, OSError) as e:
            host = self.api_client.configuration.host
            raise InfraError(f"API server {host} unreachable: {transport_reason(e)}") from e

    @staticmethod
    def _to_dict(obj: Any) -> dict[str, Any]:
        return obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)

    # -- KubeAPI ----------------------------------------------------------------------------------

    def server_version(self, timeout: float = 30.0) -> str:
        """``GET /version``'s gitVersion, within ``timeout`` seconds (connect and read each). An answer that is not a
        Kubernetes version (another server at the URL) is an :class:`ApiError` with status 0 saying what came back."""
        from kubernetes import client

        try:
            info = self._call(lambda: client.VersionApi(self.api_client).get_code(_request_timeout=(timeout, timeout)))
        except (ValueError, TypeError, AttributeError) as e:  # the client could not read the answer as a VersionInfo
            raise ApiError(0, "NotKubernetes", f"GET /version answered something that is not a Kubernetes version ({type(e).__name__})") from None
        version = getattr(info, "git_version", None)
        if not isinstance(version, str) or not version.startswith("v"):
            raise ApiError(0, "NotKubernetes", f"GET /version answered no gitVersion (got {str(version)[:40]!r})")
        return version

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        res = self._resource(kind)
        try:
            return self._to_dict(self._call(lambda: res.get(name=name, namespace=namespace)))
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def list(self, kind: str, namespace: str | None = None, label_selector: str | None = None) -> list[dict[str, Any]]:
        res = self._resource(kind)
        out = self._call(lambda: res.get(namespace=namespace, label_selector=label_selector))
        items = self._to_dict(out).get("items") or []
        for item in items:  # list items come without apiVersion/kind
            item.setdefault("apiVersion", api_version_of(kind))
            item.setdefault("kind", kind)
        return items

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = obj["kind"]
        res = self._resource(kind, obj.get("apiVersion"))
        ns = obj.get("metadata", {}).get("namespace")
        return self._to_dict(self._call(lambda: res.create(body=obj, namespace=ns)))

    def patch(self, kind: str, name: str, namespace: str | None, patch: dict[str, Any]) -> dict[str, Any]:
        res = self._resource(kind)
        return self._to_dict(
            self._call(
                lambda: res.patch(
                    name=name, namespace=namespace, body=patch, content_type="application/merge-patch+json"
                )
            )
        )

    def delete(self, kind: str, name: str, namespace: str | None = None, grace_period_seconds: int | None = None) -> None:
        """Delete an object; ``grace_period_seconds`` overrides a pod's terminationGracePeriodSeconds (0: at once)."""
        res = self._resource(kind)
        body = {"gracePeriodSeconds": grace_period_seconds} if grace_period_seconds is not None else None
        try:
            self._call(lambda: res.delete(name=name, namespace=namespace, body=body))
        except ApiError as e:
            if e.status != 404:
                raise

    def logs(self, namespace: str, pod: str, container: str | None = None) -> str:
        from kubernetes import client

        core = client.CoreV1Api(self.api_client)
        if container:
            return str(self._call(lambda: core.read_namespaced_pod_log(pod, namespace, container=container)))
        return str(self._call(lambda: core.read_namespaced_pod_log(pod, namespace)))

    def exec(
        self,
        namespace: str,
        pod: str,
        argv: Sequence[str],
        container: str | None = None,
        timeout: float = 60.0,
    ) -> ExecResult:
        """Run ``argv`` in a pod through the exec websocket. Exit code, stdout and stderr come back whole.

        A command that is not found in the image returns 127 (as a shell would), so callers can fall
        back (``cilium-dbg`` -> ``cilium``). A stream that does not finish in ``timeout`` is an InfraError.
        """
        from kubernetes import client
        from kubernetes.stream import stream
        from kubernetes.stream.ws_client import ERROR_CHANNEL

        core = client.CoreV1Api(self.api_client)
        kwargs: dict[str, Any] = dict(
            command=list(argv), stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False
        )
        if container:
            kwargs["container"] = container
        where = f"pod {namespace}/{pod}"
        try:
            resp = stream(core.connect_get_namespaced_pod_exec, pod, namespace, **kwargs)
        except Exception as e:  # the websocket library raises several unrelated types
            raise InfraError(f"exec into {where} failed: {e}") from e
        out: list[str] = []
        err: list[str] = []
        deadline = time.monotonic() + timeout
        try:
            while resp.is_open():
                resp.update(timeout=1)
                if resp.peek_stdout():
                    out.append(resp.read_stdout())
                if resp.peek_stderr():
                    err.append(resp.read_stderr())
                if time.monotonic() > deadline:
                    raise InfraError(f"exec `{' '.join(argv)}` in {where} did not finish within {timeout:.0f}s")
            out.append(resp.read_stdout() or "")
            err.append(resp.read_stderr() or "")
            status_text = resp.read_channel(ERROR_CHANNEL)
        except InfraError:
            raise
        except Exception as e:
            raise InfraError(f"exec stream to {where} broke: {e}") from e
        finally:
            resp.close()
        rc, message = _exit_status(status_text)
        stderr = "".join(err)
        if message and rc != 0 and message not in stderr:
            stderr = (stderr + "\n" + message).strip()
        return ExecResult(tuple(argv), rc, "".join(out), stderr, where)


def _api_message(e: Exception) -> str:
    body = getattr(e, "body", None) or getattr(e, "summary", lambda: "")()
    try:
        return str(json.loads(body).get("message", body))
    except (TypeError, ValueError):
        return str(body or e)


def _exit_status(text: str) -> tuple[int, str]:
    """Decode the exec error channel: ``{"status": "Success"}`` or a Failure with an ExitCode cause."""
    if not text:
        return 0, ""
    try:
        status = json.loads(text)
    except ValueError:
        status = yaml.safe_load(text)
    if status.get("status") == "Success":
        return 0, ""
    message = str(status.get("message", ""))
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message", 1)), message
    if "executable file not found" in message or "no such file or directory" in message:
        return 127, message
    return 126, message
