from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester without the caller's PYTEST_ADDOPTS (as pytest-django does).

    The inner runs import pytest_kpr again in this process, so pytest warns it cannot rewrite its
    asserts; that is expected here and silenced.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-W ignore::pytest.PytestAssertRewriteWarning")
    return pytester


FAKE_CONFTEST = """
import pytest
from pytest_kpr.testing import FakeCluster, FakeConfig, FakeProvider, Faults

FAKE = FakeCluster(FakeConfig({config}))
PROVIDER = FakeProvider(FAKE, created={created}, unavailable={unavailable!r})

def pytest_kpr_provider(config, settings, timeouts, kube_factory):
    return PROVIDER

@pytest.hookimpl(trylast=True)  # after the plugin's own cleanup
def pytest_sessionfinish(session):
    import json, pathlib
    pathlib.Path("fake-events.json").write_text(json.dumps({{
        "events": PROVIDER.events,
        "namespaces": [o["metadata"]["name"] for o in FAKE.list("Namespace")],
    }}))
"""


def use_fake_cluster(pytester: pytest.Pytester, config: str = "", created: bool = True, unavailable: str | None = None) -> None:
    """Make the pytester run use an in-memory FakeCluster through the pytest_kpr_provider hook.

    The run writes ``fake-events.json`` (provider calls and the namespaces left) when it ends.
    """
    pytester.makeconftest(textwrap.dedent(FAKE_CONFTEST.format(config=config, created=created, unavailable=unavailable)))
