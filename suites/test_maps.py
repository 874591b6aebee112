"""Map pressure: every Service of the run has its entry in the agent's service map, and a full map is not silent.

The maps' sizes are what the agent resolved (/tmp/cilium/config-map/bpf-lb-service-map-max and
bpf-lb-rev-nat-map-max, else bpf-lb-map-max, else Cilium's 65536: pytest_kpr.rules.datapath SRC_MAP_SIZE). The reconciler
writes a frontend's reverse-NAT entry before its service entry, so either map can fill first (SRC_MAP_FULL). When the
smaller is at most 4096 entries (the profile ``small-maps`` sets 512) it is filled on purpose: the suite creates one
backendless ClusterIP Service more than it has entries, plus a margin; a larger map is probed with 50 Services. Then,
on the client node's agent: which Services have no master entry in ``lb/maps-dump``, and how the agent shows it -- each
such frontend's status and error in ``db/show frontends`` (the service map's error or the reverse-NAT map's), and the
loadbalancer-reconciler's health, Degraded at least once while the map filled: it reports OK again after any clean
round, so one reading proves nothing (SRC_MAP_HEALTH). The
agent also logs "Updating frontend failed"; cilium_bpf_map_pressure is refreshed only every
lb-pressure-metrics-interval (SRC_MAP_PRESSURE), so neither is judged. When the map was filled on purpose, the missing
Services are the expected outcome and the inventory test is an expected failure that names them; a map that filled
without being filled on purpose fails it. The Services are deleted at the end and their entries must be gone.

From 1.19 the address of a class-less ClusterIP takes one more service entry, a wildcard (``<address>:0/ANY``, port 0,
proto ANY) written after the master while default-lb-service-ipam is lbipam and wildcard entries are on (the agent's
defaults; SRC_WILDCARD): a backendless Service then takes two entries, and the map fills at about half the Services.
Every Service the agent reconciled cleanly must have its wildcard entry exactly when that rule says.

Runs after every other suite (last=True): while the map is full no new Service can be programmed. Filling is refused
under pytest-xdist (another worker's Services would meet the full map). Evidence: maps.json.

Each family has its own maps of the same sizes (lb4 and lb6: datapath.SRC_MAP_FAMILY), and a dual-stack Service has a
ClusterIP frontend in each. The scenario runs once (the Services fill every family's maps at once) and its three tests
are judged per family of --kpr-ip-families, each against that family's frontends and entries (evidence
``maps-ipv6.json``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.suite import eventually_or_now, Evidence, family_file, holds, hp, Lab, WEB_PORT
from pytest_kpr.judge.maps import (
    MAP_FILL_LIMIT,
    MAP_FILL_MARGIN,
    MAP_PROBE_SERVICES,
    MapsObservation,
    cleanup_problems,
    map_visibility_problems,
    service_map_problems,
    which_map_filled,
)
from pytest_kpr.rules.datapath import (DEFAULT_LB_IPAM_FILE, LB_MAP_FILES, LB_MAP_MAX_DEFAULT, MAP_FULL_ERRORS, REV_NAT_MAP_FILE,
                                       WILDCARD_ENTRIES_FILE, wildcard_entry)

pytestmark = [
    pytest.mark.kpr(property="map pressure", evidence="maps.json", last=True,
                    plane="control plane",
                    sources=["SRC_MAP_SIZE", "SRC_MAP_FULL", "SRC_MAP_HEALTH", "SRC_MAP_PRESSURE", "SRC_MAP_FAMILY", "SRC_WILDCARD"]),
    pytest.mark.kpr_requires("lb-statedb"),
]


def _map_max(lab: Lab) -> tuple[int, str, int, str]:
    """(service map entries, where that came from, reverse-NAT map entries, where that came from) for the client node's
    agent: each map's own option, else bpf-lb-map-max, else Cilium's default (datapath.SRC_MAP_SIZE)."""
    agent = lab.agent(lab.client_node)
    paths = (*LB_MAP_FILES, REV_NAT_MAP_FILE)
    values: dict[str, int] = {}
    for path, r in zip(paths, agent.exec_many(*[("cat", p) for p in paths]), strict=True):
        value = (r.stdout or "").strip()
        if r.returncode == 0 and value.isdigit() and int(value) > 0:
            values[path] = int(value)
    default = (values[LB_MAP_FILES[1]], LB_MAP_FILES[1]) if LB_MAP_FILES[1] in values else (LB_MAP_MAX_DEFAULT, "Cilium's default (no file)")
    svc = (values[LB_MAP_FILES[0]], LB_MAP_FILES[0]) if LB_MAP_FILES[0] in values else default
    rev = (values[REV_NAT_MAP_FILE], REV_NAT_MAP_FILE) if REV_NAT_MAP_FILE in values else default
    return svc[0], svc[1], rev[0], rev[1]


def _wildcard_settings(lab: Lab) -> tuple[str | None, str | None]:
    """The client agent's default-lb-service-ipam and bpf-lb-enable-wildcard-entries (None: no file, the default)."""
    agent = lab.agent(lab.client_node)
    out = [r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None
           for r in agent.exec_many(*[("cat", p) for p in (DEFAULT_LB_IPAM_FILE, WILDCARD_ENTRIES_FILE)])]
    return out[0], out[1]


def _settled(lab: Lab, frontends: dict[str, str]) -> dict[str, Any]:
    """The client agent's view once every created frontend (``[addr]:port`` -> its Service) has been reconciled (Done or
    Error, not Pending)."""
    agent = lab.agent(lab.client_node)
    seen_health: list[Any] = []  # every reading of the fill window: Degraded is a moment (datapath.SRC_MAP_HEALTH)

    def observe() -> dict[str, Any]:
        fes, dump, health = agent.read("frontends", "maps_dump", "db_health")
        seen_health.extend(health)
        by_addr = {hp(f.address.ip, f.address.port): f for f in fes}
        return {"frontends": {addr: by_addr.get(addr) for addr in frontends}, "dump": dump, "health": health,
                "health_seen": seen_health}

    def settled(v: dict[str, Any]) -> bool:
        return all(f is not None and f.status in ("Done", "Error") for f in v["frontends"].values())

    # what is there is judged (a frontend the agent never lists is missing from the map too)
    return eventually_or_now(observe, until=settled, timeout=lab.t.DATAPATH_CONVERGENCE, what=f"the agent on {lab.client_node} to reconcile "
                             f"{len(frontends)} frontends", describe=lambda v: f"{sum(1 for f in v['frontends'].values() if f is not None and f.status in ('Done', 'Error'))} "
                             f"of {len(frontends)} reconciled", progress=lab.progress, first_after=lab.t.LB_FIRST_LOOK)


def _dump_family(addr: str) -> str:
    """The family of a ``lb/maps-dump`` ADDR (an IPv6 address in brackets: datapath.SRC_MAGLEV_DUMP)."""
    return "IPv6" if addr.startswith("[") else "IPv4"


@pytest.fixture(scope="module")
def maps(lab: Lab, evidence: Evidence, kpr_property: str, family_views: dict[str, Lab], request: pytest.FixtureRequest) -> dict[str, MapsObservation]:
    """The scenario, run once (it fills the maps): family -> what was seen in that family's maps. Each family has its own
    maps of the same sizes (datapath.SRC_MAP_FAMILY), and a dual-stack Service has a ClusterIP frontend in each."""
    svc_max, source, rev_max, rev_source = _map_max(lab)
    map_max = min(svc_max, rev_max)  # whichever map fills first (datapath.SRC_MAP_FULL)
    fill = map_max <= MAP_FILL_LIMIT
    if fill and hasattr(request.config, "workerinput"):  # a pytest-xdist worker
        pytest.skip(f"the service map holds {map_max} entries and would be filled; run this suite without pytest-xdist (-n), where no "
                    "other worker creates Services meanwhile")
    views = family_views
    families = list(views)
    count = map_max + MAP_FILL_MARGIN if fill else MAP_PROBE_SERVICES
    names = [f"mp-{i}" for i in range(count)]
    frontends: dict[str, dict[str, str]] = {f: {} for f in families}  # family -> Service -> its ClusterIP frontend there
    created: list[str] = []
    try:
        for i, name in enumerate(names):
            spec = lab.create_service(name, {"app": "kpr-map-pressure-none"})["spec"]
            created.append(name)
            for f, v in views.items():  # from the create call's answer
                frontends[f][name] = hp(v.address_of(list(spec.get("clusterIPs") or [spec["clusterIP"]]), f"service {name}"), WEB_PORT)
            if i and i % 100 == 0:
                lab.progress(f"map pressure: {i} of {count} Services created")
        seen = _settled(lab, {addr: name for fes in frontends.values() for name, addr in fes.items()})
    finally:  # the map is left as it was found, also when creating or reading failed
        remaining = _clean_up(lab, created, {a for fes in frontends.values() for a in fes.values()})
    in_map = {e.fields.get("ADDR", "").rsplit("/", 1)[0] for e in seen["dump"] if e.kind == "SVC" and e.fields.get("SLOT") == "0"}
    wildcards = {a.removesuffix(":0/ANY").strip("[]") for e in seen["dump"] if e.kind == "SVC" and (a := e.fields.get("ADDR", "")).endswith(":0/ANY")}
    ipam, wild_on = _wildcard_settings(lab)
    wild_expected = wildcard_entry(lab.minor, "ClusterIP", None, ipam, wild_on)
    wild_why = (f"Cilium {'.'.join(map(str, lab.minor))}, default-lb-service-ipam {ipam or 'lbipam (no file)'}, "
                f"bpf-lb-enable-wildcard-entries {wild_on or 'true (no file)'}: the rule says {'one' if wild_expected else 'none'}")
    in_kubernetes = sum(1 for n in names if lab.kube.get("Service", n, lab.ns) is not None)
    out: dict[str, MapsObservation] = {}
    for f in families:
        mine = frontends[f]
        # counted as the reconciler writes them: one service entry per slot and master, wildcard and per-node-address
        # NodePort frontends included, and one reverse-NAT entry per frontend -- in this family's maps
        entries = sum(1 for e in seen["dump"] if e.kind == "SVC" and _dump_family(e.fields.get("ADDR", "")) == f)
        rev_entries = sum(1 for e in seen["dump"] if e.kind == "REV" and _dump_family(e.fields.get("ADDR", "")) == f)
        missing = [name for name, addr in mine.items() if addr not in in_map]
        fes = seen["frontends"]
        served = {name: addr.rsplit(":", 1)[0].strip("[]") for name, addr in mine.items()
                  if addr in in_map and fes[addr] is not None and fes[addr].status == "Done"}
        shown = {name: ((fes[mine[name]].status, fes[mine[name]].error) if fes[mine[name]] is not None else (None, None)) for name in missing}
        m = MapsObservation(f, map_max, source, svc_max, rev_max, rev_source, fill, count, entries, rev_entries, tuple(missing), shown,
                            which_map_filled((e for _, e in shown.values()), MAP_FULL_ERRORS), tuple(seen["health_seen"]), wild_expected,
                            wild_why, served, frozenset(wildcards), in_kubernetes, tuple(a for a in remaining if a in set(mine.values())))
        evidence.write(family_file("maps.json", f), m.to_json())
        evidence.figure(kpr_property, f"{len(missing)} of {count} Services not in a map of {map_max} entries ({entries} used)"
                                  f"{' (filled on purpose)' if fill else ''}; {len(m.left_in_map)} left after cleanup", f)
        out[f] = m
    return out


@pytest.fixture(scope="module")
def maps_family(maps: dict[str, MapsObservation], kpr_family: str) -> MapsObservation:
    """What the scenario saw in this test's family's maps."""
    return maps[kpr_family]


def _clean_up(lab: Lab, names: list[str], addrs: set[str]) -> list[str]:
    """Delete the suite's Services; the frontends of theirs still in the client agent's map once it settled."""
    for i, name in enumerate(names):
        lab.kube.delete("Service", name, lab.ns)
        lab.created.discard(f"Service/{name}")
        if i and i % 100 == 0:
            lab.progress(f"map pressure: {i} of {len(names)} Services deleted")
    agent = lab.agent(lab.client_node)

    def left() -> list[str]:
        (dump,) = agent.read("maps_dump")
        return sorted({e.fields.get("ADDR", "").rsplit("/", 1)[0] for e in dump if e.kind == "SVC"} & addrs)

    return eventually_or_now(left, until=lambda x: not x, timeout=lab.t.DATAPATH_CONVERGENCE, what="the suite's Services to leave the map",
                             describe=lambda x: f"{len(x)} left", progress=lab.progress, first_after=lab.t.LB_FIRST_LOOK)


def test_every_service_of_the_run_is_in_the_bpf_maps(maps_family: MapsObservation) -> None:
    d = maps_family
    problems = service_map_problems(d.missing, d.services, d.entries, d.map_max, d.full)
    if d.filled_on_purpose:
        if problems:
            pytest.xfail(f"map pressure ({d.family} maps, filled on purpose): " + "; ".join(problems))
        pytest.fail(f"map pressure ({d.family} maps): {d.services} Services for a service map of {d.map_max} entries "
                    f"({d.map_max_source}), yet none is missing: the map is larger than the agent says, or entries are not where lb/maps-dump shows them")
    holds(problems, f"map pressure ({d.family} maps)")


def test_a_full_map_is_not_silent(maps_family: MapsObservation) -> None:
    if not maps_family.shown:
        pytest.skip("no Service was missing from the map, so there was nothing to show")
    problems = map_visibility_problems(maps_family.shown, maps_family.health_seen, MAP_FULL_ERRORS)
    holds(problems, f"map pressure (how the agent shows a full {maps_family.family} map)")


def test_each_address_has_its_wildcard_entry_as_the_rule_says(maps_family: MapsObservation) -> None:
    if not maps_family.served:
        pytest.skip("no Service of the run was reconciled cleanly, so no address to look at")
    holds(maps_family.wildcard_problems(), f"map pressure (wildcard entries, {maps_family.family} maps)")


def test_cleanup_removes_every_service_and_its_entries(maps_family: MapsObservation) -> None:
    holds(cleanup_problems(maps_family), f"map pressure (cleanup, {maps_family.family} maps)")
