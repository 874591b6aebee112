"""`kpr parse` against input no tool prints: each is one line on stderr and exit 2, never a traceback, never a hang."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from helpers import ctrl_c_as_from_a_terminal

KPR = [sys.executable, "-m", "pytest_kpr"]


def kpr_parse(fmt: str, data: bytes) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KPR, "parse", fmt, "-"], input=data.decode("utf-8", "surrogateescape").encode("utf-8", "surrogateescape"),
                          capture_output=True, timeout=120)  # type: ignore[return-value]


@pytest.mark.parametrize(("fmt", "data", "says"), [
    ("service-list-json", b"[" * 100_000 + b"]" * 100_000, b"nested more than 100 levels deep"),
    ("db-backends-json", b"{" + b'"a":' * 5000 + b"1" + b"}" * 5000, b"invalid JSON"),
    ("service-list-json", b'[{"ID": NaN}]', b"NaN is not JSON"),
    ("status-json", b'{"x": 1e999}', b"1e999 is not a finite number"),
    ("probe-json", b'{"verdict": "timeout", "elapsed_ms": "x"}', b"elapsed_ms must be int or float, got str"),
    ("probe-json", b'{"verdict": "icmp-unreachable", "elapsed_ms": 3, "icmp_type": "3"}', b"icmp_type must be int, got str"),
    ("probe-json", b'{"verdict": "http", "elapsed_ms": 3, "http_code": true}', b"http_code must be int, got bool"),
    ("status-json", b'{"x": "\\ud800"}', b"a lone surrogate"),
    ("status-json", b'{"x": "a\\u0000b"}', b"a NUL character inside a string"),
    # looser than the tools: what str.splitlines(), int() or \\d would read and no tool prints
    ("bpf-lb-list", "SERVICE ADDRESS     BACKEND ADDRESS (REVNAT_ID) (SLOT)\n10.96.0.1:443/TCP (0)\u2028 0.0.0.0:0 (1) (0) [ClusterIP]\n".encode(),
     b"a line break U+2028 no tool prints"),
    ("bpf-ct-list", b"TCP OUT 10.0.0.1:1 -> 10.0.0.2:2\rservice expires=1\n", b"a carriage return inside the line"),
    ("bpf-lb-list", "SERVICE ADDRESS     BACKEND ADDRESS (REVNAT_ID) (SLOT)\n10.96.0.\u0663:443/TCP (0)   0.0.0.0:0 (1) (0) [ClusterIP]\n".encode(),
     b"of another script; the tools print ASCII digits"),
    ("bpf-lb-list", b"SERVICE ADDRESS     BACKEND ADDRESS (REVNAT_ID) (SLOT)\n10.96.0.1:443/TCP (0)   0.0.0.0:0 (" + b"9" * 5000 + b") (0) [ClusterIP]\n",
     b"a number of 5000 digits"),
    ("status-json", b'{"x": ' + b"7" * 300 + b"}", b"a number of 300 digits"),
    ("service-list-json", b'[{"spec": {"id": 1, "id": 2}}]', b"is given twice in one object"),
    ("status", b"KubeProxyReplacement:\x00True\n", b"has a NUL byte"),
    ("status", b"\xff\xfe", b"is not UTF-8 text at byte 0"),
])
def test_input_no_tool_prints_is_one_line_and_exit_2(fmt: str, data: bytes, says: bytes) -> None:
    r = kpr_parse(fmt, data)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr[-500:]
    assert b"Traceback" not in r.stderr


def test_an_endless_device_is_refused_not_read_forever() -> None:
    r = subprocess.run([*KPR, "parse", "status", "/dev/zero"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "has a NUL byte" in r.stderr


def test_ctrl_c_stops_a_read_that_waits_for_input() -> None:
    p = subprocess.Popen([*KPR, "parse", "status", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=ctrl_c_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 120  # a hang guard: the wait ends when the process blocks reading its stdin
        while not _blocked_reading_stdin(p.pid) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130 and err.strip() == "interrupted"


def _blocked_reading_stdin(pid: int) -> bool:
    """/proc/PID/syscall: the process sits in read(0, ...) (x86_64 read is 0, arm64's is 63): Python's handler is set."""
    try:
        fields = open(f"/proc/{pid}/syscall").read().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] in ("0", "63") and fields[1] == "0x0"


def test_probe_json_reads_every_verdict_the_probes_print() -> None:
    """`kpr parse probe-json` reads what every `kpr probe ... --json` prints, the UDP probe's `answered` included (its
    reply_from and peer are extra keys)."""
    import json

    from pytest_kpr.parse.probe import parse_probe_json
    from pytest_kpr.traffic.probes import Verdict

    for v in Verdict:
        assert parse_probe_json(json.dumps({"verdict": v.value, "elapsed_ms": 1.5})).verdict == v.value
    udp = parse_probe_json('{"probe": "udp", "target": "10.96.0.10:53", "verdict": "answered", "elapsed_ms": 0.4, '
                           '"mode": "unconnected", "reply_from": "10.96.0.10:53"}')
    assert (udp.probe, udp.verdict, udp.target) == ("udp", "answered", "10.96.0.10:53")
