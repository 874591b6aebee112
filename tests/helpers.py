"""Helpers for pytester runs against the in-memory fake cluster."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

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


def events(pytester: pytest.Pytester) -> dict[str, Any]:
    """What the fake provider saw (preflight/provision/teardown) and the namespaces left at the end."""
    p = pytester.path / "fake-events.json"
    if not p.exists():
        return {"events": [], "namespaces": []}
    return json.loads(p.read_text())  # type: ignore[no-any-return]
