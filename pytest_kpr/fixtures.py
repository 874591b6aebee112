"""User-facing fixtures, all prefixed ``kpr_``. Thin wrappers over :class:`~pytest_kpr.session.KprSession`."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cluster.facts import ClusterFacts
from .cluster.provider import ClusterHandle
from .session import KprSession
from .settings import Settings
from .wait import Timeouts


@pytest.fixture(scope="session")
def kpr_session(request: pytest.FixtureRequest) -> KprSession:
    from .plugin import KPR_SESSION

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


@pytest.fixture(scope="module")
def kpr_namespace(kpr_cluster: ClusterHandle, kpr_session: KprSession, request: pytest.FixtureRequest) -> str:
    """A namespace for this test module, labelled as the plugin's; deleted at the end of the session."""
    stem = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-")
    return kpr_session.create_namespace(stem)
