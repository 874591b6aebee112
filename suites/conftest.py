"""The lab's workloads as session fixtures, shared by the datapath suites.

Each fixture creates its workload once, in the run's namespace, and waits until the datapath has
programmed it (the agent's tables, not just pods Running). A fixture that cannot set its workload up
errors with the reason: the property is then not judged, which is different from failing it.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_kpr.cluster.provider import ClusterHandle
from pytest_kpr.evidence import Evidence
from pytest_kpr.lab import Convergence, Ghost, Lab, report_values
from pytest_kpr.session import KprSession
from pytest_kpr.wait import Observation


@pytest.fixture(scope="session")
def evidence(kpr_session: KprSession) -> Evidence:
    return kpr_session.evidence  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def lab(kpr_cluster: ClusterHandle, kpr_session: KprSession, evidence: Evidence) -> Lab:
    # the session's facts, not the kpr_facts fixture: an upgrade (upgrade_phase) re-reads them, and kpr_facts is
    # first requested after it, so the suites judge the upgraded cluster by its own facts
    s = kpr_session.settings
    assert kpr_session.facts is not None
    lab = Lab(kpr_cluster, kpr_session.facts, kpr_session.timeouts, kpr_session.create_namespace("datapath"),
              image=s.probe_image, node_port=s.nodeport, progress=kpr_session.progress)
    kpr_session.before_cleanup.append(lambda: evidence.write_report(report_values(lab)))
    return lab


@pytest.fixture(scope="session", autouse=True)
def upgrade_phase(request: pytest.FixtureRequest, kpr_session: KprSession) -> Any:
    """With --kpr-upgrade-to: before any suite runs, upgrade Cilium under live flows (and with --kpr-downgrade roll
    back), write upgrade.json, and re-read the facts, so every suite then runs against the upgraded cluster.
    A refusal (one minor at a time, kernel floors, removed options) stops the run before anything changes."""
    s = kpr_session.settings
    if not s.upgrade_to or kpr_session.handle is None:
        return None
    from pytest_kpr.session import EXIT_PROVISIONING
    from pytest_kpr.upgrade_run import UpgradeRefused, UpgradeRun, require_upgradable

    if not kpr_session.handle.created and not s.allow_disruptive:
        pytest.exit("pytest-kpr: --kpr-upgrade-to changes Cilium on a cluster this run did not create; pass --kpr-allow-disruptive to do it",
                    returncode=EXIT_PROVISIONING)
    lab = request.getfixturevalue("lab")
    evidence = request.getfixturevalue("evidence")
    assert kpr_session.facts is not None
    run = UpgradeRun(lab, require_upgradable(kpr_session.provider), s, kpr_session.reread_facts)
    try:
        result = run.run(kpr_session.facts.cilium_version, s.upgrade_to, s.downgrade)
    except UpgradeRefused as e:
        pytest.exit("pytest-kpr: the upgrade is refused, nothing was changed:\n" + "\n".join(f"  - {r}" for r in e.reasons),
                    returncode=EXIT_PROVISIONING)
    evidence.write("upgrade.json", result)
    evidence.figure("upgrade", "; ".join(t["summary"] for t in result["transitions"]))
    return result


@pytest.fixture(scope="session")
def web(lab: Lab) -> Observation[Convergence]:
    """web: 2 replicas behind ClusterIP web:80 -> 8080, programmed on every agent."""
    return lab.deploy_web(replicas=2)


@pytest.fixture(scope="session")
def holder(lab: Lab, web: Observation[Convergence]) -> Lab:
    """holder: holds a TCP connection from port 40404 to web's ClusterIP:80 and logs getpeername()."""
    lab.deploy_holder()
    return lab


@pytest.fixture(scope="session")
def probe(lab: Lab) -> Lab:
    lab.deploy_probe()
    return lab


@pytest.fixture(scope="session")
def ghost(lab: Lab, probe: Lab) -> Ghost:
    """ghost: a NodePort service (with its ClusterIP) whose selector matches no pod."""
    return lab.deploy_ghost()


@pytest.fixture(scope="session")
def web_np(lab: Lab, web: Observation[Convergence]) -> int:
    """web-np: NodePort service for web (--kpr-nodeport, 30780 by default)."""
    return lab.deploy_nodeport()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A module that sets ``RUN_LAST = True`` (the map-pressure suite, which may fill the service map) runs after every
    other suite, so no other suite's Services meet a full map."""
    items.sort(key=lambda item: bool(getattr(getattr(item, "module", None), "RUN_LAST", False)))
