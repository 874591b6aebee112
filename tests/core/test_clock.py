"""The project's clock: real against a real cluster, the fake's virtual one against the fake (waits cost no real
time there and cannot run out early on a busy machine)."""

from __future__ import annotations

import pytest

from pytest_kpr.core import clock
from pytest_kpr.core.wait import Timeouts, WaitTimeout, eventually, retrying
from pytest_kpr.core.errors import InfraError


def test_a_virtual_sleep_moves_virtual_time_only() -> None:
    v = clock.VirtualClock()
    t0, w0 = v.monotonic(), v.time()
    v.sleep(3600)
    # approx: virtual time starts at the real clocks' readings, and a float sum is not exact
    assert v.monotonic() - t0 == pytest.approx(3600) and v.time() - w0 == pytest.approx(3600)
    v.sleep(-5)
    assert v.monotonic() - t0 == pytest.approx(3600), "a negative sleep does not turn time back"
    assert v.kind == "virtual" and clock.REAL.kind == "real"


def test_use_installs_a_clock_for_a_block_and_restores_the_one_before() -> None:
    v = clock.VirtualClock()
    assert clock.current() is clock.REAL
    with clock.use(v):
        assert clock.current() is v
        before = clock.monotonic()
        clock.sleep(10)
        assert clock.monotonic() - before == pytest.approx(10)
    assert clock.current() is clock.REAL


def test_a_wait_that_never_converges_spends_its_whole_bound_in_virtual_time() -> None:
    """A 420 s bound (CILIUM_READY, unscaled) runs out with the usual words; the virtual clock says 420 s went by."""
    v = clock.VirtualClock()
    with clock.use(v):
        start = v.monotonic()
        with pytest.raises(WaitTimeout, match=r"^timed out after 420s waiting for the agents; last observed: 'not yet'$") as e:
            eventually(lambda: "not yet", until=lambda s: s == "ready", timeout=Timeouts().CILIUM_READY, what="the agents")
    assert 420 <= v.monotonic() - start < 425 and e.value.elapsed >= 420
    assert 200 <= e.value.attempts <= 230, "polls back off to one every 2 s, as on the real clock"


def test_every_polls_on_the_installed_clock() -> None:
    v = clock.VirtualClock()
    seen: list[float] = []
    with clock.use(v):
        start = v.monotonic()
        obs = eventually(lambda: seen.append(v.monotonic() - start) or len(seen), until=lambda n: n >= 4, timeout=60, what="x", every=0.25)
    assert seen == pytest.approx([0.0, 0.25, 0.5, 0.75]) and obs.elapsed == pytest.approx(0.75)


def test_retrying_gives_up_after_its_bound_on_the_installed_clock() -> None:
    v = clock.VirtualClock()
    calls = 0
    with clock.use(v), pytest.raises(InfraError, match="still down"):
        start = v.monotonic()
        for attempt in retrying(30):
            with attempt:
                calls += 1
                raise InfraError("still down")
    assert 30 <= v.monotonic() - start <= 32 and calls >= 15
