"""The service map's capacity: a Service that does not fit is missing visibly, with a full map's error and a Degraded health.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ..rules.datapath import MAP_FULL_ERRORS

if TYPE_CHECKING:
    from ..parse.health import HealthStatus


#: a service map this small is filled on purpose by the map-pressure suite (the small-maps profile's 512); a larger one is
#: probed with a few Services only
MAP_FILL_LIMIT, MAP_PROBE_SERVICES, MAP_FILL_MARGIN = 4096, 50, 16


def service_map_problems(missing: "Sequence[str]", created: int, entries: int, map_max: int, full: str = "service map") -> list[str]:
    """Services in Kubernetes that have no entry in the agent's service map (``lb/maps-dump``): named, with how full the
    map is and which map filled (``full``: "service map" or "reverse-NAT map", from the frontends' errors), so a full map
    fails as such and not as a timeout somewhere else."""
    if not missing:
        return []
    sample = ", ".join(list(missing)[:3]) + (", ..." if len(missing) > 3 else "")
    return [f"{full} full ({entries} of {map_max} service entries): {len(missing)} of the run's {created} Services are in Kubernetes but "
            f"not in the BPF maps ({sample}); raise bpf.lbMapMax (bpf-lb-map-max) or remove Services"]


def wildcard_problems(expected: bool, served: "Mapping[str, str]", wildcards: "Iterable[str]", why: str) -> list[str]:
    """Each address of a Service the agent reconciled cleanly has its wildcard entry (``<address>:0/ANY`` in
    ``lb/maps-dump``) exactly when the rule says (datapath.SRC_WILDCARD: 1.19+, a class-less ClusterIP under
    default-lb-service-ipam lbipam, wildcard entries on). ``served``: Service -> its address whose frontend is Done and
    whose master entry is in the map; ``why``: the rule's inputs, in words."""
    have = set(wildcards)
    wrong = sorted(n for n, ip in served.items() if (ip in have) != expected)
    if not wrong:
        return []
    sample = ", ".join(f"{n} ({served[n]})" for n in wrong[:3]) + (", ..." if len(wrong) > 3 else "")
    if expected:
        return [f"{len(wrong)} of {len(served)} Services in the map have no wildcard entry for their address (<address>:0/ANY) although "
                f"{why}: {sample}; the service map then fills later than the agent's rule says"]
    return [f"{len(wrong)} of {len(served)} Services in the map have a wildcard entry for their address (<address>:0/ANY) although {why}: {sample}"]


def which_map_filled(errors: "Iterable[str | None]", markers: "Mapping[str, str]") -> str:
    """The map the reconciler's errors name (datapath.MAP_FULL_ERRORS: marker -> map), the first that fills; "service
    map" when none names one."""
    named = [name for e in errors if e for marker, name in markers.items() if marker in e]
    return named[0] if named else "service map"


def map_visibility_problems(missing_frontends: "Mapping[str, tuple[str | None, str | None]]", health_seen: "Sequence[HealthStatus]",
                            markers: "Mapping[str, str]") -> list[str]:
    """A Service that did not fit is visible as such (datapath.SRC_MAP_FULL): its frontend's status is Error with a
    full map's error (``markers``: the service map's or the reverse-NAT map's, whichever filled first), and the
    load-balancer reconciler's health was Degraded with it at least once while the map filled (datapath.SRC_MAP_HEALTH:
    it reports OK again after any clean round). ``missing_frontends``: Service -> (status, error) in ``db/show
    frontends``; ``health_seen``: every ``db/show health`` row read during the fill window."""
    out = []
    silent = sorted(n for n, (status, error) in missing_frontends.items()
                    if status != "Error" or error is None or not any(m in error for m in markers))
    if silent:
        st = missing_frontends[silent[0]]
        out.append(f"{len(silent)} of {len(missing_frontends)} Services missing from the map show no error for it (e.g. {silent[0]}: "
                   f"status {st[0]}, error {st[1]!r}; expected Error with " + " or ".join(f"'{m}' ({n} full)" for m, n in markers.items()) + ")")
    rows = [h for h in health_seen if h.module.endswith("loadbalancer-reconciler")]
    if not any(h.level == "Degraded" and any(m in h.error for m in markers) for h in rows):
        levels = sorted({h.level for h in rows}) or ["no row"]
        out.append(f"the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled "
                   f"({len(rows)} readings: {', '.join(levels)})")
    return out


@dataclass(frozen=True)
class MapsObservation:
    """The map-pressure scenario in one family's maps: the sizes the agents report, how many Services were made and how
    many entries they took, which are missing and what the agent showed of them, the health readings of the fill window,
    the wildcard rule's expectation against what was served, and what the cleanup left."""
    family: str
    map_max: int
    map_max_source: str
    service_map_max: int
    rev_nat_map_max: int
    rev_nat_map_max_source: str
    filled_on_purpose: bool
    services: int
    entries: int
    rev_nat_entries: int
    missing: tuple[str, ...]
    shown: "Mapping[str, tuple[str | None, str | None]]"  # missing Service -> (its frontend's status, error) in the agent
    full: str  # which map filled (which_map_filled)
    health_seen: "tuple[HealthStatus, ...]"  # every reading of the fill window
    wildcard_expected: bool
    wildcard_why: str
    served: "Mapping[str, str]"  # Service reconciled cleanly -> its address
    wildcard_addresses: frozenset[str]  # addresses with a wildcard entry in the dump
    left_in_kubernetes: int  # the suite's Services still in Kubernetes after the cleanup
    left_in_map: tuple[str, ...]  # and their frontends still in the map

    def wildcard_problems(self) -> list[str]:
        return wildcard_problems(self.wildcard_expected, self.served, self.wildcard_addresses, self.wildcard_why)

    def to_json(self) -> dict[str, Any]:
        """maps.json."""
        reconciler = [h for h in self.health_seen if h.module.endswith("loadbalancer-reconciler")]
        return {
            "family": self.family, "map_max": self.map_max, "map_max_source": self.map_max_source, "service_map_max": self.service_map_max,
            "rev_nat_map_max": self.rev_nat_map_max, "rev_nat_map_max_source": self.rev_nat_map_max_source,
            "filled_on_purpose": self.filled_on_purpose, "services": self.services, "entries": self.entries,
            "rev_nat_entries": self.rev_nat_entries, "missing": list(self.missing),
            "shown": {n: {"status": s, "error": e} for n, (s, e) in list(self.shown.items())[:20]}, "full": self.full,
            "frontend_errors": {name: sum(1 for s, e in self.shown.values() if s == "Error" and marker in (e or ""))
                                for marker, name in MAP_FULL_ERRORS.items()},
            "reconciler_health": {"readings": len(reconciler), "degraded": sum(1 for h in reconciler if h.level == "Degraded"),
                                  "sample": [{"level": h.level, "message": h.message, "error": h.error[:500]}
                                             for h in reconciler if h.level == "Degraded"][:3]},
            "wildcard": {"expected": self.wildcard_expected, "why": self.wildcard_why, "served": len(self.served),
                         "with_entry": sum(1 for ip in self.served.values() if ip in self.wildcard_addresses),
                         "problems": self.wildcard_problems()},
            "not_judged": {"log": "'Updating frontend failed' (pkg/loadbalancer/reconciler/bpf_reconciler.go Update)",
                           "metrics": "cilium_bpf_map_pressure, every lb-pressure-metrics-interval (pkg/loadbalancer/maps/pressure_metrics.go)"},
            "after_cleanup": {"kubernetes": self.left_in_kubernetes, "in_map": list(self.left_in_map)},
        }


def cleanup_problems(m: MapsObservation) -> list[str]:
    """The suite's Services are gone from Kubernetes and their frontends from the map."""
    if m.left_in_kubernetes == 0 and not m.left_in_map:
        return []
    shown = ", ".join(m.left_in_map[:3]) + (", ..." if len(m.left_in_map) > 3 else "")
    return [f"{m.left_in_kubernetes} of the suite's Services still in Kubernetes, {len(m.left_in_map)} frontends still in the service map ({shown})"]
