"""The suite contract: ``pytest.mark.kpr(property=..., evidence=..., last=..., plane=..., sources=...)``, validated at
collection, is the one place a suite is described; the documentation's suites page (tests/test_docs.py) and the
suites-vs-fake evidence list are generated from it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_kpr.core.errors import MarkerError
from pytest_kpr.plugin.markers import Suite, parse_suite, suites_in

REPO = Path(__file__).resolve().parent.parent
SUITES = REPO / "suites"


@pytest.mark.parametrize(("args", "kwargs", "want"), [
    ((), {}, Suite("test_x")),
    ((), {}, Suite("test_a_module_name_longer_than_forty_characters_is_kept")),
    ((), {"property": "socket LB", "evidence": "ct.json"}, Suite("socket LB", ("ct.json",))),
    ((), {"property": " NodePort ", "evidence": ["a.json", "b.json"], "last": True}, Suite("NodePort", ("a.json", "b.json"), True)),
    ((), {"plane": "socket", "sources": "SRC_SOCK_FWD"}, Suite("test_x", plane=("socket",), sources=("SRC_SOCK_FWD",))),
    ((), {"plane": ["socket", "per-packet"], "sources": ["SRC_SOCK_FWD", "SRC_FRONTEND_CONFLICT", "SRC_UPGRADE_PATH"]},
     Suite("test_x", plane=("socket", "per-packet"), sources=("SRC_SOCK_FWD", "SRC_FRONTEND_CONFLICT", "SRC_UPGRADE_PATH"))),
    (("socket LB",), {}, "@pytest.mark.kpr takes keywords only (property=, evidence=, last=, plane=, sources=), not 'socket LB'"),
    ((), {"propery": "x"}, "@pytest.mark.kpr: unknown keyword 'propery' (known: property, evidence, last, plane, sources)"),
    ((), {"plane": "sockets"}, "@pytest.mark.kpr: plane must be one or a list of 'socket', 'per-packet', 'control plane', 'node rules', not 'sockets'"),
    ((), {"plane": [1]}, "@pytest.mark.kpr: plane must be one or a list of 'socket', 'per-packet', 'control plane', 'node rules', not [1]"),
    ((), {"sources": "SRC_NOPE"}, "@pytest.mark.kpr: unknown source 'SRC_NOPE' (a SRC_* citation of pytest_kpr.rules)"),
    ((), {"sources": ["SRC_SOCK_FWD", "PLANE_RULES"]}, "@pytest.mark.kpr: unknown source 'PLANE_RULES' (a SRC_* citation of pytest_kpr.rules)"),
    ((), {"sources": {"SRC_SOCK_FWD": 1}}, "@pytest.mark.kpr: sources must be names of SRC_* citations in pytest_kpr.rules, not {'SRC_SOCK_FWD': 1}"),
    ((), {"property": ""}, "@pytest.mark.kpr: property must be a name of 1-40 characters on one line, not ''"),
    ((), {"property": "a\nb"}, "@pytest.mark.kpr: property must be a name of 1-40 characters on one line, not 'a\\nb'"),
    ((), {"property": 3}, "@pytest.mark.kpr: property must be a name of 1-40 characters on one line, not 3"),
    ((), {"property": "x" * 41}, f"@pytest.mark.kpr: property must be a name of 1-40 characters on one line, not {'x' * 41!r}"),
    ((), {"evidence": "../x.json"}, "@pytest.mark.kpr: evidence must be file names like 'svc.json' (one or a list), not '../x.json'"),
    ((), {"evidence": "x.txt"}, "@pytest.mark.kpr: evidence must be file names like 'svc.json' (one or a list), not 'x.txt'"),
    ((), {"evidence": {"x.json": 1}}, "@pytest.mark.kpr: evidence must be file names like 'svc.json' (one or a list), not {'x.json': 1}"),
    ((), {"last": "yes"}, "@pytest.mark.kpr: last must be True or False, not 'yes'"),
])
def test_the_contract_is_validated_in_one_line(args: tuple, kwargs: dict, want: Suite | str) -> None:
    if isinstance(want, Suite):  # the default is the module's name, whatever its length
        assert parse_suite(args, kwargs, want.property if "property" not in kwargs else "test_x") == want
    else:
        with pytest.raises(MarkerError) as e:
            parse_suite(args, kwargs, "test_x")
        assert str(e.value) == want


def _written(path: Path) -> set[str]:
    """The evidence files a module writes itself: every ``evidence.write("<name>", ...)`` with a literal name, or with
    ``family_file("<name>", family)`` (a family-dependent suite's file: ``<name>`` for IPv4, ``<stem>-ipv6.json`` for IPv6)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "write"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "evidence" and node.args
                and isinstance(node.args[0], ast.Constant)):
            out.add(node.args[0].value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "family_file" and node.args
                and isinstance(node.args[0], ast.Constant)):
            out.add(node.args[0].value)
    return out


def test_every_suite_declares_its_property_and_the_evidence_it_writes() -> None:
    found = suites_in(SUITES)
    assert sorted(found) == sorted(p.name for p in SUITES.glob("test_*.py")), "every suite module carries the contract"
    props = [s.property for s, _ in found.values()]
    assert len(props) == len(set(props)), f"two suites prove the same property: {props}"
    library = "\n".join(p.read_text() for p in (REPO / "pytest_kpr").rglob("*.py"))
    for name, (suite, doc) in found.items():
        assert suite.evidence, f"{name}: the contract names no evidence file"
        written = _written(SUITES / name)
        assert written <= set(suite.evidence), f"{name} writes {sorted(written - set(suite.evidence))} without declaring it"
        for e in set(suite.evidence) - written:  # written for the suite by the library (upgrade.json by the upgrade run)
            assert f'"{e}"' in library, f"{name} declares {e}, which nothing writes"
        assert doc.strip(), f"{name}: no docstring (its first paragraph is the rule on the suites page)"
        assert suite.plane and suite.sources, f"{name}: the contract names no plane or no Cilium source (plane=, sources=)"


def test_a_broken_contract_stops_collection_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="import pytest\npytestmark = pytest.mark.kpr(propery='x')\ndef test_x():\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: test_a.py::test_x: @pytest.mark.kpr: unknown keyword 'propery' (known: property, evidence, last, plane, sources)"])


def test_last_runs_after_every_other_suite_and_the_property_names_the_results(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="import pytest\npytestmark = pytest.mark.kpr(property='filled last', last=True)\ndef test_a():\n    pass\n",
        test_b="import pytest\npytestmark = pytest.mark.kpr(property='plain')\ndef test_b(kpr_property):\n    assert kpr_property == 'plain'\n",
    )
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", "--kpr-artifacts=artifacts", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_b.py::test_b PASSED*", "*test_a.py::test_a PASSED*"])
    result.stdout.fnmatch_lines_random(["pass  plain *", "pass  filled last *"])


def test_suites_judge_through_holds_not_by_hand() -> None:
    """``holds(problems, property)`` is the one way a suite turns a judge's problems into a failure: no ``assert not x``."""
    by_hand = [f"{p.name}:{n.lineno}" for p in sorted(SUITES.glob("test_*.py")) for n in ast.walk(ast.parse(p.read_text()))
               if isinstance(n, ast.Assert) and isinstance(n.test, ast.UnaryOp) and isinstance(n.test.op, ast.Not)]
    assert by_hand == [], f"judge with holds(problems, property): {by_hand}"
