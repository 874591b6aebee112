"""Session affinity: ClientIP sticks to one backend, its timeout expires, and without it the picks spread.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import Sequence


#: connections the affinity suite makes per Service, and the backends behind it
AFFINITY_CONNECTIONS, AFFINITY_BACKENDS = 20, 4


#: the affinity-timeout round: Service timeoutSeconds, seconds between connections (past the timeout, with the seconds
#: granularity of bpf_mono_now()), and connections
AFFINITY_TIMEOUT_S, AFFINITY_IDLE_S, AFFINITY_TIMEOUT_ROUNDS = 1, 2.5, 10


def affinity_timeout_problems(peers: "Sequence[str | None]", backends: "Sequence[str]", idle_s: float, timeout_s: int) -> list[str]:
    """With sessionAffinity timeoutSeconds shorter than the pause between connections, every connection is a new pick
    (bpf/lib/lb.h ``__lb4_affinity_backend_id``: the entry expires at last_used + timeout). If every one of k
    connections still reached the first one's backend, the timeout was not honoured: under uniform picks among N
    backends that happens with probability (1/N)^(k-1) (4 backends, 10 connections: 3.8e-06)."""
    out = []
    missing = [i for i, p in enumerate(peers) if p is None]
    if missing:
        out.append(f"{len(missing)} of {len(peers)} connections did not connect or show a backend")
    hit = sorted({p for p in peers if p})
    if len(backends) > 1 and len(peers) >= 2 and not missing and len(hit) == 1:
        n, k = len(backends), len(peers)
        out.append(f"all {k} connections, {idle_s:g} s apart (past the {timeout_s} s timeout), reached {hit[0]}: the affinity never expired "
                   f"(chance if it does: {(1 / n) ** (k - 1):.1e})")
    return out


def affinity_problems(sticky: "Sequence[str | None]", plain: "Sequence[str | None]", backends: "Sequence[str]") -> dict[str, list[str]]:
    """Session affinity, judged from the backend each connection reached (the kernel socket's peer under socket LB).

    ``sticky``: every connection from one client to a sessionAffinity=ClientIP Service reached one backend.
    ``spread``: without affinity, the connections reached more than one backend. Bound: with a uniformly random pick
    among N backends, all k connections reach one backend with probability N * (1/N)^k (4 backends, 20 connections:
    3.6e-12), so a single backend is not chance."""
    out: dict[str, list[str]] = {"sticky": [], "spread": []}
    for name, peers in (("sticky", sticky), ("spread", plain)):
        missing = [i for i, p in enumerate(peers) if p is None]
        strangers = sorted({p for p in peers if p is not None and p not in backends})
        if missing:
            out[name].append(f"{len(missing)} of {len(peers)} connections did not connect or show a backend")
        if strangers:
            out[name].append(f"connections reached {strangers}, which are not the Service's backends {sorted(backends)}")
    hit = sorted({p for p in sticky if p})
    if len(hit) > 1:
        out["sticky"].append(f"{len(sticky)} connections from one client reached {len(hit)} backends {hit} despite sessionAffinity ClientIP")
    spread = sorted({p for p in plain if p})
    if len(backends) > 1 and len(plain) >= 2 and len(spread) == 1:
        n, k = len(backends), len(plain)
        out["spread"].append(f"all {k} connections without affinity reached {spread[0]} of {n} backends (chance: {n * (1 / n) ** k:.1e})")
    return out
