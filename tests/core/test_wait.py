"""The project's only ways to wait (pytest_kpr.core.wait) and the polls built on them: when they read, and how often."""

from __future__ import annotations

from typing import Iterator

import pytest

from pytest_kpr.observe.readiness import read_facts, wait_ready
from pytest_kpr.observe.lab import Lab
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider
from pytest_kpr.core import clock
from pytest_kpr.core.wait import Timeouts, WaitTimeout, eventually


class Reads(list[float]):
    """Records when each poll happened (seconds after creation, on the installed clock) and returns how many there were."""

    def __init__(self) -> None:
        super().__init__()
        self.start = clock.monotonic()

    def __call__(self) -> int:
        self.append(clock.monotonic() - self.start)
        return len(self)


@pytest.fixture(autouse=True)
def virtual() -> "Iterator[clock.VirtualClock]":
    """The waits' logic on a virtual clock: exact times, and nothing a busy machine can stretch."""
    with clock.use(clock.VirtualClock()) as v:
        yield v  # type: ignore[misc]


def test_the_first_poll_waits_first_after_and_the_result_says_how_long_it_took() -> None:
    reads = Reads()
    obs = eventually(reads, until=lambda n: n >= 1, timeout=5, what="x", first_after=0.2)
    assert reads == [pytest.approx(0.2)] and obs.attempts == 1 and obs.elapsed == pytest.approx(0.2)


def test_without_first_after_the_first_poll_is_immediate() -> None:
    reads = Reads()
    eventually(reads, until=lambda n: n >= 1, timeout=5, what="x")
    assert reads == [0.0]


def test_a_timeout_names_what_was_awaited_and_keeps_the_last_value() -> None:
    with pytest.raises(WaitTimeout, match=r"timed out after 0s waiting for the answer; last observed: 41") as e:
        eventually(lambda: 41, until=lambda v: v == 42, timeout=0.2, what="the answer")
    assert e.value.last == 41 and e.value.attempts >= 2


def test_every_polls_at_a_fixed_interval() -> None:
    reads = Reads()
    eventually(reads, until=lambda n: n >= 4, timeout=5, what="x", every=0.1)
    gaps = [b - a for a, b in zip(reads, reads[1:], strict=False)]
    assert gaps == [pytest.approx(0.1)] * 3, gaps


def lab_on(fake: FakeCluster) -> Lab:
    t = Timeouts().scaled(0.05)
    handle = FakeProvider(fake).provision(lambda line: None)
    facts = read_facts(handle, wait_ready(handle.kube, t, lambda line: None), t.EXEC)
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}})
    return Lab(handle, facts, t, "t", image="probe:1", node_port=30780)


def slot_read(call: tuple[str, ...]) -> bool:
    """An agent read of the BPF slots (``lb/maps-dump``, alone or in a batch of reads)."""
    return any("lb/maps-dump" in str(part) for part in call)


def lb_lists(fake: FakeCluster) -> int:
    return sum(1 for c in fake.calls if slot_read(c))


def test_convergence_polls_an_agent_only_while_it_lags_the_endpointslice() -> None:
    """Pods and the EndpointSlice are read every poll; an agent's slots (lb/maps-dump) only until it has been read
    holding exactly the current EndpointSlice. Against the fake (pods Ready after a few calls) a deploy and a
    scale each cost one read per agent once the EndpointSlice is ready, however many polls the pods take."""
    fake = FakeCluster(FakeConfig(pod_ready_ticks=12))
    lab = lab_on(fake)
    n_agents = len(lab.all_agents())
    before = lb_lists(fake)
    obs = lab.deploy_web(2)
    assert obs.value.converged and obs.attempts > 2, "the pods took several polls"
    assert 0 < lb_lists(fake) - before <= 2 * n_agents, "an agent is read once before the pods are ready and once after, not every poll"
    before = lb_lists(fake)
    up = lab.scale_web(4)
    assert up.value.converged and 0 < lb_lists(fake) - before <= 2 * n_agents


def test_an_agent_that_lags_is_read_again_until_it_catches_up() -> None:
    """The slow_agent fault: that agent is re-read each poll, the others are not; the final observation still
    holds every agent's slots checked against the final EndpointSlice."""
    from pytest_kpr.testing import Faults

    fake = FakeCluster(FakeConfig(faults=Faults(slow_agent_on="fake-worker2", slow_agent_s=0.5)))
    lab = lab_on(fake)
    with clock.use(fake.clock):  # the lag is in the fake's time: the waits must run on it
        lab.deploy_web(2)
        start = len(fake.calls)
        obs = lab.scale_web(4)
    assert obs.value.converged
    per_pod: dict[str, int] = {}
    for c in fake.calls[start:]:
        if slot_read(c):
            per_pod[c[2]] = per_pod.get(c[2], 0) + 1
    slow = next(a.pod for a in lab.all_agents() if a.node == "fake-worker2")
    assert per_pod[slow] > max(n for pod, n in per_pod.items() if pod != slow), per_pod
