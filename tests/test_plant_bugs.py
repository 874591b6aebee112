"""scripts/plant_bugs.py stays plantable: every bug's original text is in its file exactly once (a move of the code it
targets must move the bug's path too, or the bug silently stops being planted)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_planted_bug_finds_its_text_once() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import plant_bugs
    finally:
        sys.path.remove(str(REPO / "scripts"))
    stale = [f"{b.name} ({b.path}: {(REPO / b.path).read_text().count(b.old) if (REPO / b.path).is_file() else 'no such file'})"
             for b in plant_bugs.BUGS if not (REPO / b.path).is_file() or (REPO / b.path).read_text().count(b.old) != 1]
    assert stale == [], "planted bugs whose text is not in their file exactly once: " + "; ".join(stale)
    for b in plant_bugs.BUGS:
        for t in b.tests:
            assert (REPO / t.split("::", 1)[0]).exists(), f"{b.name}: no test file or directory {t}"
