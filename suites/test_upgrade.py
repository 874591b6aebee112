"""Upgrade gating: Cilium upgraded (and with --kpr-downgrade rolled back) under live flows, every flow measured.

Runs with --kpr-upgrade-to=VERSION (the run provisions at --kpr-cilium-version, the "from" version). The
upgrade itself happens before any suite (suites/conftest.py ``upgrade_phase``, pytest_kpr.scenarios.upgrade_run); these
tests judge what upgrade.json recorded, one verdict each, per transition. Five flows (a message every 10 ms,
each echoed): pod -> ClusterIP, host-network pod -> ClusterIP, pod -> NodePort on another node, host-network
pod on a node without a backend -> NodePort, UDP pod -> ClusterIP. Evidence: upgrade.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.judge import holds

pytestmark = [
    pytest.mark.kpr(property="upgrade", evidence="upgrade.json",
                    plane=["socket", "control plane"],
                    sources="SRC_UPGRADE_PATH"),
    pytest.mark.kpr_upgrade,
]


@pytest.fixture(params=["upgrade", "downgrade"])
def transition(request: pytest.FixtureRequest, upgrade_phase: Any) -> dict[str, Any]:
    if upgrade_phase is None:
        pytest.skip("no upgrade in this run (pass --kpr-upgrade-to=VERSION)")
    found = [t for t in upgrade_phase["transitions"] if t["kind"] == request.param]
    if not found:
        pytest.skip(f"no {request.param} in this run" + (" (pass --kpr-downgrade)" if request.param == "downgrade" else ""))
    return dict(found[0])


def where(t: dict[str, Any]) -> str:
    return f"{t['kind']} {t['from']} -> {t['to']}"


def test_no_flow_was_reset_closed_or_stalled(transition: dict[str, Any]) -> None:
    broken = [p for f in transition["flows"].values() for p in f["problems"]["broken"]]
    holds(broken, f"{where(transition)}: flows broke")


def test_no_flow_saw_a_gap_longer_than_allowed(transition: dict[str, Any], upgrade_phase: Any) -> None:
    long = [f"{p} (during {f['longest_gap_during'] or 'no agent restart on its path'})"
            for name, f in transition["flows"].items() for p in f["problems"]["gap"]]
    holds(long, f"{where(transition)}: gaps over --kpr-max-gap={upgrade_phase['max_gap_s']:g} s")


def test_no_service_or_backend_id_changed_or_was_reused(transition: dict[str, Any]) -> None:
    diff = transition["diff"]
    changed = diff["service_ids"] + diff["backend_ids"]
    holds(changed[:10], f"{where(transition)}: IDs changed (connections can end up at the wrong backend, cf. PR #18119)")


def test_the_flows_conntrack_entries_survive(transition: dict[str, Any]) -> None:
    lost = transition["diff"]["ct_lost"]
    holds(lost, f"{where(transition)}: the conntrack entries of these flows were gone after the roll (cf. #29667)")


def test_no_datapath_property_regressed(transition: dict[str, Any]) -> None:
    reg = transition["diff"]["regressions"]
    holds(reg, f"{where(transition)}: held before and not after")
