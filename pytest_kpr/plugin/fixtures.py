"""The fixtures of the plugin: the ``kpr_`` ones (thin wrappers over :class:`~pytest_kpr.plugin.session.KprSession`), and the
lab's workloads the conformance suites share, so that the packaged suites and a user's own suite files get the same
fixtures without a conftest to copy.

Each workload fixture creates its workload once, in the run's namespace, and waits until the datapath has
programmed it (the agent's tables, not just pods Running). A fixture that cannot set its workload up errors with the
reason: the property is then not judged, which is different from failing it."""

from __future__ import annotations

from pathlib import Path

import pytest

from typing import Any, Iterator

from ..cluster.facts import ClusterFacts
from ..cluster.provider import ClusterHandle
from ..evidence import Evidence
from ..observe.node import NodeRules
from ..observe.lab import Convergence, Ghost, Lab
from .keys import KPR_SESSION
from .session import OWNER_LABEL, OWNER_VALUE, RUN_LABEL, KprSession
from ..run.settings import Settings
from ..core.wait import Observation, Timeouts
from ..model.upgrade import UpgradeRecord


@pytest.fixture(scope="session")
def kpr_session(request: pytest.FixtureRequest) -> KprSession:
    return request.config.stash[KPR_SESSION]


@pytest.fixture(scope="session")
def kpr_settings(kpr_session: KprSession) -> Settings:
    return kpr_session.settings


@pytest.fixture(scope="session")
def kpr_timeouts(kpr_session: KprSession) -> Timeouts:
    return kpr_session.timeouts


@pytest.fixture(scope="session")
def kpr_cluster(kpr_session: KprSession) -> ClusterHandle:
    """The cluster under test (provisioned on first use)."""
    kpr_session.start()
    if kpr_session.unavailable:
        pytest.skip(kpr_session.unavailable)
    assert kpr_session.handle is not None
    return kpr_session.handle


@pytest.fixture(scope="session")
def kpr_facts(kpr_cluster: ClusterHandle, kpr_session: KprSession) -> ClusterFacts:
    """Cilium version, KPR features, nodes: read once per session."""
    assert kpr_session.facts is not None
    return kpr_session.facts


@pytest.fixture(scope="session")
def kpr_artifacts(kpr_settings: Settings) -> Path:
    """The artifacts directory (created)."""
    kpr_settings.artifacts.mkdir(parents=True, exist_ok=True)
    return kpr_settings.artifacts


def _module_stem(request: pytest.FixtureRequest) -> str:
    return str(request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-"))


@pytest.fixture(scope="module")
def kpr_namespace(kpr_cluster: ClusterHandle, kpr_session: KprSession, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace for this test module, labelled as the plugin's (Pod Security baseline); deleted when the module ends."""
    ns = kpr_session.ownership.create_namespace(_module_stem(request))
    yield ns
    kpr_session.ownership.end_namespace(ns, [])


# -- the lab's workloads (the conformance suites' shared fixtures) ------------------------------------------------

@pytest.fixture(scope="module")
def kpr_property(request: pytest.FixtureRequest) -> str:
    """The property the module's suite proves, as its ``pytest.mark.kpr(property=...)`` names it (the module's name when
    the mark names none): the key of its figure in the summary (``evidence.figure(kpr_property, ...)``)."""
    from .markers import KPR, parse_suite

    mark = request.node.get_closest_marker(KPR)
    default = request.node.path.stem if request.node.path is not None else "kpr"
    return parse_suite(mark.args, dict(mark.kwargs), default).property if mark is not None else default


@pytest.fixture(scope="module")
def kpr_family(request: pytest.FixtureRequest, kpr_facts: ClusterFacts) -> str:
    """The address family this run of a family-dependent test is for: ``IPv4`` or ``IPv6`` (hooks.pytest_generate_tests
    runs such a test once per family of --kpr-ip-families). A family the agents do not serve is skipped, naming it."""
    family = str(getattr(request, "param", "IPv4"))
    if family not in kpr_facts.ip_families:
        pytest.skip(f"{family}: the agents do not serve it (enable-{family.lower()} is not true; they serve "
                    f"{'+'.join(kpr_facts.ip_families) or 'no family'})")
    return family


@pytest.fixture(scope="module")
def family_lab(lab: Lab, kpr_family: str) -> Lab:
    """The lab seen in one address family: the workloads' addresses (ClusterIPs, pod and node addresses, EndpointSlices)
    of ``kpr_family``."""
    return lab.in_family(kpr_family)


@pytest.fixture(scope="module")
def family_views(lab: Lab) -> dict[str, Lab]:
    """The lab seen in each family of --kpr-ip-families the agents serve (Lab.family_views): for a scenario that changes its
    workloads, so runs once and observes every family; ``kpr_family`` then picks a test's part of it."""
    return lab.family_views()


@pytest.fixture(scope="session")
def evidence(kpr_session: KprSession) -> Evidence:
    return kpr_session.evidence  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def kpr_lab(kpr_cluster: ClusterHandle, kpr_session: KprSession, evidence: Evidence) -> Lab:
    """The session's lab: the workloads every suite shares (web, web-np, ghost, probe, hostprobe, the holders), in the
    run's ``datapath`` namespace, for the whole run."""
    # the session's facts, not the kpr_facts fixture: an upgrade (upgrade_phase) re-reads them, and kpr_facts is
    # first requested after it, so the suites judge the upgraded cluster by its own facts
    s = kpr_session.settings
    assert kpr_session.facts is not None
    lab = Lab(kpr_cluster, kpr_session.facts, kpr_session.timeouts, kpr_session.ownership.create_namespace("datapath"),
              image=s.probe_image, node_port=s.nodeport, progress=kpr_session.progress, ip_families=s.ip_families,
              run_id=kpr_session.run_id, run_labels={OWNER_LABEL: OWNER_VALUE, RUN_LABEL: kpr_session.run_id},
              track=kpr_session.ownership.track_cluster_object)
    return lab


@pytest.fixture(scope="module")
def lab(kpr_lab: Lab, kpr_session: KprSession, request: pytest.FixtureRequest) -> Iterator[Lab]:
    """The lab as this suite (test module) sees it (Lab.for_suite): what it creates goes into its own namespace
    (``kpr-suite-<module>-<run id>``, Pod Security privileged: its pods are the datapath's probes and servers), which is
    deleted when the suite ends -- its Services are gone before the next suite starts, the namespace is waited for at the
    run's end -- so no later suite sees its Services or their frontends; the shared workloads are the session's."""
    view = kpr_lab.for_suite(kpr_session.ownership.create_namespace(f"suite-{_module_stem(request)}", privileged=True))
    yield view
    kpr_session.progress(f"{_module_stem(request)}: deleting what the suite made (namespace {view.ns})")
    kpr_session.ownership.end_namespace(view.ns, view.made)


@pytest.fixture(scope="session")
def upgrade_phase(request: pytest.FixtureRequest, kpr_session: KprSession) -> UpgradeRecord | None:
    """With --kpr-upgrade-to: before any suite runs, upgrade Cilium under live flows (and with --kpr-downgrade roll
    back), write upgrade.json, and re-read the facts, so every suite then runs against the upgraded cluster.
    A refusal (one minor at a time, kernel floors, removed options) stops the run before anything changes."""
    s = kpr_session.settings
    if not s.upgrade_to or kpr_session.handle is None:
        return None
    from .session import EXIT_PROVISIONING
    from ..scenarios.upgrade_run import UpgradeRefused, UpgradeRun, require_upgradable

    if not kpr_session.handle.created and not s.allow_disruptive:
        kpr_session.exit("pytest-kpr: --kpr-upgrade-to changes Cilium on a cluster this run did not create; pass --kpr-allow-disruptive to do it",
                         EXIT_PROVISIONING)
    lab = request.getfixturevalue("kpr_lab")
    evidence = request.getfixturevalue("evidence")
    assert kpr_session.facts is not None
    run = UpgradeRun(lab, require_upgradable(kpr_session.provider), s, kpr_session.reread_facts)
    try:
        result = run.run(kpr_session.facts.cilium_version, s.upgrade_to, s.downgrade)
    except UpgradeRefused as e:
        kpr_session.exit("pytest-kpr: the upgrade is refused, nothing was changed:\n" + "\n".join(f"  - {r}" for r in e.reasons),
                         EXIT_PROVISIONING)
    evidence.write("upgrade.json", result.to_json())
    evidence.figure("upgrade", result.summary)
    return result


@pytest.fixture(scope="session")
def web(kpr_lab: Lab) -> Observation[Convergence]:
    """web: 2 replicas behind ClusterIP web:80 -> 8080, programmed on every agent."""
    return kpr_lab.deploy_web(replicas=2)


@pytest.fixture(scope="session")
def holder(kpr_lab: Lab, web: Observation[Convergence]) -> Lab:
    """holder: holds a TCP connection from port 40404 to web's ClusterIP:80 and logs getpeername()."""
    kpr_lab.deploy_holder()
    return kpr_lab


@pytest.fixture(scope="session")
def probe(kpr_lab: Lab) -> Lab:
    kpr_lab.deploy_probe()
    return kpr_lab


@pytest.fixture(scope="session")
def ghost(kpr_lab: Lab, probe: Lab) -> Ghost:
    """ghost: a NodePort service (with its ClusterIP) whose selector matches no pod."""
    return kpr_lab.deploy_ghost()


@pytest.fixture(scope="session")
def node_rules(kpr_lab: Lab, web: Observation[Convergence], kpr_facts: ClusterFacts) -> dict[str, NodeRules]:
    """Every node's rule views and IPVS services, read once per run (one exec per node) after web is programmed: the
    iptables suite and the kube-proxy suite judge the same reading."""
    return {n.name: kpr_lab.node(n.name).rules_and_ipvs() for n in kpr_facts.nodes}


@pytest.fixture(scope="session")
def web_np(kpr_lab: Lab, web: Observation[Convergence]) -> int:
    """web-np: NodePort service for web (--kpr-nodeport, 30780 by default)."""
    return kpr_lab.deploy_nodeport()


@pytest.fixture(scope="session", autouse=True)
def _kpr_upgrade_first(request: pytest.FixtureRequest, kpr_session: KprSession) -> None:
    """With --kpr-upgrade-to and kpr tests selected: the upgrade (upgrade_phase) happens before any other session fixture,
    so the suites' facts and workloads are the upgraded cluster's. A run without the option is untouched."""
    if kpr_session.settings.upgrade_to and kpr_session.selected_kpr:
        request.getfixturevalue("upgrade_phase")
