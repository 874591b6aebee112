"""The project's YAML files under clusters/, edited into something else: each is one line naming the file, the place and
what to write instead -- never a traceback, never a silently different value (YAML reads an unquoted 1.20 as 1.2)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

from pytest_kpr.core.yamlfile import YamlFileError

REPO = Path(__file__).resolve().parent.parent
CLUSTERS = REPO / "clusters"


def _edit(tmp_path: Path, name: str, change: Callable[[str], str]) -> Path:
    d = tmp_path / "clusters"
    shutil.copytree(CLUSTERS, d)
    (d / name).write_text(change((d / name).read_text()))
    return d


def _versions(d: Path) -> object:
    from pytest_kpr.run.resources import Pins

    return Pins.load(d)


def _kernels(d: Path) -> object:
    from pytest_kpr.rules.kernels import KernelTable

    return KernelTable.load(d / "kernels.yaml")


def _removed(d: Path) -> object:
    from pytest_kpr.scenarios.upgrade import load_removed

    return load_removed(d / "removed-options.yaml")


def _gaps(d: Path) -> object:
    from pytest_kpr.plugin.markers import load_known_gaps

    return load_known_gaps(d / "known-gaps.yaml")


CASES = [
    ("versions.yaml", _versions, lambda t: t.replace('oldest: "1.18"', "oldest: 1.20"), "cilium.oldest: 1.2 is a number, not a version"),
    ("versions.yaml", _versions, lambda t: t.replace("matrix: [1.18.14, 1.19.8, 1.20.5]", "matrix: [1.18.14, 1.20]"), "cilium.matrix: 1.2 is a number"),
    ("versions.yaml", _versions, lambda t: t.replace("matrix: [1.18.14, 1.19.8, 1.20.5]", "matrix: []"), "cilium.matrix is empty"),
    ("versions.yaml", _versions, lambda t: t + "\ncilium: {default: 1.20.5}\n", "the key 'cilium' is given twice"),
    ("versions.yaml", _versions, lambda t: "a: &x [1]\n" + "".join(f"b{i}: *x\n" for i in range(70)) + t, "more than 64 aliases (*x)"),
    ("versions.yaml", _versions, lambda t: t.replace("matrix: [", "matrix: [[", 1), "not valid YAML"),
    ("versions.yaml", _versions, lambda t: "just a string\n", "is a str, not a mapping"),
    ("versions.yaml", _versions, lambda t: t + "\n# " + "x" * (1024 * 1024) + "\n", "is larger than 1048576 bytes"),
    ("versions.yaml", _versions, lambda t: t.replace("matrix: [1.18.14, 1.19.8, 1.20.5]", "matrix: [1.18.14, \"1.19.8; rm -rf /\", 1.20.5]"),
     "is not a version"),
    ("kernels.yaml", _kernels, lambda t: t.replace('kernel: "5.10"', "kernel: 5.10", 1), "is a number, not a version"),
    ("kernels.yaml", _kernels, lambda t: t.replace("\nfloors:", "\nfloors: 3\nunused:", 1), "floors: is a int, not a list"),
    ("removed-options.yaml", _removed, lambda t: t.replace('since: "1.19"', "since: 1.19", 1), "since: 1.19 is a number"),
    ("removed-options.yaml", _removed, lambda t: t.replace("    helm: loadBalancer.experimental\n", "", 1),
     "give either helm (a value path) or agent (flags)"),
    ("known-gaps.yaml", _gaps, lambda t: t.replace('cilium: ">=1.18.0"', "cilium: 1.18", 1), "cilium must be a quoted range"),
    ("known-gaps.yaml", _gaps, lambda t: t.replace("\ngaps:", "\ngaps: []\nold:", 1), "gaps: is a list, not a mapping"),
]


@pytest.mark.parametrize(("name", "load", "change", "words"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_an_edited_cluster_file_is_one_line(tmp_path: Path, name: str, load: Callable[[Path], object], change: Callable[[str], str],
                                            words: str) -> None:
    from pytest_kpr.core.errors import KprError

    d = _edit(tmp_path, name, change)
    with pytest.raises(KprError) as e:
        load(d)
    assert isinstance(e.value, (YamlFileError, KprError))
    msg = str(e.value)
    assert words in msg and "\n" not in msg and len(msg) < 400, msg


def test_the_shipped_files_load() -> None:
    for load in (_versions, _kernels, _removed, _gaps):
        load(CLUSTERS)


def test_a_bad_versions_file_stops_the_run_in_one_line_exit_4(pytester: pytest.Pytester, tmp_path: Path) -> None:
    d = _edit(tmp_path, "versions.yaml", lambda t: t.replace('oldest: "1.18"', "oldest: 1.20"))
    pytester.makepyfile("import pytest\n@pytest.mark.kpr\ndef test_x(kpr_facts):\n    pass\n")
    result = pytester.runpytest("-m", "kpr", "--kpr-provider=fake", f"--kpr-clusters-dir={d}")
    assert result.ret == 4
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*versions.yaml: cilium.oldest: 1.2 is a number, not a version: YAML reads an unquoted 1.20 as 1.2; write it in quotes*"])
