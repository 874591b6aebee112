"""The fake's faults: what a module of the fake can be told to get wrong, declared beside the code that gets it wrong.

Each module of :mod:`pytest_kpr.testing` that implements a departure from a sourced rule declares it with
:func:`declare`: its name, the property it breaks (a suite's ``pytest.mark.kpr(property=...)``, or ``setup`` for a
fault that stops the run before any suite), one line saying what goes wrong, and its default. A fault that can hit one
address family declares ``per_family=True``: ``True`` breaks every family the cluster serves, ``"IPv4"`` or ``"IPv6"``
that family only (no IPv6 twin of the flag). :class:`Faults` is the set given to one fake cluster, checked against the
declarations; reading a fault nobody declared is an AttributeError.

Adding a fault is one file: the declaration and the behaviour behind it, in the module that answers what it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

FAMILIES = ("IPv4", "IPv6")
#: a fault that stops the run before any suite starts (install, readiness, the agents' configuration)
SETUP = "setup"


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
