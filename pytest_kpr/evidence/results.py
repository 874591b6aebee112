"""A run's verdicts per property, as the terminal summary prints them and results.json records them (``kpr matrix``
reads results.json from many runs' artifact directories)."""

from __future__ import annotations

from typing import Any

OUTCOMES = ("passed", "failed", "xfailed", "skipped")


def verdict(outcomes: list[str]) -> str:
    """``fail`` if any test of the property failed, ``pass`` if one passed, ``xfail`` if only known gaps, else ``skip``."""
    if "failed" in outcomes:
        return "fail"
    if "passed" in outcomes:
        return "pass"
    if "xfailed" in outcomes:
        return "xfail"
    return "skip"


def results_json(outcomes: dict[str, list[str]], figures: dict[str, str], tests: list[dict[str, str]],
                 run: dict[str, Any] | None = None) -> dict[str, Any]:
    """``run``: when it ended (UTC), the plugin version, the Cilium version, the lowest node kernel, the profile and
    pytest's exit status, so a results.json read on its own says what it is about."""
    return {**({"run": run} if run is not None else {}),
            "properties": {prop: {"verdict": verdict(outs), "counts": {o: outs.count(o) for o in OUTCOMES if outs.count(o)},
                                  "figure": figures.get(prop, ""), **_families(prop, tests)} for prop, outs in outcomes.items()},
            "tests": tests}


def _families(prop: str, tests: list[dict[str, str]]) -> dict[str, Any]:
    """``{"families": {"IPv4": verdict, "IPv6": verdict}}`` for a property whose tests ran per address family (each test
    entry's ``family``), the verdict of each family's tests; nothing for a property of no family."""
    by: dict[str, list[str]] = {}
    for t in tests:
        if t.get("property") == prop and t.get("family"):
            by.setdefault(t["family"], []).append(t["outcome"])
    return {"families": {f: verdict(outs) for f, outs in sorted(by.items())}} if by else {}
