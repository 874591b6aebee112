"""``kpr scaffold property NAME``: the stubs of a new property in a checkout of pytest-kpr, and what it still lacks.

A property is four hand-written files (docs/contributing/layout.md): the suite, the judge with its observation type, the
judge's table test, and the fake's behaviour with its fault (``Fault(..., fails=Fails(...))`` beside it, in the module of
pytest_kpr/testing that answers what the property asks). The first three are written here, each a stub that fails until
it is filled (a stub that passed would prove nothing); the fourth lives in a module that exists, so its declaration is
printed for pasting. Run again, the command writes nothing that exists and lists what the property still lacks: a stub
not yet filled, a Cilium source not cited, no fault of the fake that breaks it, the catalogue not regenerated.
"""

from __future__ import annotations

import argparse
import ast
import keyword
import re
from pathlib import Path
from typing import Any

from ..core.exits import declare_exit
from ..core.inputs import BadInput

#: every stub carries it until its author replaces the stub's body
STUB = "kpr scaffold: stub"
_NAME = re.compile(r"^[a-z][a-z0-9_]{1,38}$")

SUITE = '''"""{title}: TODO one sentence, the rule the suite holds the cluster to (the suites page shows it as the Rule).

TODO what the suite creates (in its own namespace), what it observes, and which Cilium source line decides the
expected value (a ``SRC_*`` citation of pytest_kpr.rules, named in ``sources=``). Evidence: {evidence}.
"""

from __future__ import annotations

import pytest

from pytest_kpr.judge.{name} import {cls}, {name}_problems
from pytest_kpr.suite import Evidence, Lab, holds

pytestmark = [
    pytest.mark.kpr(property="{prop}", evidence="{evidence}", plane={plane!r}, sources=[]),
]


@pytest.fixture(scope="module")
def seen(lab: Lab, evidence: Evidence, kpr_property: str) -> {cls}:
    """What the cluster does, observed once for the suite's tests ({stub}: create, observe, then write the evidence)."""
    pytest.fail("{stub}: suites/test_{name}.py observes nothing yet")


def test_{name}_holds(seen: {cls}) -> None:
    """TODO what this test checks, in one line (the suites page lists it)."""
    holds({name}_problems(seen), "{prop}")
'''

JUDGE = '''"""{title}: TODO the property in one line.

Pure: an observation in, the list of problems out (empty = the property holds), worded so that a failure names the
property and shows what was seen."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class {cls}:
    """What the suite observes ({stub}: the fields the judgement needs, each with what it means)."""
    family: str

    def to_json(self) -> dict[str, Any]:
        """{evidence}."""
        return asdict(self)


def {name}_problems(seen: {cls}) -> list[str]:
    """TODO the rule, and the source line that decides it."""
    return ["{stub}: pytest_kpr/judge/{name}.py judges nothing yet"]
'''

TABLE = '''"""The {prop} judgement (pytest_kpr.judge.{name}) as a table: no root, no cluster."""

from __future__ import annotations

import pytest

from pytest_kpr.judge.{name} import {cls}, {name}_problems


@pytest.mark.parametrize(("seen", "want"), [
    # {stub}: a conforming observation judged [], and one row per way it can fail, with the exact words
    ({cls}("IPv4"), []),
])
def test_{name}_problems(seen: {cls}, want: list[str]) -> None:
    assert {name}_problems(seen) == want
'''

FAULT = '''    Fault("{name}_broken", "{prop}", "TODO what goes wrong, one line",
          fails=Fails(tests={tests}, says="*{prop}: TODO the words of the failure*")),'''


def _files(root: Path, name: str) -> dict[str, Path]:
    return {"suite": root / "suites" / f"test_{name}.py", "judge": root / "pytest_kpr" / "judge" / f"{name}.py",
            "table": root / "tests" / "judge" / f"test_{name}.py"}


def _values(name: str, prop: str, plane: str, evidence: str) -> dict[str, Any]:
    cls = "".join(p.capitalize() for p in name.split("_")) + "Observation"
    return {"name": name, "prop": prop, "title": prop[:1].upper() + prop[1:], "cls": cls, "plane": plane, "evidence": evidence,
            "stub": STUB}


def _checkout(root: Path) -> Path:
    """The checkout's root: the directory with suites/, pytest_kpr/judge/ and tests/judge/ (a BadInput otherwise)."""
    if not all((root / d).is_dir() for d in ("suites", "pytest_kpr/judge", "tests/judge")):
        raise BadInput(f"{root} is not a checkout of pytest-kpr (no suites/, pytest_kpr/judge/ and tests/judge/ there): "
                       "run it at the checkout's top or give --root")
    return root


def write_stubs(root: Path, name: str, prop: str, plane: str, evidence: str) -> list[Path]:
    """The stubs that do not exist yet, written; those that exist are left as they are."""
    values = _values(name, prop, plane, evidence)
    written = []
    for what, path in _files(root, name).items():
        if not path.exists():
            path.write_text({"suite": SUITE, "judge": JUDGE, "table": TABLE}[what].format(**values))
            written.append(path)
    return written


def _contract(suite: Path) -> dict[str, Any] | None:
    """The keywords of the suite's ``pytest.mark.kpr(...)`` that are literals (read from its source, not imported: a
    stub need not import), or None when it has no such mark."""
    for node in ast.walk(ast.parse(suite.read_text())):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.mark.kpr":
            out = {}
            for kw in node.keywords:
                try:
                    out[str(kw.arg)] = ast.literal_eval(kw.value)
                except ValueError:
                    continue
            return out
    return None


def _tests(suite: Path, name: str) -> str:
    """The suite's test functions, as a row's ``tests=`` names them (the stub's name while the suite cannot be read)."""
    try:
        names = [n.name for n in ast.parse(suite.read_text()).body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    except (OSError, SyntaxError):
        names = []
    names = names or [f"test_{name}_holds"]
    return repr(names[0]) if len(names) == 1 else repr(tuple(names))


def missing(root: Path, name: str, prop: str) -> list[str]:
    """What the property still lacks, one line each (empty: nothing)."""
    from .. import testing  # noqa: F401  (importing the fake declares its faults)
    from ..testing.faults import DECLARED

    out = [f"{p.relative_to(root)}: still the stub (replace each '{STUB}' body)" for p in _files(root, name).values()
           if p.is_file() and STUB in p.read_text()]
    suite_file = _files(root, name)["suite"]
    contract = _contract(suite_file) if suite_file.is_file() else None
    prop = str((contract or {}).get("property", prop))
    if contract is not None and not contract.get("sources"):
        out.append("no Cilium source cited: the line that decides the expected value, as a SRC_* citation in a topic module "
                   "of pytest_kpr/rules/ (path@tag-or-commit and the line), named in the contract's sources=")
    faults = [f for f in DECLARED.values() if f.property == prop]
    if not faults:
        out.append(f"no fault of the fake breaks it: in the module of pytest_kpr/testing/ that answers what the suite asks, the "
                   f"conforming behaviour (following the rule) and beside it, in its FAULTS = declare(...):\n{FAULT.format(name=name, prop=prop, tests=_tests(suite_file, name))}")
    elif not any(f.fails for f in faults):
        out.append(f"the faults {', '.join(f.name for f in faults)} declare no row: fails=Fails(tests=..., says=...)")
    catalogue = root / "docs" / "reference" / "properties.yaml"
    if not catalogue.is_file() or f"- property: {prop}\n" not in catalogue.read_text():
        out.append("the catalogue and the docs do not know it yet: python scripts/gen_docs.py (then make test)")
    return out


def _cmd(args: argparse.Namespace) -> int:
    name = args.name
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise BadInput(f"property name {name!r}: a Python module name of 2-39 characters, lower case (e.g. selectorless)")
    root = _checkout(Path(args.root).resolve())
    prop = args.property or name.replace("_", " ")
    for path in write_stubs(root, name, prop, args.plane, args.evidence or f"{name.replace('_', '-')}.json"):
        print(f"wrote {path.relative_to(root)}")
    lacks = missing(root, name, prop)
    if not lacks:
        print(f"{prop}: nothing missing")
        return 0
    print(f"{prop} still lacks:")
    for line in lacks:
        print(f"- {line}")
    return 1


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from ..rules import PLANES

    scaffold = sub.add_parser("scaffold", help="Stubs of a new property in a checkout of pytest-kpr, and what it still lacks")
    kinds = scaffold.add_subparsers(dest="kind", metavar="KIND", required=True)
    p = kinds.add_parser("property", help="the suite, the judge with its type and the judge's table test; then what is missing")
    statuses = {0: "nothing is missing", 1: "the stubs written or kept, something is still missing (listed)",
                2: "bad input: a name that is no module name, a directory that is no checkout"}
    p.description = ("Write the stubs of a new property (the suite, the judge with its observation type, the judge's table "
                     "test) where they do not exist yet, and list what the property still lacks: a stub not filled, a Cilium "
                     "source not cited, a fault of the fake that breaks it, the catalogue. " + declare_exit(p, statuses))
    p.add_argument("name", metavar="NAME", help="the module name: suites/test_NAME.py, pytest_kpr/judge/NAME.py")
    p.add_argument("--property", help="the property's name in the contract and the docs (default: NAME with spaces)")
    p.add_argument("--plane", default="control plane", choices=sorted(PLANES), help="the plane its tests read (default: %(default)s)")
    p.add_argument("--evidence", help="its evidence file (default: NAME.json, dashed)")
    p.add_argument("--root", default=".", help="the checkout's top (default: the current directory)")
    p.set_defaults(func=_cmd)
