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
                                  "figure": figures.get(prop, "")} for prop, outs in outcomes.items()},
            "tests": tests}
