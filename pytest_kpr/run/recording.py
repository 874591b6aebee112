"""Every run is a recording: each request the run makes of the cluster through its seams, and the answer, in order.

The seams are the ones every call already passes (the session wraps them where it counts the cost): the Kubernetes API
client (``get``, ``list``, ``create``, ``patch``, ``delete``, ``exec``, ``logs``, ``server_version``), the provider's node
commands, and the outside view's requests from the runner. Each entry carries its place in the order, the run's clock
(virtual on the fake, wall time otherwise), the test that made it (None between tests) and the seam; a request that
collects a failure's bundle is marked ``"diag": true``:

    {"seq": 12, "t": 3.5, "test": "suites/test_nodeport.py::test_x", "seam": "kube", "op": "get",
     "args": {...}, "answer": ...}            (or "error": {"type": ..., "message": ...} for a call that raised)

Bounded: an answer over :data:`ANSWER_CAP` bytes (its JSON) keeps its head and says how long it was; after
:data:`TOTAL_CAP` bytes the recording stops, and its last line says so (``{"cap": "total", ...}``). Redacted before it
is kept (:func:`redact`, the filter of pytest_kpr.core.redact that every evidence file goes through too): a Secret's and a
ConfigMap's data, env values and annotations outside Cilium's and the suites' own are never kept verbatim, and
credentials in text (PEM, JWTs, Authorization headers, URL credentials, ``key: value`` pairs naming one) are replaced. Written once, compressed, at the end of the run beside the evidence
(``recording.jsonl.gz``; a pytest-xdist worker's ``recording-<worker>.jsonl.gz``). Its first line is the run's meta
(``{"meta": {"recording": 1, "run_id": ..., ...}}``), and the random tokens the suites put in their requests are
recorded as requests of the ``run`` seam (core.tokens), so that a replay can ask exactly the same.
"""

from __future__ import annotations

import gzip
import json
import secrets
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from ..core.redact import REDACTED, clean, redact_text

#: an answer (its JSON) longer than this keeps its first ANSWER_HEAD characters
ANSWER_CAP = 4 * 1024 * 1024
ANSWER_HEAD = 64 * 1024
#: the recording stops after this many bytes of JSON lines (before compression)
TOTAL_CAP = 64 * 1024 * 1024


def redact(value: Any) -> Any:
    """``value`` as a recording keeps it (:func:`pytest_kpr.core.redact.clean`: allow-listed free-form fields, credentials
    replaced). A new object; ``value`` is not changed."""
    return clean(value)


class Recorder:
    """The run's recording, in memory until :meth:`dump` (bounded by :data:`TOTAL_CAP`)."""

    def __init__(self, now: Callable[[], float], test: Callable[[], str | None], *, answer_cap: int = ANSWER_CAP,
                 total_cap: int = TOTAL_CAP, diagnostic: Callable[[], bool] = lambda: False):
        """``diagnostic``: whether a request collects a failure's bundle now (its entry is marked ``"diag": true``)."""
        self._now, self._test, self._diagnostic = now, test, diagnostic
        self.answer_cap, self.total_cap = answer_cap, total_cap
        self.lines: list[str] = []
        self.size = 0
        self.seq = 0
        self.capped: dict[str, Any] | None = None
        #: what a replay needs to ask the same requests (the run's id, its seed, its families...): the first line
        self.meta: dict[str, Any] = {}

    def _answer(self, answer: Any) -> str:
        """The answer's JSON, redacted; over the cap, its head and length."""
        text = json.dumps(clean(answer))
        if len(text) <= self.answer_cap:
            return text
        return json.dumps({"truncated": True, "bytes": len(text), "head": text[:ANSWER_HEAD]})

    def add(self, seam: str, op: str, args: dict[str, Any], *, answer: Any = None, error: BaseException | None = None) -> None:
        self.seq += 1
        if self.capped is not None:
            self.capped["dropped"] += 1
            return
        entry: dict[str, Any] = {"seq": self.seq, "t": round(self._now(), 6), "test": self._test(), "seam": seam, "op": op,
                                 "args": clean(args)}
        if self._diagnostic():
            entry["diag"] = True
        if error is not None:
            entry["error"] = {"type": type(error).__name__, "message": redact_text(str(error))[:ANSWER_HEAD],
                              **{k: getattr(error, k) for k in ("status", "reason") if isinstance(getattr(error, k, None), (int, str))}}
            line = json.dumps(entry)
        else:  # the answer's JSON made once (its own key order kept: it is part of its shape, run.shapes)
            line = json.dumps(entry)[:-1] + ', "answer": ' + self._answer(answer) + "}"
        if self.size + len(line) + 1 > self.total_cap:
            self.capped = {"cap": "total", "bytes": self.size, "at_seq": self.seq, "dropped": 1}
            return
        self.lines.append(line)
        self.size += len(line) + 1

    def call(self, seam: str, op: str, args: dict[str, Any], fn: Callable[[], Any]) -> Any:
        """``fn()``, recorded with its answer or the exception it raised (raised on)."""
        try:
            answer = fn()
        except Exception as e:
            self.add(seam, op, args, error=e)
            raise
        self.add(seam, op, args, answer=answer)
        return answer

    def dump(self) -> bytes:
        """The recording: JSON lines, gzip-compressed (mtime 0: the same calls give the same bytes); the run's meta first
        (``{"meta": {...}}``), the cap's line last."""
        head = [json.dumps({"meta": {"recording": 1, **self.meta}}, sort_keys=True)]
        tail = [json.dumps(self.capped, sort_keys=True)] if self.capped is not None else []
        return gzip.compress(("\n".join(head + self.lines + tail) + "\n").encode(), mtime=0)

    def token(self, nbytes: int, base: Callable[[int], str] = secrets.token_hex) -> str:
        """A token from ``base`` (core.tokens' source while the run records), handed out and recorded as the ``run`` seam's."""
        return str(self.call("run", "token", {"bytes": nbytes}, lambda: base(nbytes)))


def read_recording(data: bytes) -> list[dict[str, Any]]:
    """A recording's entries (the cap's line, if any, last; the meta line left out: :func:`recording_meta`)."""
    return _entries(gzip.decompress(data).decode())


def recording_meta(data: bytes) -> dict[str, Any]:
    """The run's meta (the recording's first line)."""
    return _meta(gzip.decompress(data).decode())


def parse_recording(inflated: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, entries) of a recording already inflated (replay.load inflates it within a bound)."""
    text = inflated.decode()
    return _meta(text), _entries(text)


def _entries(text: str) -> list[dict[str, Any]]:
    return [e for e in (json.loads(line) for line in text.splitlines() if line.strip()) if "meta" not in e]


def _meta(text: str) -> dict[str, Any]:
    first = text.split("\n", 1)[0]
    return dict(json.loads(first).get("meta") or {}) if first.strip() else {}


_KUBE_OPS = ("get", "list", "create", "patch", "delete", "logs", "server_version")


class RecordingKube:
    """A KubeAPI whose every call goes into the recording; everything else passes through."""

    def __init__(self, inner: Any, recorder: Recorder):
        self._inner, self._rec = inner, recorder

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in _KUBE_OPS and callable(attr):
            def recorded(*args: Any, **kwargs: Any) -> Any:
                return self._rec.call("kube", name, {"args": list(args), **kwargs}, lambda: attr(*args, **kwargs))

            return recorded
        return attr

    def exec(self, namespace: str, pod: str, argv: Sequence[str], container: str | None = None, timeout: float = 60.0) -> Any:
        return self._rec.call("kube", "exec", {"namespace": namespace, "pod": pod, "argv": list(argv), "container": container},
                              lambda: self._inner.exec(namespace, pod, argv, container=container, timeout=timeout))


class RecordingNodes:
    """A NodeRunner whose every command goes into the recording."""

    def __init__(self, inner: Any, recorder: Recorder):
        self._inner, self._rec = inner, recorder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> Any:
        return self._rec.call("node", "run", {"node": node, "argv": list(argv)}, lambda: self._inner.run(node, argv, timeout=timeout))


class RecordingOutside:
    """The outside view (the runner as a client outside the cluster), every request recorded."""

    def __init__(self, inner: Any, recorder: Recorder):
        self._inner, self._rec = inner, recorder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def reaches(self, ip: str) -> bool:
        return bool(self._rec.call("outside", "reaches", {"ip": ip}, lambda: self._inner.reaches(ip)))

    def source_address(self, ip: str) -> str | None:
        answer = self._rec.call("outside", "source_address", {"ip": ip}, lambda: self._inner.source_address(ip))
        return None if answer is None else str(answer)

    def can_send_raw(self) -> bool:
        return bool(self._rec.call("outside", "can_send_raw", {}, self._inner.can_send_raw))

    def http(self, url: str, timeout: float, source_port: int | None = None) -> Any:
        return self._rec.call("outside", "http", {"url": url, "source_port": source_port},
                              lambda: self._inner.http(url, timeout, source_port=source_port))

    def raw_syn(self, ip: str, port: int, timeout: float) -> Any:
        return self._rec.call("outside", "raw_syn", {"ip": ip, "port": port}, lambda: self._inner.raw_syn(ip, port, timeout))

    def udp_icmp(self, ip: str, port: int, timeout: float, sport: int | None = None) -> Any:
        return self._rec.call("outside", "udp_icmp", {"ip": ip, "port": port, "sport": sport},
                              lambda: self._inner.udp_icmp(ip, port, timeout, sport=sport))

    @contextmanager
    def via(self, node_ip: str, addresses: Sequence[str]) -> Iterator[str | None]:
        with self._inner.via(node_ip, addresses) as why:
            self._rec.add("outside", "via", {"node_ip": node_ip, "addresses": list(addresses)}, answer=why)
            try:
                yield why
            finally:
                self._rec.add("outside", "via_end", {"node_ip": node_ip, "addresses": list(addresses)}, answer=None)
