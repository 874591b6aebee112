"""The one clock the project reads: monotonic time, wall time and sleep, real unless a fake cluster is the cluster.

A wait against a real cluster measures the cluster, so it runs on the real clock. Against the in-memory fake the
cluster's own progress is code, so the fake and everything that waits on it share a :class:`VirtualClock`: a sleep
advances virtual time at once, a 60 s timeout costs microseconds and cannot run out early because the CPU was busy.
The session installs the provider's clock (:func:`use`) for the run; :func:`monotonic`, :func:`time` and
:func:`sleep` read whichever is installed.
"""

from __future__ import annotations

import threading
import time as _time
from contextlib import contextmanager
from typing import Iterator, Protocol


class Clock(Protocol):
    #: "real" or "virtual": what reports say a duration measured
    kind: str

    def monotonic(self) -> float: ...

    def time(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class RealClock:
    """The machine's clocks."""

    kind = "real"

    def monotonic(self) -> float:
        return _time.monotonic()

    def time(self) -> float:
        return _time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            _time.sleep(seconds)


class VirtualClock:
    """Time that moves only when someone sleeps (or :meth:`advance`): the fake cluster's clock.

    Starts at the real clocks' readings (wall times stay plausible in evidence files). Thread-safe; a sleep gives
    other threads a chance to run (``time.sleep(0)``) but never waits.
    """

    kind = "virtual"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mono = _time.monotonic()
        self._offset = _time.time() - self._mono  # wall = monotonic + offset

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def time(self) -> float:
        with self._lock:
            return self._mono + self._offset

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self._mono += seconds

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        _time.sleep(0)


REAL: Clock = RealClock()
_current: Clock = REAL


def current() -> Clock:
    return _current


def install(clock: Clock) -> None:
    """Make ``clock`` the project's clock (the session does this once it knows its provider)."""
    global _current
    _current = clock


@contextmanager
def use(clock: Clock) -> Iterator[Clock]:
    """``clock`` for the duration of a ``with`` block, then whatever was installed before."""
    before = _current
    install(clock)
    try:
        yield clock
    finally:
        install(before)


def monotonic() -> float:
    return _current.monotonic()


def time() -> float:
    return _current.time()


def sleep(seconds: float) -> None:
    _current.sleep(seconds)
