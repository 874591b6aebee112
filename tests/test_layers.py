"""The layering in architecture.md, enforced: the library never imports pytest, and only `parse` reads
tool output (it imports nothing of the project outside itself)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "pytest_kpr"
PYTEST_ALLOWED = {"plugin.py", "fixtures.py", "session.py", "outcomes.py"}  # outcomes: the plugin's special skip


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.add(("." * node.level) + (node.module or ""))
    return out


def test_only_the_plugin_layer_imports_pytest() -> None:
    offenders = sorted(
        str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
        if p.name not in PYTEST_ALLOWED and any(i == "pytest" or i.startswith("pytest.") or i == "_pytest" for i in imports(p))
    )
    assert offenders == [], f"library modules importing pytest: {offenders}"


def test_parse_depends_on_nothing_else_in_the_project() -> None:
    offenders = {}
    for p in (PKG / "parse").glob("*.py"):
        outside = sorted(i for i in imports(p) if i.startswith("..") or i.startswith("pytest_kpr"))
        if outside and p.name != "cli.py":
            offenders[p.name] = outside
    assert offenders == {}, f"parse modules reaching outside parse/: {offenders}"
