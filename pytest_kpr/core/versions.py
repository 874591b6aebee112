"""Version numbers of Cilium and Linux kernels, compared the way a user reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+~_.]?(.*))?$")


@dataclass(frozen=True, order=True)
class Version:
    """A dotted version. ``Version.parse("1.18.0-pre.3") < Version.parse("1.18.0")``.

    Kernel strings such as ``6.1.0-18-amd64`` keep their suffix as ``extra`` and compare by the
    numeric part only (a distribution suffix is not a pre-release).
    """

    major: int
    minor: int = 0
    patch: int = 0
    prerelease: tuple[int, str] = (1, "")  # (0, tag) sorts before a release (1, "")
    extra: str = ""

    @classmethod
    def parse(cls, text: str, *, kernel: bool = False) -> "Version":
        m = _VERSION.match(text.strip())
        if not m:
            raise ValueError(f"not a version: {text!r}")
        major, minor, patch, rest = m.groups()
        rest = rest or ""
        pre: tuple[int, str] = (1, "")
        if rest and not kernel and re.match(r"(pre|rc|dev|alpha|beta|snapshot)", rest):
            pre = (0, rest)
        return cls(int(major), int(minor or 0), int(patch or 0), pre, rest)

    @property
    def minor_series(self) -> str:
        return f"{self.major}.{self.minor}"

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}.{self.patch}"
        return f"{base}-{self.extra}" if self.extra else base


def parse_min_version(text: str) -> Version:
    """Parse a minimum version as written in a marker: ``"1.18"`` means 1.18.0 and later, pre-releases included."""
    v = Version.parse(text)
    return Version(v.major, v.minor, v.patch, (0, ""))


def in_range(version: Version, spec: str) -> bool:
    """``">=1.18.0, <1.21.0"``: every comparison must hold. Pre-releases compare below their release."""
    ops = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b, "==": lambda a, b: a == b}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        m = re.fullmatch(r"(>=|<=|==|>|<)\s*(\S+)", part)
        if m is None:
            raise ValueError(f"not a version comparison: {part!r}")
        bound = Version.parse(m.group(2))
        v = Version(version.major, version.minor, version.patch, version.prerelease)
        b = Version(bound.major, bound.minor, bound.patch, bound.prerelease)
        if not ops[m.group(1)](v, b):
            return False
    return True


def kernel_tuple(text: str) -> tuple[int, ...] | None:
    """``6.8.0-49-generic`` -> (6, 8, 0); ``5.10`` -> (5, 10); None when it does not start with a version."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if m is None:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)
