"""The fake's faults: what a module of the fake can be told to get wrong, declared beside the code that gets it wrong.

Each module of :mod:`pytest_kpr.testing` that implements a departure from a sourced rule declares it with
:func:`declare`: its name, the property it breaks (a suite's ``pytest.mark.kpr(property=...)``, or ``setup`` for a
fault that stops the run before any suite), one line saying what goes wrong, and its default. A fault that can hit one
address family declares ``per_family=True``: ``True`` breaks every family the cluster serves, ``"IPv4"`` or ``"IPv6"``
that family only (no IPv6 twin of the flag). :class:`Faults` is the set given to one fake cluster, checked against the
declarations; reading a fault nobody declared is an AttributeError.

A fault also says what it must fail: ``fails=`` holds its rows (:class:`Fails`: the tests that fail, the words each
failure says, and the rest of the fake's configuration for that run), which the self-tests run (tests/test_faults.py)
and the suites page shows; a fault no row can show (it stops the run, or acts only in time) names the test that proves
it in ``proven_by``. Adding a fault is one file: the declaration, its rows and the behaviour behind it, in the module
that answers what it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

FAMILIES = ("IPv4", "IPv6")
#: a fault that stops the run before any suite starts (install, readiness, the agents' configuration)
SETUP = "setup"


def _tuple(value: "str | tuple[str, ...]") -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True)
class Fails:
    """One row of the fault table: the fake given this fault (with ``value``, beside ``also`` and the ``fake`` settings)
    fails exactly ``tests`` in the suites the row runs, each failure with a line matching one of ``says``; every other
    test of those suites passes. A test is named as pytest does in the fault's own suite (``test_x[IPv6]``), and
    ``suite::test_x`` in another (the suite module's name without ``test_``); ``runs`` adds suites where nothing fails."""

    tests: "str | tuple[str, ...]"
    says: "str | tuple[str, ...]"
    #: the row's id (default: the fault's name, dashed)
    name: str = ""
    value: Any = True
    #: the rest of the fake cluster's configuration, as FakeConfig keywords: "ip_families=('IPv4', 'IPv6')"
    fake: str = ""
    #: other faults given in the same run, as (name, value)
    also: tuple[tuple[str, Any], ...] = ()
    runs: "str | tuple[str, ...]" = ()

    def __post_init__(self) -> None:
        for name in ("tests", "says", "runs"):
            object.__setattr__(self, name, _tuple(getattr(self, name)))


@dataclass(frozen=True)
class Fault:
    name: str
    #: the property it breaks: the ``property=`` of the suite that must fail on it (or SETUP)
    property: str
    #: what goes wrong, one line
    doc: str
    default: Any = False
    #: a boolean fault that may be limited to one family: its value is True (every family) or "IPv4" / "IPv6"
    per_family: bool = False
    #: what it must fail: its rows of the fault table
    fails: "Fails | tuple[Fails, ...]" = ()
    #: for a fault no row shows: the self-test that proves it (``tests/FILE.py::test_name``)
    proven_by: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.fails, Fails):
            object.__setattr__(self, "fails", (self.fails,))

    def check(self, value: Any) -> Any:
        """The value, or a ValueError of one line."""
        if self.per_family and value in FAMILIES:
            return value
        if isinstance(self.default, bool) or self.per_family:
            if isinstance(value, bool):
                return value
            families = f" or one of {', '.join(FAMILIES)}" if self.per_family else ""
            raise ValueError(f"fake fault {self.name} is True or False{families}, not {value!r}")
        if self.default is None or isinstance(value, type(self.default)) and not isinstance(value, bool):
            return value
        if isinstance(self.default, float) and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        raise ValueError(f"fake fault {self.name} is a {type(self.default).__name__}, not {value!r}")


#: every declared fault, by name (filled as the fake's modules are imported: importing pytest_kpr.testing imports them all)
DECLARED: dict[str, Fault] = {}


def declare(*faults: Fault) -> tuple[Fault, ...]:
    """Declare a module's faults (at its top, beside the behaviour). A name declared twice is a bug."""
    for f in faults:
        if f.name in DECLARED and DECLARED[f.name] != f:
            raise ValueError(f"fake fault {f.name} declared twice")
        DECLARED[f.name] = f
    return faults


def declared(name: str) -> Fault:
    """The declaration of fault ``name``, or a ValueError of one line naming the known ones."""
    fault = DECLARED.get(name)
    if fault is None:
        raise ValueError(f"no fake fault {name!r} (known: {', '.join(sorted(DECLARED))})")
    return fault


def by_property() -> dict[str, list[Fault]]:
    """The declared faults grouped by the property they break, each group by name."""
    out: dict[str, list[Fault]] = {}
    for f in sorted(DECLARED.values(), key=lambda f: (f.property, f.name)):
        out.setdefault(f.property, []).append(f)
    return out


def _rebuild(items: tuple[tuple[str, Any], ...]) -> "Faults":
    return Faults(**dict(items))


class Faults:
    """The faults given to one fake cluster: ``Faults(name=value, ...)``; an unset fault reads as its default.

    Immutable and hashable like the frozen configuration that holds it. A per-family fault set to a family is read
    with :meth:`on` (reading it as a plain flag would hit every family, so that is a TypeError)."""

    __slots__ = ("_given",)

    def __init__(self, **given: Any) -> None:
        checked = {}
        for name, value in given.items():
            fault = declared(name)
            value = fault.check(value)
            if value != fault.default:
                checked[name] = value
        object.__setattr__(self, "_given", dict(sorted(checked.items())))

    def __getattr__(self, name: str) -> Any:
        fault = DECLARED.get(name)
        if fault is None:
            raise AttributeError(f"no fake fault {name!r}")
        value = self._given.get(name, fault.default)
        if fault.per_family and value in FAMILIES:
            raise TypeError(f"fake fault {name} is set for {value} only: read it with Faults.on({name!r}, family)")
        return value

    def on(self, name: str, family: str | None) -> bool:
        """Whether per-family fault ``name`` hits ``family`` (None: a question of no family, hit only when set for all)."""
        fault = DECLARED.get(name)
        if fault is None or not fault.per_family:
            raise AttributeError(f"no per-family fake fault {name!r}")
        value = self._given.get(name, False)
        return value is True or (value in FAMILIES and value == family)

    def given(self) -> dict[str, Any]:
        """The faults set (those not at their default), by name."""
        return dict(self._given)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._given.items())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Faults is immutable: build another")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Faults) and self._given == other._given

    def __hash__(self) -> int:
        return hash(tuple(self._given.items()))

    def __repr__(self) -> str:
        return f"Faults({', '.join(f'{n}={v!r}' for n, v in self._given.items())})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (tuple(self._given.items()),))


def check_faults(pairs: "tuple[tuple[str, object], ...]") -> tuple[tuple[str, object], ...]:
    """``--kpr-fake-faults`` as parsed ((name, value or None), ...), checked against the declarations: an unknown name,
    a missing or wrong value is a ValueError of one line; a flag given without a value is True."""
    out = []
    for name, value in pairs:
        fault = declared(name)
        if value is None:
            if not isinstance(fault.default, bool):
                raise ValueError(f"fake fault {name} needs a value ({name}=VALUE)")
            value = True
        out.append((name, fault.check(value)))
    return tuple(out)


@dataclass(frozen=True)
class Row:
    """A declared row resolved against the suites: what tests/test_faults.py runs and the suites page shows."""

    name: str
    fault: str
    #: the suites the row runs, by module name without ``test_``: the fault's property's suite first
    suites: tuple[str, ...]
    #: the fake cluster's configuration, as FakeConfig keywords (``..., faults=Faults(name=value)``)
    config: str
    #: the tests that fail, as ``test_<suite>.py::test[param]``
    failing: frozenset[str]
    messages: tuple[str, ...]


def _resolve(fault: Fault, row: Fails, suite: str) -> Row:
    def full(test: str) -> str:
        where, sep, name = test.partition("::")
        return f"test_{where}.py::{name}" if sep else f"test_{suite}.py::{test}"

    others = [t.partition("::")[0] for t in row.tests if "::" in t]
    suites = tuple(dict.fromkeys([suite, *others, *row.runs]))
    faults = ", ".join(f"{n}={v!r}" for n, v in ((fault.name, row.value), *row.also))
    config = f"{row.fake}, faults=Faults({faults})" if row.fake else f"faults=Faults({faults})"
    return Row(row.name or fault.name.replace("_", "-"), fault.name, suites, config,
               frozenset(full(t) for t in row.tests), tuple(row.says))  # type: ignore[arg-type]


def rows(suite_of: "dict[str, str]") -> list[Row]:
    """Every declared fault's rows, resolved: ``suite_of`` maps a property to its suite's module name (``north_south``).
    In the order of the suites' names, then of the declarations. A fault whose property has no suite is a ValueError."""
    order = {name: i for i, name in enumerate(DECLARED)}
    out: list[tuple[str, int, int, Row]] = []
    for fault in DECLARED.values():
        if not fault.fails:
            continue
        suite = suite_of.get(fault.property)
        if suite is None:
            raise ValueError(f"fake fault {fault.name} fails tests, but no suite has its property {fault.property!r}")
        out += [(suite, order[fault.name], i, _resolve(fault, row, suite)) for i, row in enumerate(fault.fails)]  # type: ignore[arg-type]
    return [row for *_, row in sorted(out, key=lambda x: x[:3])]
