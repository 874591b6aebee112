"""Terminating backends during a rollout: an established connection to a terminating backend keeps working, new
connections avoid terminating backends while an active one exists, and use them when only terminating ones remain.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def draining_flow_problems(report: "Mapping[str, Any]", backend: str, bound_ms: float) -> list[str]:
    """``report``: the summary of a ``kpr probe flow`` whose TCP connection reached ``backend`` before it started
    terminating, stopped while the pod still terminated. The connection kept working (datapath.SRC_TERMINATING_DRAIN):
    no reset, no close, no stall, no reconnect, no gap over ``bound_ms``."""
    out = []
    counts = {k: int(report.get(k) or 0) for k in ("resets", "closed", "stalls", "reconnects")}
    bad = {k: v for k, v in counts.items() if v}
    if bad:
        out.append(f"the established connection to {backend} was interrupted while it terminated: "
                   + ", ".join(f"{v} {k}" for k, v in bad.items()) + " (its active connections must be able to terminate gracefully)")
    gap = float(report.get("max_gap_ms") or 0.0)
    if gap > bound_ms:
        out.append(f"the established connection to {backend} went silent for {gap:.0f} ms while it terminated (bound {bound_ms:.0f} ms)")
    if not report:
        out.append(f"the flow to {backend} printed no summary, so whether it kept working is unknown")
    return out


def new_connection_problems(peers: "Sequence[str | None]", allowed: "Mapping[str, str]", avoided: "Mapping[str, str]", when: str) -> list[str]:
    """``peers``: the backend address each new connection reached (None: it failed); ``allowed``/``avoided``: address ->
    pod. Every connection reached an allowed backend (datapath.SRC_TERMINATING_SLOTS, SRC_TERMINATING_NEW)."""
    if not peers:
        return [f"{when}: no new connection was made, so which backends they reach is unknown"]
    out = []
    wrong = [p for p in peers if p is not None and p in avoided]
    stray = [p for p in peers if p is not None and p not in avoided and p not in allowed]
    failed = sum(p is None for p in peers)
    if wrong:
        pods = sorted({avoided[p] for p in wrong})
        out.append(f"{when}: {len(wrong)} of {len(peers)} new connections reached {', '.join(pods)}, which should not be picked")
    if stray:
        out.append(f"{when}: {len(stray)} of {len(peers)} new connections reached {', '.join(sorted(set(stray)))}, no backend of the Service")
    if failed:
        out.append(f"{when}: {failed} of {len(peers)} new connections failed although {', '.join(sorted(set(allowed.values())))} "
                   f"{'is' if len(set(allowed.values())) == 1 else 'are'} there to serve them")
    return out


def flow_outlived_problems(outlived: bool, backend: str, hold_s: int) -> list[str]:
    """The precondition of the draining judgement: the backend was still terminating when its flow was stopped (else
    nothing can be said of its connection)."""
    if outlived:
        return []
    return [f"{backend} was gone before the flow was stopped (its preStop holds it {hold_s} s); nothing can be said of its connection"]
