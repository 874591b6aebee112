"""The plugin's markers: names, one-line docs, argument validation and skip reasons."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..cluster.facts import ClusterFacts, Feature
from ..core.errors import MarkerError
from ..core.versions import Version, parse_min_version

KPR = "kpr"
REQUIRES = "kpr_requires"
DISRUPTIVE = "kpr_disruptive"
KNOWN_GAP = "kpr_known_gap"
UPGRADE = "kpr_upgrade"

DOCS = {
    KPR: ("kpr(property=None, evidence=(), last=False, plane=(), sources=()): a Cilium kube-proxy-replacement conformance "
          "test; runs only when selected with -m kpr. The suite contract: the property it proves (default: the module's "
          "name), the evidence files it writes, last=True to run after every other suite, the plane(s) whose answer it "
          "judges and the SRC_* citations of pytest_kpr.rules its rule rests on."),
    REQUIRES: (
        "kpr_requires(*features, cilium=None, kernel=None): skip unless the cluster has every feature "
        f"({', '.join(f.value for f in Feature)}), runs Cilium >= cilium and every node a kernel >= kernel."
    ),
    DISRUPTIVE: (
        "kpr_disruptive: changes cluster state beyond its own namespace (restarts agents, deletes shared "
        "objects); skipped on a cluster the plugin did not create unless --kpr-allow-disruptive."
    ),
    UPGRADE: "kpr_upgrade: judges an upgrade run; collected only with --kpr-upgrade-to (deselected otherwise).",
    KNOWN_GAP: (
        "kpr_known_gap(id): a gap listed in clusters/known-gaps.yaml; on the Cilium versions it lists the test is "
        "xfail(strict=True), so a release that fixes it is reported."
    ),
}


@dataclass(frozen=True)
class KnownGap:
    id: str
    property: str
    cilium: str
    reason: str
    references: tuple[str, ...]

    def applies(self, cilium_version: str) -> bool:
        from ..core.versions import in_range

        return in_range(Version.parse(cilium_version), self.cilium)

    def xfail_reason(self, cilium_version: str) -> str:
        return f"known gap {self.id} in Cilium {cilium_version} ({self.cilium}): {self.reason} See clusters/known-gaps.yaml."


def load_known_gaps(path: Any) -> dict[str, KnownGap]:
    from ..core import yamlfile as y
    from ..core.versions import in_range

    try:
        data = y.mapping(y.load(path, "the known gaps"), str(path))
        gaps = y.mapping(data.get("gaps"), f"{path}: gaps")
    except y.YamlFileError as e:
        raise MarkerError(str(e)) from None
    out = {}
    for gid, g in gaps.items():
        try:
            if not isinstance(g, dict) or not isinstance(g.get("cilium"), str):
                raise ValueError("cilium must be a quoted range such as \">=1.18.0, <1.21.0\" (YAML reads an unquoted 1.20 as 1.2)")
            in_range(Version.parse("1.0.0"), str(g["cilium"]))
            out[gid] = KnownGap(gid, str(g["property"]), str(g["cilium"]), " ".join(str(g["reason"]).split()), tuple(g.get("references") or ()))
        except (KeyError, TypeError, ValueError) as e:
            raise MarkerError(f"{path}: gap {gid!r} is malformed: {e}") from None
    return out


@dataclass(frozen=True)
class Requirement:
    features: frozenset[Feature]
    cilium: Version | None
    cilium_text: str | None
    kernel: Version | None
    kernel_text: str | None

    def unmet(self, facts: ClusterFacts) -> str | None:
        """The skip reason, or None when the cluster meets the requirement."""
        missing = sorted(f.value for f in self.features - facts.features)
        if missing:
            word = "feature" if len(missing) == 1 else "features"
            verb = "is" if len(missing) == 1 else "are"
            why = "; ".join(w for w in (facts.why_not(Feature(m)) for m in missing) if w)
            return f"requires {word} {', '.join(missing)}, which {verb} disabled on this cluster{': ' + why if why else ''}"
        if self.cilium is not None and facts.cilium < self.cilium:
            return f"requires Cilium >= {self.cilium_text}, cluster runs {facts.cilium_version}"
        if self.kernel is not None:
            low = facts.min_kernel()
            if low is not None and low[1] < self.kernel:
                return f"requires kernel >= {self.kernel_text}, node {low[0].name} runs {low[0].kernel}"
        return None


def _signature(*features: Any, cilium: Any = None, kernel: Any = None) -> tuple[tuple[Any, ...], Any, Any]:
    return features, cilium, kernel


def parse_requires(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Requirement:
    """Validate ``kpr_requires`` arguments; :class:`MarkerError` says what is wrong."""
    try:
        features, cilium, kernel = _signature(*args, **kwargs)
    except TypeError as e:
        raise MarkerError(f"@pytest.mark.{REQUIRES}: {e}") from None
    parsed: set[Feature] = set()
    for f in features:
        try:
            parsed.add(Feature(f.value if isinstance(f, Feature) else str(f)))
        except ValueError:
            valid = ", ".join(x.value for x in Feature)
            raise MarkerError(f"@pytest.mark.{REQUIRES}: unknown feature {f!r} (known: {valid})") from None
    cv = kv = None
    try:
        if cilium is not None:
            cv = parse_min_version(str(cilium))
        if kernel is not None:
            kv = parse_min_version(str(kernel))
    except ValueError as e:
        raise MarkerError(f"@pytest.mark.{REQUIRES}: {e}") from None
    return Requirement(
        frozenset(parsed), cv, str(cilium) if cilium is not None else None, kv, str(kernel) if kernel is not None else None
    )


# -- the suite contract: pytest.mark.kpr(property=..., evidence=..., last=...) ---------------------------------------

SUITE_KEYS = ("property", "evidence", "last", "plane", "sources")
_EVIDENCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\.json$")


@dataclass(frozen=True)
class Suite:
    """What a kpr suite module declares once, in its ``pytestmark``: the property it proves (the name every report, the
    summary and results.json use), the evidence files it writes, and whether it runs after every other suite."""

    property: str
    evidence: tuple[str, ...] = ()
    last: bool = False
    plane: tuple[str, ...] = ()  # keys of pytest_kpr.rules.PLANES
    sources: tuple[str, ...] = ()  # names of pytest_kpr.rules.sources(): the citations the suite's rule rests on


def _names(value: Any) -> Any:
    return (value,) if isinstance(value, str) else value


def parse_suite(args: tuple[Any, ...], kwargs: dict[str, Any], default_property: str) -> Suite:
    """Validate ``pytest.mark.kpr`` arguments (keywords only); :class:`MarkerError` says what is wrong, in one line."""
    if args:
        raise MarkerError(f"@pytest.mark.{KPR} takes keywords only ({', '.join(f'{k}=' for k in SUITE_KEYS)}), not {args[0]!r}")
    unknown = sorted(set(kwargs) - set(SUITE_KEYS))
    if unknown:
        raise MarkerError(f"@pytest.mark.{KPR}: unknown keyword {unknown[0]!r} (known: {', '.join(SUITE_KEYS)})")
    if "property" not in kwargs:
        prop = default_property
    elif not isinstance(prop := kwargs["property"], str) or not prop.strip() or len(prop) > 40 or any(c in prop for c in "\r\n\t"):
        raise MarkerError(f"@pytest.mark.{KPR}: property must be a name of 1-40 characters on one line, not {prop!r}")
    evidence = kwargs.get("evidence", ())
    names = (evidence,) if isinstance(evidence, str) else evidence
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) and _EVIDENCE_NAME.match(n) for n in names):
        raise MarkerError(f"@pytest.mark.{KPR}: evidence must be file names like 'svc.json' (one or a list), not {evidence!r}")
    last = kwargs.get("last", False)
    if not isinstance(last, bool):
        raise MarkerError(f"@pytest.mark.{KPR}: last must be True or False, not {last!r}")
    from ..rules import PLANES, sources as known_sources

    planes = _names(kwargs.get("plane", ()))
    if not isinstance(planes, (tuple, list)) or not all(isinstance(p, str) and p in PLANES for p in planes):
        raise MarkerError(f"@pytest.mark.{KPR}: plane must be one or a list of {', '.join(map(repr, PLANES))}, not {kwargs['plane']!r}")
    cited = _names(kwargs.get("sources", ()))
    if not isinstance(cited, (tuple, list)) or not all(isinstance(c, str) for c in cited):
        raise MarkerError(f"@pytest.mark.{KPR}: sources must be names of SRC_* citations in pytest_kpr.rules, not {kwargs['sources']!r}")
    known = known_sources()
    unknown_src = [c for c in cited if c not in known]
    if unknown_src:
        raise MarkerError(f"@pytest.mark.{KPR}: unknown source {unknown_src[0]!r} (a SRC_* citation of pytest_kpr.rules)")
    return Suite(prop.strip(), tuple(names), last, tuple(planes), tuple(cited))


def suite_modules(directory: Any) -> "dict[str, Any]":
    """Every suite module ``test_*.py`` in ``directory``, by file name, imported under private names, so that a test
    session that collected the same files is not disturbed."""
    import importlib.util
    from pathlib import Path

    out: dict[str, Any] = {}
    for path in sorted(Path(directory).glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(f"_kpr_contract_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out[path.name] = module
    return out


def suite_of(module: Any, default_property: str) -> Suite | None:
    """A module's contract (its ``pytestmark``'s kpr mark, validated), or None when it has none."""
    marks = getattr(module, "pytestmark", [])
    kpr = [m for m in (marks if isinstance(marks, list) else [marks]) if getattr(m, "name", None) == KPR]
    return parse_suite(kpr[0].args, dict(kpr[0].kwargs), default_property) if kpr else None


def suite_of_property(directory: Any) -> "dict[str, str]":
    """Each property of the suites in ``directory``, by name -> its suite module's name without ``test_``
    (``north-south`` -> ``north_south``): what the fake's fault rows are resolved against (pytest_kpr.testing.faults.rows)."""
    return {suite.property: name.removeprefix("test_").removesuffix(".py") for name, (suite, _) in suites_in(directory).items()}


def suites_in(directory: Any) -> "dict[str, tuple[Suite, str]]":
    """Every suite module in ``directory`` that carries the contract: file name -> (its contract, its docstring)."""
    out: dict[str, tuple[Suite, str]] = {}
    for name, module in suite_modules(directory).items():
        suite = suite_of(module, name.removesuffix(".py"))
        if suite is not None:
            out[name] = (suite, module.__doc__ or "")
    return out
