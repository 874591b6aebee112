"""Maglev: the seed, the lookup tables, the scope, flows that agree across nodes and move little when a backend goes.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen.

What the Maglev suite observes, per family: each agent's hash seed and lookup table for a NodePort frontend,
whether the ClusterIP has a table, where flows from outside went through two nodes, and where they went after a
backend was deleted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class MaglevRemap:
    removed: str  # the deleted backend pod
    through: str  # the node the flows were sent through after it
    before: Mapping[int, str | None]  # source port -> the pod that served it before (through the first node)
    after: Mapping[int, str | None]  # and after the deletion

    def to_json(self) -> dict[str, Any]:
        return {"removed": self.removed, "through": self.through, "before": {str(p): b for p, b in self.before.items()},
                "after": {str(p): b for p, b in self.after.items()}}


@dataclass(frozen=True)
class MaglevObservation:
    family: str
    node_port: int
    backends: tuple[str, ...]  # the EndpointSlice's ready addresses of the family
    pods: tuple[str, ...]  # the backend pods, all of them (before any deletion)
    seeds: Mapping[str, str | None]  # node -> its agent's configured seed (None: the default)
    tables: Mapping[str, Any]  # node -> its NodePort frontend's Maglev table (judge.maglev.maglev_table; None: none)
    cluster_ip_tables: Mapping[str, bool]  # node -> whether the ClusterIP frontend has a table
    flows: Mapping[str, Mapping[int, str | None]] | None = None  # node -> source port -> serving pod (None: no outside view)
    remap: MaglevRemap | None = None

    def to_json(self) -> dict[str, Any]:
        """maglev.json."""
        return {"family": self.family, "node_port": self.node_port, "backends": list(self.backends), "seeds": dict(self.seeds),
                "tables": dict(self.tables), "cluster_ip_tables": dict(self.cluster_ip_tables),
                "flows": None if self.flows is None else {n: {str(p): b for p, b in f.items()} for n, f in self.flows.items()},
                "remap": None if self.remap is None else self.remap.to_json()}


#: flows the Maglev suite sends from the runner (source ports), and how many of those on surviving backends may move when
#: one backend goes (Maglev moves about 1% of the table beyond the removed backend's share: datapath.SRC_MAGLEV_REMAP)
MAGLEV_FLOWS, MAGLEV_MOVE_TOLERANCE = 24, 0.1


def maglev_table(entries: "Sequence[Any]", frontend: str) -> dict[str, int] | None:
    """From ``lb/maps-dump`` entries: the Maglev table of ``frontend`` (``ip:port/PROTO``) as backend address -> slots;
    None when the frontend has no table (or is not there)."""
    from ..parse.statedb import maglev_slots

    ids = {e.fields.get("ID") for e in entries if e.kind == "SVC" and e.fields.get("ADDR") == frontend}  # every slot carries the ID
    addrs = {e.fields.get("ID"): (e.fields.get("ADDR") or "").partition("/")[0] for e in entries if e.kind == "BE"}
    for e in entries:
        if e.kind == "MAGLEV" and e.fields.get("ID") in ids:
            return {addrs.get(i, f"backend ID {i}"): n for i, n in maglev_slots(e).items()}
    return None


def maglev_seed_problems(seeds: "Mapping[str, str | None]", default: str) -> list[str]:
    """Every agent resolves the same bpf-lb-maglev-hash-seed (None: unset, so the built-in ``default``)."""
    used = {node: s or default for node, s in seeds.items()}
    if len(set(used.values())) <= 1:
        return []
    groups: dict[str, list[str]] = {}
    for node, s in sorted(used.items()):
        groups.setdefault(s, []).append(node)
    return [f"the agents use {len(groups)} different hash seeds: " + "; ".join(f"{s!r} on {', '.join(n)}" for s, n in sorted(groups.items()))]


def maglev_table_problems(tables: "Mapping[str, Mapping[str, int] | None]", backends: "Sequence[str]") -> list[str]:
    """Each agent has a Maglev table for its own NodePort frontend over exactly the Service's backends, balanced (equal
    weights: slot counts differ by at most one). The dump shows counts only, so tables built from different seeds look
    alike here: the seed is checked where the agent resolves it."""
    out = []
    for node, t in sorted(tables.items()):
        if t is None:
            out.append(f"{node} has no Maglev table for its NodePort frontend")
        elif sorted(t) != sorted(backends):
            out.append(f"{node}'s table holds {sorted(t)}, not the backends {sorted(backends)}")
        elif max(t.values()) - min(t.values()) > 1:
            out.append(f"{node}'s table is unbalanced: {dict(sorted(t.items()))}")
    return out


def maglev_scope_problems(cluster_ip_tables: "Mapping[str, bool]") -> list[str]:
    """No Maglev table for the ClusterIP frontend (datapath.SRC_MAGLEV_SCOPE): in-cluster traffic is picked by socket LB."""
    nodes = sorted(n for n, has in cluster_ip_tables.items() if has)
    return [f"the ClusterIP frontend has a Maglev table on {', '.join(nodes)}: in-cluster traffic would be Maglev'd "
            "(only with bpf-lb-external-clusterip)"] if nodes else []


def maglev_flow_problems(through: "Mapping[str, Mapping[int, str | None]]") -> list[str]:
    """The same flow (source port) sent through different nodes reaches the same backend (the hash leaves out the
    destination: datapath.SRC_MAGLEV_HASH). ``through``: node -> source port -> backend pod (None: not served)."""
    nodes = sorted(through)
    if len(nodes) < 2:
        return []
    first, rest = nodes[0], nodes[1:]
    out = []
    for port in sorted(through[first]):
        got = {n: through[n].get(port) for n in nodes}
        if None in got.values():
            out.append(f"flow from :{port} was not served through {', '.join(n for n, b in got.items() if b is None)}")
        elif len(set(got.values())) > 1:
            out.append(f"flow from :{port} reached {', '.join(f'{b} through {n}' for n, b in got.items())}")
    if out:
        return [f"{len(out)} of {len(through[first])} flows did not reach one backend through {first} and {', '.join(rest)}: "
                + "; ".join(out[:4]) + ("; ..." if len(out) > 4 else "")]
    return []


def maglev_remap_problems(before: "Mapping[int, str | None]", after: "Mapping[int, str | None]", removed: str,
                          n_backends: int, tolerance: float = MAGLEV_MOVE_TOLERANCE) -> list[str]:
    """After one of ``n_backends`` backends (``removed``) goes, the flows it served move and the others stay: at most
    ``tolerance`` of the flows on surviving backends may move (Maglev: about 1%; a random pick would move (N-2)/(N-1)
    of them, 2/3 with 4 backends)."""
    flows = [p for p in before if before[p] is not None]
    lost = [p for p in flows if after.get(p) is None]
    survivors = [p for p in flows if before[p] != removed and after.get(p) is not None]
    moved = [p for p in survivors if after[p] != before[p]]
    out = []
    if lost:
        out.append(f"{len(lost)} flows got no answer after the removal")
    stuck = [p for p in flows if before[p] == removed and after.get(p) == removed]
    if stuck:
        out.append(f"{len(stuck)} flows still reached the removed backend {removed}")
    allowed = max(1, int(tolerance * len(survivors)))
    if len(moved) > allowed:
        frac = len(moved) / len(survivors)
        out.append(f"{len(moved)} of {len(survivors)} flows on the surviving backends moved ({frac:.0%}; allowed {allowed}): Maglev moves "
                   f"about 1% beyond the removed backend's share, a random pick {(n_backends - 2) / max(1, n_backends - 1):.0%}")
    return out
