from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import use_fake_cluster  # noqa: F401  (re-exported)


def events(pytester: pytest.Pytester) -> dict[str, Any]:
    p = pytester.path / "fake-events.json"
    if not p.exists():
        return {"events": [], "namespaces": []}
    return json.loads(p.read_text())  # type: ignore[no-any-return]
