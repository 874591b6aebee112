"""Upgrade gating: Cilium upgraded (and with --kpr-downgrade rolled back) under live flows, every flow measured.

Runs with --kpr-upgrade-to=VERSION (the run provisions at --kpr-cilium-version, the "from" version). The
upgrade itself happens before any suite (suites/conftest.py ``upgrade_phase``, pytest_kpr.scenarios.upgrade_run); these
tests judge what upgrade.json recorded, one verdict each, per transition. Five flows (a message every 10 ms,
each echoed): pod -> ClusterIP, host-network pod -> ClusterIP, pod -> NodePort on another node, host-network
pod on a node without a backend -> NodePort, UDP pod -> ClusterIP. Evidence: upgrade.json.

Each family has its own service, backend and conntrack maps (datapath.SRC_MAP_FAMILY, SRC_CT_FAMILY), so an upgrade can
break one family's flows alone: a dual-stack run carries the five flows in every family through the one roll, and the
flow, ID and conntrack verdicts are judged per family (``[upgrade-IPv6]``). The datapath properties are the agents'
(KubeProxyReplacement, coverage, attach mode), judged once; the echo service's slots are compared in each family there.
"""

from __future__ import annotations

import pytest

from pytest_kpr.suite import holds
from pytest_kpr.model.upgrade import FlowVerdicts, Transition, UpgradeRecord
from pytest_kpr.scenarios.upgrade import in_family

pytestmark = [
    pytest.mark.kpr(property="upgrade", evidence="upgrade.json",
                    plane=["socket", "control plane"],
                    sources=["SRC_UPGRADE_PATH", "SRC_MAP_FAMILY", "SRC_CT_FAMILY"]),
    pytest.mark.kpr_upgrade,
]


@pytest.fixture(params=["upgrade", "downgrade"])
def transition(request: pytest.FixtureRequest, upgrade_phase: UpgradeRecord | None) -> Transition:
    if upgrade_phase is None:
        pytest.skip("no upgrade in this run (pass --kpr-upgrade-to=VERSION)")
    found = upgrade_phase.of_kind(request.param)
    if found is None:
        pytest.skip(f"no {request.param} in this run" + (" (pass --kpr-downgrade)" if request.param == "downgrade" else ""))
    return found


def where(t: Transition, family: str | None = None) -> str:
    """``upgrade 1.19.8 -> 1.20.2``, with `` (IPv6)`` for a family other than IPv4, as the flows are named."""
    return in_family(f"{t.kind} {t.from_version} -> {t.to_version}", family or "IPv4")


def flows_of(transition: Transition, kpr_family: str) -> tuple[FlowVerdicts, ...]:
    """The transition's flows of one family (none is a failure: the family's flows did not go through the roll)."""
    flows = transition.flows_of(kpr_family)
    if not flows:
        pytest.fail(f"{where(transition, kpr_family)}: no flow of {kpr_family} went through the roll (upgrade.json has flows of "
                    f"{', '.join(sorted({f.family for f in transition.flows}))})")
    return flows


def test_no_flow_was_reset_closed_or_stalled(transition: Transition, kpr_family: str) -> None:
    broken = [p for f in flows_of(transition, kpr_family) for p in f.broken]
    holds(broken, f"{where(transition, kpr_family)}: flows broke")


def test_no_flow_saw_a_gap_longer_than_allowed(transition: Transition, upgrade_phase: UpgradeRecord, kpr_family: str) -> None:
    long = [f"{p} (during {f.longest_gap_during or 'no agent restart on its path'})" for f in flows_of(transition, kpr_family) for p in f.gap]
    holds(long, f"{where(transition, kpr_family)}: gaps over --kpr-max-gap={upgrade_phase.max_gap_s:g} s")


def test_no_service_or_backend_id_changed_or_was_reused(transition: Transition, kpr_family: str) -> None:
    flows_of(transition, kpr_family)
    diff = transition.diff_of(kpr_family)
    changed = list(diff.service_ids + diff.backend_ids)
    holds(changed[:10], f"{where(transition, kpr_family)}: IDs changed (connections can end up at the wrong backend, cf. PR #18119)")


def test_the_flows_conntrack_entries_survive(transition: Transition, kpr_family: str) -> None:
    flows_of(transition, kpr_family)
    holds(list(transition.diff_of(kpr_family).ct_lost),
          f"{where(transition, kpr_family)}: the conntrack entries of these flows were gone after the roll (cf. #29667)")


def test_no_datapath_property_regressed(transition: Transition) -> None:
    holds(list(transition.regressions), f"{where(transition)}: held before and not after")
