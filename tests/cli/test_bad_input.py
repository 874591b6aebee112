"""Bad input to every ``kpr`` command: exit status 2, one line on stderr, nothing on stdout.

The examples run as real processes (a traceback would show on stderr); property tests drive random
input through the same entry point in this process, with the probes replaced so nothing is sent.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
from typing import Any

import pytest
from helpers import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_kpr.cli import main
from pytest_kpr.parse.formats import FORMATS

BINARY = bytes(range(256)) * 4

# (argv, stdin or a file's content as {"file": bytes}, words the one line must contain)
EXAMPLES: list[tuple[list[str], Any, str]] = [
    (["probe", "syn", "127.0.0.1:70000"], None, "port must be an integer from 1 to 65535, got '70000'"),
    (["probe", "connect", "0x7f.1:80"], None, "host '0x7f.1' is an address in a form only inet_aton reads"),
    (["probe", "connect", "10.0.0x1:80"], None, "is an address in a form only inet_aton reads"),
    (["probe", "connect", "[fe80::1%nope]:80"], None, "names the zone 'nope', which is no interface here"),
    (["probe", "udp", "[fe80::1%4242]:53"], None, "names the zone '4242', which is no interface here"),
    (["probe", "syn", "127.0.0.1:0"], None, "port must be an integer from 1 to 65535, got '0'"),
    (["probe", "connect", "10.0.0.1:80", "--sport", "70000"], None, "--sport must be an integer from 1 to 65535"),
    (["probe", "hold", "10.0.0.1:80", "--sport", "0"], None, "--sport must be an integer from 1 to 65535"),
    (["probe", "connect", "10.0.0.1:80", "--timeout", "-1"], None, "--timeout must be a finite number of seconds, more than zero"),
    (["probe", "syn", "10.0.0.1:80", "--timeout", "nan"], None, "--timeout must be a finite number of seconds"),
    (["probe", "connect", "10.0.0.1:80", "--timeout", "inf"], None, "--timeout must be a finite number of seconds"),
    (["probe", "hold", "10.0.0.1:80", "--sport", "40404", "--seconds", "-5"], None, "--seconds must be a finite number of seconds, zero or more"),
    (["probe", "syn", "[::1]:80"], None, "the syn probe is IPv4-only; ::1 is IPv6"),
    (["probe", "syn", "::1:80"], None, "an IPv6 target is written [ADDRESS]:PORT"),
    (["probe", "syn", "bad_host!:80"], None, "is neither an IP address nor a host name"),
    (["probe", "syn", "10.0.0.1"], None, "expected HOST:PORT"),
    (["probe", "http", "10.0.0.1:80"], None, "expected an http:// or https:// URL"),
    (["probe", "http", "http://10.0.0.1:70000/"], None, "the URL's port must be an integer from 1 to 65535, got '70000'"),
    (["probe", "http", "http://10.0.0.1:0/"], None, "the URL's port must be an integer from 1 to 65535"),
    (["probe", "http", "ftp://10.0.0.1/"], None, "expected an http:// or https:// URL"),
    (["probe", "flow", "10.0.0.1:7100", "--interval-ms", "0"], None, "--interval-ms must be at least 1, got '0'"),
    (["probe", "connect", "10.0.0.1:80", "--count", "2.5"], None, "--count must be a whole number from 1 to 1000, got '2.5'"),
    (["probe", "connect", "10.0.0.1:80", "--count", "0"], None, "--count must be at least 1, got '0'"),
    (["probe", "flow", "10.0.0.1:7100", "--duration", "nan"], None, "--duration must be a finite number of seconds"),
    (["probe", "flow", "10.0.0.1:0"], None, "port must be an integer from 1 to 65535, got '0'"),
    (["probe", "flow", "10.0.0.1:7100", "--stall-ms", "inf"], None, "--stall-ms must be finite, got 'inf'"),
    (["probe", "echo-server", "--port", "70000"], None, "port must be an integer from 1 to 65535, got '70000'"),
    (["probe", "echo-server", "--port", "7100", "--bind", "not an address"], None, "--bind 'not an address' is neither an IP address nor a host name"),
    (["lbmodel", "replay", "-"], b"events: [{at_ms: .nan, op: delete, service: a/b}]\n", "event 0: at_ms must be finite, got nan"),
    (["lbmodel", "replay", "-"], b"window_ms: .inf\nevents: []\n", "window_ms must be finite, got inf"),
    (["lbmodel", "replay", "-"], b"batch_size: 1.5\nevents: []\n", "batch_size must be a whole number"),
    (["lbmodel", "replay", "-"], b"windw_ms: 5\nevents: []\n", "unknown key 'windw_ms'"),
    (["lbmodel", "replay", "-"], b"events: [{op: delete, service: a/b, at: 5}]\n", "event 0: unknown key 'at'"),
    (["lbmodel", "replay", "-"], b"events: [{op: upsert, service: a/b, frontends: ['10.0.0.300:80/TCP']}]\n", "needs an IPv4 address or [IPv6] and a port"),
    (["lbmodel", "replay", "-"], b"events: [{op: upsert, service: a/b, frontends: ['10.0.0.1:65536/TCP']}]\n", "needs an IPv4 address or [IPv6] and a port"),
    (["lbmodel", "replay", "-"], b"events: [{op: upsert, service: a/b, frontends: ['fd00::1:80/TCP']}]\n", "is not IP:PORT/PROTO"),
    (["lbmodel", "replay", "-"], b"events: [{op: upsert, service: a/b, frontends: '10.0.0.1:80/TCP'}]\n", "frontends must be a list"),
    (["lbmodel", "replay", "-"], b"events: [{at_ms: 5, op: delete, service: a/b}, {at_ms: 1, op: delete, service: a/b}]\n",
     "event 1: at_ms 1 is before event 0's 5; events must be in time order"),
    (["lbmodel", "replay", "-"], b"events: [\n", "standard input is not YAML at line 2"),
    (["lbmodel", "replay", "-"], BINARY, "standard input has a NUL byte: not text (a YAML event list expected)"),
    (["lbmodel", "replay", "FILE"], {"file": BINARY}, "has a NUL byte: not text (a YAML event list expected)"),
    (["lbmodel", "replay", "-"], b"\xff\xfe events", "standard input is not UTF-8 text at byte 0 (a YAML event list expected)"),
    (["lbmodel", "replay", "/nonexistent/replay.yaml"], None, "cannot read /nonexistent/replay.yaml: No such file or directory"),
    (["parse", "bpf-ct-list", "-"], BINARY, "standard input has a NUL byte: not text"),
    (["parse", "status", "-"], b"", "status: standard input is empty (nothing to parse)"),
    (["parse", "iptables-save", "-"], b" \n\n", "iptables-save: standard input is empty"),
    (["parse", "bpf-ct-list", "-"], b"\x01\x02\x03" * 300 + b"\n", "bpf-ct-list: line 1: unrecognised line: '\\x01\\x02"),
    (["parse", "no-such-format", "-"], b"x", "FORMAT 'no-such-format' is not one of the choices (see kpr parse --help)"),
]


# The examples run as `kpr` does, with the senders replaced: should a check ever let bad input through,
# the probe must not run from this (the host's) network namespace. It exits 99 instead, and the test
# fails. As root the process also gets an empty network namespace of its own (`unshare --net`, gone
# with the process), so not even a sender this list misses could reach anything.
NO_SEND = """
import socket, sys
def refuse(*args, **kwargs):
    sys.stderr.write("SENT: a probe ran although its input was bad\\n")
    sys.exit(99)
def no_dns(*args, **kwargs):
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
import pytest_kpr.traffic.probes as probes
for name in ("syn_probe", "connect_probe", "http_probe", "hold"):
    setattr(probes, name, refuse)
import pytest_kpr.traffic.flow as flow
flow.flow = flow.echo_server = refuse
socket.getaddrinfo = no_dns
from pytest_kpr.cli import main

sys.exit(main(sys.argv[1:]))
"""
ISOLATED = ["unshare", "--net"] if os.geteuid() == 0 and shutil.which("unshare") else []


def example_run(index: int, work: Path) -> subprocess.CompletedProcess[bytes]:
    """One example as a process (its own, so the exit status is the CLI's). Each test starts only its own: under
    pytest-xdist a module fixture that started them all ran once per worker (4 x 40 processes)."""
    argv, data, _ = EXAMPLES[index]
    if isinstance(data, dict):
        path = work / f"input-{index}"
        path.write_bytes(data["file"])
        argv = [str(path) if a == "FILE" else a for a in argv]
        data = None
    p = subprocess.Popen([*ISOLATED, sys.executable, "-c", NO_SEND, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(data or b"", timeout=60)
    finally:  # a hung example must not outlive the test
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[" ".join(a[:3]) + f"#{i}" for i, (a, _, _) in enumerate(EXAMPLES)])
def test_bad_input_is_one_line_exit_2_and_nothing_on_stdout(index: int, tmp_path: Path) -> None:
    argv, _, words = EXAMPLES[index]
    run = example_run(index, tmp_path)
    err = run.stderr.decode()
    assert run.returncode == 2, f"kpr {' '.join(argv)}: exit {run.returncode}, stderr {err!r}"
    assert run.stdout == b"", f"kpr {' '.join(argv)} wrote to stdout: {run.stdout[:200]!r}"
    assert err.count("\n") == 1 and err.endswith("\n"), f"not one line: {err!r}"
    assert "Traceback" not in err
    assert words in err, err
    assert len(err) < 400, f"the line is {len(err)} characters"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_empty_input_is_the_same_error_in_every_format(fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One rule for all formats: an empty input is bad input (usually a command that failed upstream)."""
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert main(["parse", fmt, str(empty)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"kpr parse: {fmt}: {empty} is empty (nothing to parse)\n"


def test_an_unresolvable_host_is_bad_input_not_a_verdict(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolution fails before anything is sent (it was reported as ``no-route``)."""
    def no_such_host(*a: Any, **k: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    sent = []
    monkeypatch.setattr("pytest_kpr.traffic.probes.syn_probe", lambda *a, **k: sent.append(a))
    for kind in ("syn", "connect"):
        assert main(["probe", kind, "nosuchhost.example:80"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == "kpr probe: cannot resolve host 'nosuchhost.example' to "\
            f"{'an IPv4 address' if kind == 'syn' else 'an address'}: Name or service not known\n"
    assert main(["probe", "http", "http://nosuchhost.example/"]) == 2
    assert sent == []


def test_a_name_that_resolves_is_probed_at_its_address(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET6, 1, 6, "", ("fd00::7", 0, 0, 0)),
                                                               (socket.AF_INET, 1, 6, "", ("10.96.0.10", 0))])
    seen = []
    def fake_connect(host: str, port: int, **kwargs: Any) -> _Result:
        seen.append((host, port))
        return _Result()

    monkeypatch.setattr("pytest_kpr.traffic.probes.connect_probe", fake_connect)
    assert main(["probe", "connect", "kube-dns.example:53"]) == 0
    assert seen == [("10.96.0.10", 53)], "IPv4 first"


class _Result:
    def explain(self) -> str:
        return "fake"

    def to_json(self) -> dict[str, Any]:
        return {}


# -- property tests: nothing random ever escapes as a traceback --------------------------------------

def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _assert_clean(argv: list[str], code: int, out: str, err: str) -> None:
    assert code in (0, 1, 2), (argv, code, err)
    if code == 2 and not err.startswith("usage:"):
        assert out == "" and err.count("\n") == 1, (argv, out, err)
    assert "Traceback" not in err


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
_port_like = st.one_of(st.integers(-5, 70000).map(str), _text)
_host_like = st.one_of(st.sampled_from(["10.0.0.1", "[fd00::1]", "fd00::1", "[::]", "localhost", "a..b", "-x", ""]), _text)


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["syn", "connect", "http", "hold"]), host=_host_like, port=_port_like,
       options=st.lists(st.tuples(st.sampled_from(["--timeout", "--sport", "--seconds", "--json", "--bogus"]), _port_like), max_size=3))
@example(kind="syn", host="10.0.0.1", port="70000", options=[])
@example(kind="http", host="http://10.0.0.1", port="0", options=[])
@example(kind="connect", host="10.0.0.1", port="80", options=[("--timeout", "nan")])
@example(kind="syn", host="10.0.0.1", port="1", options=[("--seconds", "\n")])  # found: argparse echoed the newline
def test_random_probe_arguments_never_raise(kind: str, host: str, port: str, options: list[tuple[str, str]],
                                            capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []

    def probe(*args: Any, **kwargs: Any) -> _Result:
        sent.append(args)
        return _Result()

    def hold(*args: Any, **kwargs: Any) -> int:
        sent.append(args)
        return 0

    for name in ("syn_probe", "connect_probe", "http_probe"):
        monkeypatch.setattr(f"pytest_kpr.traffic.probes.{name}", probe)
    monkeypatch.setattr("pytest_kpr.traffic.probes.hold", hold)

    def no_dns(*a: Any, **k: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    argv = ["probe", kind, f"{host}:{port}"]
    for flag, value in options:
        argv += [flag] if flag == "--json" else [flag, value]
    code, out, err = _run(argv, capsys)
    _assert_clean(argv, code, out, err)
    if code == 0:
        assert len(sent) == 1 and err == ""
    else:
        assert sent == [], f"{argv} was probed although it was rejected"


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True, allow_infinity=True), _text,
                     st.sampled_from(["upsert", "delete", "a/b", "10.0.0.1:80/TCP", "[fd00::1]:80/UDP", "cilium-1.18"]))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.sampled_from(["at_ms", "op", "service", "frontends", "events",
                                                                                          "variant", "window_ms", "batch_size", "x"]), inner, max_size=5)),
                       max_leaves=20)


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_values)
@example(data={"events": [{"op": "upsert", "service": "a/b", "frontends": ["10.0.0.1:80/TCP"], "at_ms": float("nan")}]})
@example(data={"window_ms": float("inf"), "events": []})
@example(data={"events": [{"op": "upsert", "service": "a/b", "frontends": "10.0.0.1:80/TCP"}]})
@example(data={"events": [{"op": "upsert", "service": "a/b", "frontends": [None]}]})
@example(data={"batch_size": True, "events": []})
def test_random_replay_files_never_raise(data: Any, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    path = tmp_path_factory.mktemp("replay") / "r.yaml"
    path.write_text(json.dumps(data, allow_nan=True).replace("NaN", ".nan").replace("-Infinity", "-.inf").replace("Infinity", ".inf"))
    argv = ["lbmodel", "replay", str(path)]
    code, out, err = _run(argv, capsys)
    _assert_clean(argv, code, out, err)
    if code == 0:
        assert json.loads(out)["frontends"] is not None


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(sorted(FORMATS)), raw=st.one_of(st.binary(max_size=200), _text.map(str.encode),
                                                             st.lists(st.sampled_from(["{", "}", "[", "]", "\"a\":", "1", ",", "\n", " ", "null",
                                                                                       "TCP OUT ", "10.0.0.1:80", " -> ", "Modules Health:",
                                                                                       "Name", "Status", "\t", ":"]),
                                                                      max_size=30).map(lambda xs: "".join(xs).encode())))
@example(fmt="bpf-ct-list", raw=BINARY)
@example(fmt="status", raw=b"")
@example(fmt="db-backends-json", raw=b"{\n").via("invalid JSON ending right after a newline: the error line is past the last line")
@example(fmt="db-backends-json", raw=b"[\n")
def test_random_parse_input_never_raises(fmt: str, raw: bytes, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path_factory.mktemp("parse") / "in"
    path.write_bytes(raw)
    argv = ["parse", fmt, str(path)]
    code, out, err = _run(argv, capsys)
    _assert_clean(argv, code, out, err)


@pytest.mark.parametrize("argv", [
    ["probe", "connect", "10.0.0.1:80", "--timeout", "1e300"],
    ["probe", "syn", "10.0.0.1:80", "--timeout", "86401"],
    ["probe", "http", "http://10.0.0.1/", "--timeout", "1e30"],
    ["probe", "hold", "10.0.0.1:80", "--sport", "40404", "--seconds", "1e300"],
    ["probe", "flow", "10.0.0.1:80", "--duration", "1e18"],
    ["probe", "flow", "10.0.0.1:80", "--interval-ms", "1e300"],
    ["probe", "flow", "10.0.0.1:80", "--stall-ms", "1e12"],
    ["probe", "connect", "10.0.0.1:80", "--count", "2", "--interval", "1e300"],
])
def test_every_duration_has_a_finite_upper_bound(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_kpr.cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "at most" in err and len(err.strip().splitlines()) == 1, err


# -- kpr matrix: artifacts from bytes and from structured garbage ------------------------------------------------------

_json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10, 10**25), st.floats(allow_nan=False), _text,
                                      st.sampled_from(["pass", "fail", "skip", "xfail", "1.20.5", "6.1.0-50-amd64", "install", "failed"])),
                            lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(st.sampled_from(["properties", "verdict", "figure", "counts", "run",
                                                                                     "complete", "exit_status", "cilium_version", "nodes",
                                                                                     "kernel", "profile", "phases", "phase", "outcome",
                                                                                     "provider", "iptables", "x"]), inner, max_size=5)),
                            max_leaves=25)
_artifact = st.one_of(st.binary(max_size=300), _json_values.map(lambda v: json.dumps(v).encode()),
                      _json_values.map(lambda v: json.dumps(v).encode()[: max(1, len(json.dumps(v)) // 2)]))  # cut short


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(cluster=_artifact, results=st.one_of(st.none(), _artifact), compare=st.booleans())
@example(cluster=b'{"cilium_version": "1.20.5"}', results=b"{}", compare=True)
@example(cluster=b'{"cilium_version": "1.20.5", "nodes": [{"kernel": 5}]}', results=None, compare=False)
def test_random_artifacts_never_break_the_matrix_or_its_gate(cluster: bytes, results: bytes | None, compare: bool,
                                                             tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path_factory.mktemp("artifacts")
    for name in ("old", "new"):
        d = root / name / "kpr"
        d.mkdir(parents=True)
        (d / "cluster.json").write_bytes(cluster if name == "new" else b'{"cilium_version": "1.20.5", "nodes": []}')
        if name == "old":
            (d / "results.json").write_text('{"properties": {"iptables": {"verdict": "pass"}}}')
        elif results is not None:
            (d / "results.json").write_bytes(results)
    argv = ["matrix", "--compare", str(root / "old"), str(root / "new")] if compare else ["matrix", str(root / "new")]
    code, out, err = _run(argv, capsys)
    _assert_clean(argv, code, out, err)
    assert compare or code != 1, "kpr matrix alone has no regression to report"


# -- kpr lbmodel replay from raw bytes (YAML's own syntax, aliases included) --------------------------------------------

@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(raw=st.one_of(st.binary(max_size=200),
                     st.lists(st.sampled_from(["events:", " - ", "{", "}", "[", "]", "&a ", "*a", "<<: ", "!!python/object ", "at_ms: ",
                                               "1e999", ".nan", "op: upsert", "service: a/b", "frontends: ", "'10.0.0.1:80/TCP'", "\n",
                                               "  ", ",", "window_ms: ", "window_ms: 5"]), max_size=30).map(lambda xs: "".join(xs).encode())))
@example(raw=b"a: &a [x]\nb: *a\nevents: []\n")
@example(raw=b"window_ms: 5\nwindow_ms: 6\nevents: []\n")
def test_random_yaml_bytes_never_break_lbmodel_replay(raw: bytes, tmp_path_factory: pytest.TempPathFactory,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path_factory.mktemp("yaml") / "r.yaml"
    path.write_bytes(raw)
    argv = ["lbmodel", "replay", str(path)]
    code, out, err = _run(argv, capsys)
    _assert_clean(argv, code, out, err)


# -- --kpr-* option values ------------------------------------------------------------------------------------------------

@settings(max_examples=examples(100), deadline=None)
@given(name=st.sampled_from(sorted(o.name for o in __import__("pytest_kpr.run.settings", fromlist=["OPTIONS"]).OPTIONS if o.kind == "value")),
       value=st.one_of(_text, st.sampled_from(["1e300", "-1", "0", "nan", "1.20.2;id", "../../x", "a" * 300, "", " "])))
@example(name="upgrade_to", value="1.20.2;id")
@example(name="timeout_scale", value="1e300")
@example(name="artifacts", value="a" * 300).via("a name past NAME_MAX: every look-up of the path raised OSError")
@example(name="kind_config", value="0\n0").via("a newline in a value made the error two lines")
@example(name="profile", value="a" * 300).via("a profile name past NAME_MAX: looking for its kind config raised OSError")
@example(name="artifacts", value="~\x00").via("found by a fresh-clone run: '~' was expanded before the NUL check, ValueError")
@example(name="kind_config", value="~a\x00b").via("the same for a file option: expanduser looked up the user 'a\\x00b'")
def test_random_option_values_are_a_settings_error_or_a_value(name: str, value: str) -> None:
    """Every value of every --kpr-* option either resolves or is a SettingsError (one line): never another exception."""
    from pytest_kpr.core.errors import SettingsError
    from pytest_kpr.run.settings import resolve

    try:
        resolve({f"kpr_{name}": value}, lambda key: None, REPO)
    except SettingsError as e:
        assert "\n" not in str(e) and str(e)


def test_the_self_tests_replay_the_same_examples_unless_asked_to_explore() -> None:
    """make test (CI or not) is derandomised and has no database: it passes or fails the same way on every run. Only
    scripts/hypothesis_fresh_runs.sh explores: new seeds and three times the examples."""
    from hypothesis import settings as current

    assert current.default.derandomize is True and current.default.database is None and examples(100) == 100
    probe = "import helpers, sys; sys.stdout.write(f'{helpers.EXPLORING} {helpers.examples(100)}')"
    tests = Path(__file__).parents[1]
    out = subprocess.run([sys.executable, "-c", probe], cwd=tests, capture_output=True, text=True, env={**os.environ, "KPR_HYPOTHESIS": "explore"})
    assert out.stdout == "True 300", out.stderr
    assert "KPR_HYPOTHESIS=explore" in (tests.parent / "scripts" / "hypothesis_fresh_runs.sh").read_text()


def test_standard_input_closed_is_one_line() -> None:
    """``kpr parse FORMAT -`` started with standard input closed (``<&-``): one line, exit 2, no traceback."""
    p = subprocess.run([sys.executable, "-m", "pytest_kpr", "parse", "bpf-lb-list", "-"], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60, preexec_fn=lambda: os.close(0))
    err = p.stderr.decode()
    assert (p.returncode, p.stdout) == (2, b""), err
    assert err == "kpr parse: standard input is closed (the output of the tool for bpf-lb-list expected); pass a file or pipe the output in\n"


def test_kpr_version_is_also_an_option() -> None:
    both = [subprocess.run([sys.executable, "-m", "pytest_kpr", *a], capture_output=True, timeout=60) for a in (["--version"], ["version"])]
    assert [r.returncode for r in both] == [0, 0] and both[0].stdout == both[1].stdout and both[0].stdout.startswith(b"pytest-kpr ")


@pytest.mark.parametrize("name", ["kind-kpr", "../../etc", "..", ".", "", "a/b", "arn:aws:eks:eu-west-1:123456789012:cluster/prod",
                                  "x" * 300, "evil\nname", "ünï", "/abs/path", "a\x00b"])
def test_a_context_or_cluster_name_is_one_directory_under_the_artifacts(name: str, tmp_path: Path) -> None:
    """A kubeconfig context is the evidence directory's name: whatever it holds, it stays one directory inside the
    artifacts directory, and different names stay different."""
    from pytest_kpr.core.inputs import path_component

    d = path_component(name)
    assert d and "/" not in d and not d.startswith(".") and len(d) <= 100 and d.isprintable(), d
    assert (tmp_path / d).resolve().parent == tmp_path.resolve()
    assert path_component("kind-kpr") == "kind-kpr"  # an ordinary name is kept as it is
    others = {path_component(n) for n in ("a/b", "a_b", "a:b")}
    assert len(others) == 3
