"""Replay: a recording (pytest_kpr.run.recording) answers the run's requests, offline, with no cluster.

``--kpr-provider=replay --kpr-replay=DIR`` runs today's suites and judges on a recorded run: each request the run makes
through the seams is held against the recording's next one and answered with what the cluster answered then. The
requests are asked in the recorded order (the run is the same code on the same answers); the first request that is not
the recording's next one stops with one line naming both (:class:`ReplayDivergence`) -- never a guess. The clock follows
the recording (:class:`ReplayClock`): each answer sets it to the moment the answer came, so a wait decides as it did.
The run takes the recording's id, seed, profile and address families (its meta line), so it asks the same names.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..cluster.provider import ClusterHandle, Progress
from ..core.clock import VirtualClock
from ..core.errors import ApiError, InfraError, KprError, Unavailable
from ..k8s.api import ExecResult
from ..parse.probe import parse_probe_json
from .recording import TOTAL_CAP, clean, parse_recording


class ReplayDivergence(KprError):
    """The run asked something the recording does not hold next."""


class ReplayMissing(KprError):
    """A failure bundle's request the recording does not hold (the test did not fail when it was recorded): the bundle
    says it could not be collected; the replay goes on."""


def recording_file(directory: Path) -> Path:
    """The recording in ``directory`` (an evidence directory, or the file itself)."""
    if directory.is_file():
        return directory
    found = sorted(directory.glob("recording*.jsonl.gz"))
    if not found:
        raise Unavailable(f"--kpr-replay: no recording.jsonl.gz in {directory} (a run writes one beside its evidence unless "
                          "--kpr-no-recording)")
    return found[0]


#: a recording's bytes, inflated, at most: what a run writes (recording.TOTAL_CAP) and its cap line, with room to spare
MAX_INFLATED = TOTAL_CAP + 1024 * 1024


def _inflated(path: Path) -> bytes:
    """The file's bytes inflated, at most :data:`MAX_INFLATED` of them: only a regular file is read (a FIFO or a
    device would block or never end: refused before it is opened), and a gzip that inflates past the cap (a
    "bomb") is refused before it fills the memory."""
    import stat
    import zlib

    if not stat.S_ISREG(path.stat().st_mode):  # asked before opening: opening a FIFO waits for a writer
        raise ValueError("not a regular file")
    with path.open("rb") as f:
        raw = f.read(MAX_INFLATED + 1)
    out: list[bytes] = []
    size, rest = 0, raw
    while rest:  # member by member (gzip allows several), each inflated a bounded piece at a time
        z = zlib.decompressobj(wbits=31)
        while True:
            try:
                chunk = z.decompress(rest, MAX_INFLATED + 1 - size)
            except zlib.error as e:
                raise ValueError(f"not gzip ({e})") from None
            size += len(chunk)
            out.append(chunk)
            if size > MAX_INFLATED:
                raise ValueError(f"it inflates past {MAX_INFLATED // (1024 * 1024)} MiB, more than a run records")
            rest = z.unconsumed_tail
            if z.eof or not rest:
                break
        if not z.eof:
            out.append(z.flush())  # what zlib still holds: at most its window
            if not z.eof:
                raise EOFError("the gzip stream ends early")
        rest = z.unused_data
    return b"".join(out)


def load(directory: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, entries) of the recording in ``directory``; Unavailable, one line, when there is none or it is unreadable,
    not a regular file, inflates past :data:`MAX_INFLATED`, or holds a line that is not an entry."""
    path = recording_file(directory)
    try:
        meta, entries = parse_recording(_inflated(path))
    except (OSError, ValueError, EOFError, AttributeError, TypeError) as e:
        raise Unavailable(f"--kpr-replay: {path} is not a readable recording: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    bad = next((i for i, e in enumerate(entries) if not isinstance(e, dict)), None)
    if bad is not None:
        raise Unavailable(f"--kpr-replay: {path} is not a readable recording: entry {bad + 1} is not an object")
    return meta, entries


def _shown(seam: str, op: str, args: Any) -> str:
    text = json.dumps(args, sort_keys=True)
    return f"{seam} {op} {text if len(text) <= 160 else text[:157] + '...'}"


class ReplayClock(VirtualClock):
    """The recording's time: each answer sets it to the moment that answer came (its entry's ``t``: :meth:`at`); a sleep
    adds to it without waiting (a :class:`~pytest_kpr.core.clock.VirtualClock`)."""

    def __init__(self, start: float, wall_offset: float):
        super().__init__()
        self._mono, self._offset = start, wall_offset

    def at(self, t: float) -> None:
        with self._lock:
            self._mono = t


class Player:
    """The recording's entries, handed out in order to requests that match them."""

    def __init__(self, entries: list[dict[str, Any]], clock: ReplayClock):
        self.entries = [e for e in entries if "seq" in e]
        self.capped = next((e for e in entries if e.get("cap")), None)
        self.clock = clock
        self.pos = 0
        self.diverged: str | None = None
        #: whether the run collects a failure's bundle now (KprRun.diagnosing): those requests are the recording's marked
        #: ``diag`` ones, which a replay skips when its test does not fail and misses when only it does
        self.diagnosing: Callable[[], bool] = lambda: False
        self._lock = threading.Lock()

    def answer(self, seam: str, op: str, args: dict[str, Any]) -> Any:
        """The recorded answer to this request (a recorded error raised again), or ReplayDivergence."""
        asked = clean(args)
        with self._lock:
            if self.diverged is not None:
                raise ReplayDivergence(self.diverged)
            diagnosing = self.diagnosing()
            if not diagnosing:
                while self.pos < len(self.entries) and self.entries[self.pos].get("diag"):
                    self.pos += 1  # a bundle the recorded run collected for a failure this run does not have
            elif self.pos >= len(self.entries) or not self.entries[self.pos].get("diag") or \
                    (self.entries[self.pos]["seam"], self.entries[self.pos]["op"], self.entries[self.pos]["args"]) != (seam, op, asked):
                raise ReplayMissing(f"replay: the recording holds no bundle request {_shown(seam, op, asked)} here (the test did not "
                                    "fail when it was recorded)")
            if self.pos >= len(self.entries):
                cap = f" (it stopped at its size cap after request {self.capped['at_seq'] - 1})" if self.capped else ""
                self.diverged = f"replay: the run asked {_shown(seam, op, asked)} after the recording's last request{cap}"
                raise ReplayDivergence(self.diverged)
            e = self.entries[self.pos]
            if (e["seam"], e["op"], e["args"]) != (seam, op, asked):
                self.diverged = (f"replay diverged at request {e['seq']}: the run asked {_shown(seam, op, asked)}; the recording has "
                                 f"next {_shown(e['seam'], e['op'], e['args'])} (made by {e.get('test') or 'no test'})")
                raise ReplayDivergence(self.diverged)
            self.pos += 1
        self.clock.at(float(e["t"]))
        if "error" in e:
            raise _error(e["error"])
        answer = e.get("answer")
        if isinstance(answer, dict) and answer.get("truncated") is True and set(answer) == {"truncated", "bytes", "head"}:
            self.diverged = f"replay: the answer to request {e['seq']} ({_shown(seam, op, asked)}) was cut at the recording's cap"
            raise ReplayDivergence(self.diverged)
        return answer


def _error(err: dict[str, Any]) -> Exception:
    """A recorded error, raised again as the type the run handles."""
    message = str(err.get("message") or "")
    if err.get("type") == "ApiError" and err.get("status") is not None:
        return ApiError(int(err["status"]), str(err.get("reason") or ""), message.split(": ", 1)[-1])
    if err.get("type") == "InfraError":
        return InfraError(message)
    return KprError(f"{err.get('type')}: {message}")


def _exec_result(answer: Any) -> ExecResult:
    a = answer or {}
    return ExecResult(tuple(a.get("argv") or ()), int(a.get("returncode", 0)), str(a.get("stdout") or ""), str(a.get("stderr") or ""),
                      str(a.get("where") or ""))


class ReplayKube:
    """The Kubernetes API as the recording answered it."""

    def __init__(self, player: Player):
        self.player = player

    def _ask(self, op: str, *args: Any, **kwargs: Any) -> Any:
        return self.player.answer("kube", op, {"args": list(args), **kwargs})

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._ask("get", *args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return self._ask("list", *args, **kwargs) or []

    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._ask("create", *args, **kwargs)

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        return self._ask("patch", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> None:
        self._ask("delete", *args, **kwargs)

    def logs(self, *args: Any, **kwargs: Any) -> str:
        return str(self._ask("logs", *args, **kwargs) or "")

    def server_version(self, *args: Any, **kwargs: Any) -> str:
        return str(self._ask("server_version", *args, **kwargs))

    def exec(self, namespace: str, pod: str, argv: Sequence[str], container: str | None = None, timeout: float = 60.0) -> ExecResult:
        return _exec_result(self.player.answer("kube", "exec", {"namespace": namespace, "pod": pod, "argv": list(argv),
                                                                "container": container}))


class ReplayNodes:
    def __init__(self, player: Player):
        self.player = player

    def run(self, node: str, argv: Sequence[str], timeout: float = 60.0) -> ExecResult:
        return _exec_result(self.player.answer("node", "run", {"node": node, "argv": list(argv)}))


class ReplayOutside:
    def __init__(self, player: Player):
        self.player = player

    def reaches(self, ip: str) -> bool:
        return bool(self.player.answer("outside", "reaches", {"ip": ip}))

    def source_address(self, ip: str) -> str | None:
        a = self.player.answer("outside", "source_address", {"ip": ip})
        return None if a is None else str(a)

    def can_send_raw(self) -> bool:
        return bool(self.player.answer("outside", "can_send_raw", {}))

    def http(self, url: str, timeout: float, source_port: int | None = None) -> Any:
        return parse_probe_json(json.dumps(self.player.answer("outside", "http", {"url": url, "source_port": source_port})))

    def raw_syn(self, ip: str, port: int, timeout: float) -> Any:
        return parse_probe_json(json.dumps(self.player.answer("outside", "raw_syn", {"ip": ip, "port": port})))

    def udp_icmp(self, ip: str, port: int, timeout: float, sport: int | None = None) -> Any:
        return parse_probe_json(json.dumps(self.player.answer("outside", "udp_icmp", {"ip": ip, "port": port, "sport": sport})))

    @contextmanager
    def via(self, node_ip: str, addresses: Sequence[str]) -> Iterator[str | None]:
        why = self.player.answer("outside", "via", {"node_ip": node_ip, "addresses": list(addresses)})
        try:
            yield why
        finally:
            self.player.answer("outside", "via_end", {"node_ip": node_ip, "addresses": list(addresses)})


class ReplayProvider:
    """The provider of ``--kpr-provider=replay``: a cluster that is a recording."""

    name = "replay"

    def __init__(self, directory: Path):
        self.directory = directory
        self.meta, entries = load(directory)
        first = next((float(e["t"]) for e in entries if "t" in e), 0.0)
        self.clock = ReplayClock(float(self.meta.get("t0", first)), float(self.meta.get("wall_offset", 0.0)))
        self.player = Player(entries, self.clock)

    def preflight(self) -> None:
        if not self.player.entries:
            raise Unavailable(f"--kpr-replay: the recording in {self.directory} holds no request")

    def provision(self, progress: Progress) -> ClusterHandle:
        progress(f"replaying {len(self.player.entries)} recorded requests from {recording_file(self.directory)}")
        return ClusterHandle(str(self.meta.get("cluster") or "replay"), self.name, ReplayKube(self.player),  # type: ignore[arg-type]
                             ReplayNodes(self.player), created=bool(self.meta.get("created", True)),
                             outside=ReplayOutside(self.player))

    def token(self, nbytes: int) -> str:
        """The token the recorded run drew here (core.tokens' source under replay)."""
        return str(self.player.answer("run", "token", {"bytes": nbytes}))

    def teardown(self, progress: Progress) -> None:
        """Nothing was created."""
