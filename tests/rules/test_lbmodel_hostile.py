"""`kpr lbmodel replay` against hostile YAML: aliases and duplicate keys refused, bounded error messages, two spellings
of one frontend seen as one, and a long event list replayed without a quadratic step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_kpr.cli import main

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8)) + "window_ms: *i\nevents: []\n"


def replay(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    f = tmp_path / "events.yaml"
    f.write_text(text)
    rc = main(["lbmodel", "replay", str(f)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_an_alias_bomb_is_refused_at_the_first_alias(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert len(BOMB) < 1100  # about 1 KB, 9**9 strings once expanded
    rc, _, err = replay(tmp_path, BOMB, capsys)
    assert rc == 2 and "aliases (*name) are not allowed in an event list" in err and len(err.splitlines()) == 1


def test_a_value_whose_repr_is_huge_is_shown_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from pytest_kpr.core.inputs import show

    nested: list = ["x"] * 9
    for _ in range(8):
        nested = [nested] * 9  # shared references: 9**9 leaves if walked, as the YAML bomb's expansion is
    assert len(show(nested)) <= 60


def test_a_key_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = replay(tmp_path, "window_ms: 500\nwindow_ms: 5\nevents: []\n", capsys)
    assert rc == 2 and "key 'window_ms' given twice" in err


@pytest.mark.parametrize(("a", "b"), [("10.0.0.1:80/TCP", "10.0.0.1:00080/TCP"), ("[2001:db8::1]:80/TCP", "[2001:db8:0:0::1]:80/TCP"),
                                      ("[2001:DB8::1]:80/TCP", "[2001:db8::1]:80/TCP")])
def test_two_spellings_of_one_frontend_conflict(tmp_path: Path, capsys: pytest.CaptureFixture[str], a: str, b: str) -> None:
    events = [{"at_ms": 0, "op": "upsert", "service": "t/owner", "frontends": [a]},
              {"at_ms": 1000, "op": "upsert", "service": "t/claimant", "frontends": [b]}]
    rc, out, _ = replay(tmp_path, json.dumps({"events": events}), capsys)
    state = json.loads(out)
    assert rc == 0 and state["degraded"] is True and state["rejected"][0]["service"] == "t/claimant"


def test_a_hundred_thousand_events_replay_without_a_quadratic_step(tmp_path: Path) -> None:
    """A hang guard, not a timing: the linear replay takes a few seconds on a loaded 2-core runner (scripts: the docs'
    figure); the quadratic one it replaced ran into minutes."""
    events = [{"at_ms": i, "op": "upsert", "service": f"t/s{i % 500}", "frontends": [f"10.0.{i % 250}.{i % 200 + 1}:80/TCP"]}
              for i in range(100_000)]
    f = tmp_path / "many.json"
    f.write_text(json.dumps({"events": events}))
    r = subprocess.run([sys.executable, "-m", "pytest_kpr", "lbmodel", "replay", str(f)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-500:]


def test_json_input_refuses_a_key_given_twice_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = replay(tmp_path, '{"window_ms": 500, "window_ms": 5, "events": []}', capsys)
    assert rc == 2 and "key 'window_ms' given twice" in err and len(err.splitlines()) == 1
