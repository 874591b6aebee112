"""What ``--kpr-replay`` refuses to read, each in one line (Unavailable: exit 4 from the plugin, with the other inputs its preflight refuses), never a hang, a
traceback or memory filled: a FIFO, a gzip bomb, a truncated or foreign file, lines that are not entries."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from pytest_kpr.core.errors import Unavailable
from pytest_kpr.run import replay

META = json.dumps({"meta": {"run": "r1"}})
ENTRY = json.dumps({"seam": "kube", "op": "get", "args": {}, "t": 1.0, "answer": None})


def _rec(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "recording.jsonl.gz"
    p.write_bytes(data)
    return p


def test_a_good_recording_reads_as_before_and_several_gzip_members_too(tmp_path: Path) -> None:
    text = f"{META}\n{ENTRY}\n".encode()
    meta, entries = replay.load(_rec(tmp_path, gzip.compress(text[:20]) + gzip.compress(text[20:])))
    assert meta == {"run": "r1"} and entries == [json.loads(ENTRY)]


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)  # the same bytes in every process: pytest-xdist's workers must collect one set


@pytest.mark.parametrize(("data", "why"), [
    (b"hello", "not gzip"),
    (_gz(f"{META}\n{ENTRY}\n".encode())[:-12], "the gzip stream ends early"),
    (_gz(f"{META}\n[1, 2]\n".encode()), "entry 1 is not an object"),
    (_gz(f"{META}\n7\n".encode()), "argument of type 'int' is not iterable"),
    (_gz(b"[1]\n"), "'list' object has no attribute 'get'"),
    (_gz(b"\xff\xfe\n"), "codec can't decode"),
], ids=["not-gzip", "truncated", "entry-a-list", "entry-a-number", "meta-a-list", "not-utf8"])
def test_a_broken_recording_is_one_line(tmp_path: Path, data: bytes, why: str) -> None:
    path = _rec(tmp_path, data)
    with pytest.raises(Unavailable) as e:
        replay.load(path)
    assert str(e.value).startswith(f"--kpr-replay: {path} is not a readable recording: ") and why in str(e.value)
    assert "\n" not in str(e.value)


def test_a_gzip_bomb_is_refused_before_it_inflates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay, "MAX_INFLATED", 4096)
    path = _rec(tmp_path, gzip.compress(b"\0" * 1_000_000))
    with pytest.raises(Unavailable, match=r"is not a readable recording: it inflates past 0 MiB, more than a run records$"):
        replay.load(path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "recording.jsonl.gz"
    os.mkfifo(fifo)  # nobody writes to it: reading it would wait for ever
    with pytest.raises(Unavailable, match=r"is not a readable recording: not a regular file$"):
        replay.load(tmp_path)


@pytest.mark.parametrize("what", ["not-gzip", "fifo", "missing"])
def test_the_plugin_says_a_bad_replay_input_in_one_line_and_exits_4(pytester: pytest.Pytester, what: str) -> None:
    """Through the plugin (``pytest --kpr-provider=replay --kpr-replay=X``): one problem line, exit 4, no INTERNALERROR and
    no wait on a FIFO (before, a recording that could not be read was a traceback from the provider's construction)."""
    import shutil

    shutil.copy(Path(__file__).resolve().parents[2] / "suites" / "test_nodeport.py", pytester.path / "test_nodeport.py")
    target = pytester.path / "recording.jsonl.gz"
    if what == "not-gzip":
        target.write_bytes(b"not gzip")
    elif what == "fifo":
        os.mkfifo(target)
    result = pytester.runpytest("test_nodeport.py", "-m", "kpr", "--kpr-provider=replay", f"--kpr-replay={target}", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 4 and "INTERNALERROR" not in out, out[-2000:]
    assert len([ln for ln in out.splitlines() if ln.startswith("[kpr]   - --kpr-replay: ")]) == 1, out[-2000:]
