"""Named timeouts and the only two ways the project waits: :func:`retrying` and :func:`eventually`.

No code in this project sleeps to wait for a state; it polls with a bound, and a timeout names what
it waited for and what it saw last. Both read the project's clock (:mod:`pytest_kpr.core.clock`): the real one
against a real cluster, the fake's virtual one against the fake, where a wait costs no real time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Generic, TypeVar

from tenacity import Retrying, retry_if_exception_type, wait_exponential

from . import clock
from .errors import InfraError

log = logging.getLogger("pytest_kpr.wait")
T = TypeVar("T")


@dataclass(frozen=True)
class Timeouts:
    """Bounds in seconds, each named after what it bounds. Scaled as a whole by ``--kpr-timeout-scale``."""

    #: kind create (3 nodes, image present): 60-90 s on a GitHub runner.
    CLUSTER_CREATE: float = 300.0
    #: helm install returns quickly; the agents then need 60-120 s to program the datapath.
    CILIUM_READY: float = 420.0
    #: A Deployment's pods Ready after a scale: seconds with a preloaded image.
    PODS_READY: float = 180.0
    #: EndpointSlice change -> agent's BPF LB slots. Typically < 2 s. cilium/cilium#48271 (open, a community report for
    #: 1.19.7 <= v < 1.20.0: a deleted backend stays in the eBPF map 20-34 s) lies inside this bound: on those releases it
    #: shows as the slowest agent's lag (the backend-slots evidence) and in the UDP termination's gap, not as a failure.
    DATAPATH_CONVERGENCE: float = 60.0
    #: One exec into an agent pod (cilium-dbg) or a node (docker exec).
    EXEC: float = 60.0
    #: Retrying transport errors of one API call.
    API_CALL: float = 30.0
    #: Namespaces to disappear at cleanup.
    NAMESPACE_DELETE: float = 120.0
    #: How long to watch whether a rejected claimant's frontend appears by itself once the owner is
    #: gone: 60 of the LB control plane's 500 ms coalescing windows.
    CONFLICT_OBSERVE: float = 30.0
    #: The first look after a Service change: the LB control plane's k8s reflector buffers events and
    #: flushes them on a ticker of reflectorWaitTime, 500 ms (cilium/stream operators.go Buffer;
    #: cilium/cilium pkg/loadbalancer/reflectors/k8s.go), so a change is processed 0-500 ms after it
    #: arrives, 250 ms on average. An agent read sooner is almost always wasted.
    LB_FIRST_LOOK: float = 0.25
    #: How long an upgrade's flows run before Cilium is changed and after the datapath is ready again: each
    #: flow's baseline (pytest_kpr.scenarios.upgrade_run), 100 messages at 10 ms.
    FLOW_BASELINE: float = 1.0

    def scaled(self, factor: float) -> "Timeouts":
        return replace(self, **{f.name: getattr(self, f.name) * factor for f in fields(self)})


class WaitTimeout(AssertionError):
    """A bounded wait ran out. The message says what was awaited and the last observation, which is also
    kept as ``last`` (None after an error) with the time spent, so a caller can judge what it saw."""

    def __init__(self, message: str, last: object = None, elapsed: float = 0.0, attempts: int = 0):
        super().__init__(message)
        self.last, self.elapsed, self.attempts = last, elapsed, attempts


def retrying(timeout: float, *, on: tuple[type[BaseException], ...] = (InfraError,), assertions: bool = True) -> Retrying:
    """A tenacity ``Retrying`` for ``for attempt in retrying(T): with attempt: ...``.

    Retries the given transport errors (and failed assertions when ``assertions``), backing off from
    0.2 s to 2 s, for at most ``timeout`` seconds of the project's clock, then re-raises the last error so its
    message is the failure.
    """
    retry_on: tuple[type[BaseException], ...] = on + ((AssertionError,) if assertions else ())
    clk = clock.current()
    start = clk.monotonic()
    return Retrying(
        stop=lambda _state: clk.monotonic() - start >= timeout,
        wait=wait_exponential(multiplier=0.2, max=2),
        sleep=clk.sleep,
        retry=retry_if_exception_type(retry_on),
        reraise=True,
    )


@dataclass
class Observation(Generic[T]):
    value: T
    elapsed: float
    attempts: int
    timed_out: bool = False  # the wait ran out and ``value`` is the last observation


def eventually(
    observe: Callable[[], T],
    *,
    until: Callable[[T], bool],
    timeout: float,
    what: str,
    describe: Callable[[T], str] = repr,
    progress: Callable[[str], None] | None = None,
    progress_every: float = 10.0,
    abort: Callable[[T], str | None] | None = None,
    transient: tuple[type[BaseException], ...] = (InfraError,),
    every: float | None = None,
    first_after: float = 0.0,
) -> Observation[T]:
    """Poll ``observe()`` until ``until(value)``; return the final observation and how long it took.

    Polls back off from 0.1 s to 2 s; with ``every``, a poll starts every ``every`` seconds instead (or
    right after the previous one, if that took longer), for waits that time what they see. With
    ``first_after``, the first poll waits that long (a change that cannot show sooner: ``LB_FIRST_LOOK``).

    - Transport errors (``transient``) are retried until the deadline; the last one is reported.
    - ``abort(value)`` may return a reason to stop early (a state that cannot recover).
    - ``progress(line)`` is called at most every ``progress_every`` seconds with the last observation.
    - On timeout raises :class:`WaitTimeout`: ``timed out after 60s waiting for <what>; last observed: ...``.
    """
    clk = clock.current()
    start = clk.monotonic()
    if first_after > 0:
        clk.sleep(min(first_after, timeout))
    polling = clk.monotonic()  # the bound counts from the first poll
    last: list[object] = []  # the last value or error
    last_progress = start
    attempts = 0
    # back off from 0.1 s to 2 s, but poll at least ~10 times within a short bound
    step, longest = min(0.1, timeout / 50), max(min(2.0, timeout / 10), 0.005)
    while True:
        attempts += 1
        began = clk.monotonic()
        try:
            value = observe()
        except transient as e:
            last[:] = [e]
        else:
            last[:] = [value]
            reason = abort(value) if abort is not None else None
            if reason:
                raise WaitTimeout(f"gave up waiting for {what}: {reason}")
            now = clk.monotonic()
            if progress is not None and now - last_progress >= progress_every:
                last_progress = now
                progress(f"waiting for {what} ({now - start:.0f}s/{timeout:.0f}s): {describe(value)}")
            if until(value):
                return Observation(value, clk.monotonic() - start, attempts)
        if clk.monotonic() - polling >= timeout:
            seen = last[0] if last else None
            shown = f"{type(seen).__name__}: {seen}" if isinstance(seen, BaseException) else describe(seen)  # type: ignore[arg-type]
            raise WaitTimeout(
                f"timed out after {timeout:.0f}s waiting for {what}; last observed: {shown}",
                None if isinstance(seen, BaseException) else seen, clk.monotonic() - start, attempts,
            )
        pause = every - (clk.monotonic() - began) if every is not None else min(longest, step * 2 ** (attempts - 1))
        clk.sleep(max(0.0, pause))


def eventually_or_now(observe: Callable[[], T], **kw: Any) -> T:
    """:func:`eventually`'s value, or, when the wait ran out, what ``observe()`` shows now: for waits whose outcome a
    test judges (a missing frontend, a pod the scheduler refused), where running out is a finding, not an error."""
    try:
        return eventually(observe, **kw).value
    except WaitTimeout:
        return observe()
