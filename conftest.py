"""Root conftest: where the plugin's own tests find their reference material.

Nothing suite-specific lives here; the conformance suites get everything from the plugin.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent
#: authentic Cilium output, each file with its public source in PROVENANCE.md (part of this repository)
CILIUM_FIXTURES = REPO_ROOT / "tests" / "data" / "cilium"


@pytest.fixture(scope="session")
def cilium_fixtures() -> Path:
    """``tests/data/cilium``: authentic Cilium output the parsers are proven on (see its PROVENANCE.md)."""
    assert (CILIUM_FIXTURES / "PROVENANCE.md").is_file(), f"{CILIUM_FIXTURES} is part of the repository and must not be missing"
    return CILIUM_FIXTURES
