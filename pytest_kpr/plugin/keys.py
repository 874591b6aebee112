"""The plugin's stash keys, in one place: what the hooks put on the config and on each test item, and the fixtures read."""

from __future__ import annotations

import pytest

from . import markers
from .session import KprSession

#: the run's state (config.stash)
KPR_SESSION = pytest.StashKey[KprSession]()
#: the run's own directory under the default artifacts directory (None: an artifacts directory was named, or no kpr run)
KPR_RUN_NAME = pytest.StashKey["str | None"]()
#: a test's kpr_requires, kpr_known_gap and suite contract, parsed once at collection (item.stash)
REQUIREMENT = pytest.StashKey[markers.Requirement]()
KNOWN_GAP = pytest.StashKey[markers.KnownGap]()
SUITE = pytest.StashKey[markers.Suite]()
