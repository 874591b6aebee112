"""Root conftest: locations of the shared reference material, for the plugin's own tests.

Nothing suite-specific lives here; the conformance suites get everything from the plugin.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("KPR_SHARED_DIR") or REPO_ROOT.parent / "shared")
CILIUM_FIXTURES = SHARED / "fixtures" / "cilium"


@pytest.fixture(scope="session")
def cilium_fixtures() -> Path:
    """``../shared/fixtures/cilium``: authentic Cilium output. Missing is a skip locally, an error in CI."""
    if not CILIUM_FIXTURES.is_dir():
        msg = f"shared Cilium fixtures not found at {CILIUM_FIXTURES} (expected ../shared next to the repository root)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return CILIUM_FIXTURES
