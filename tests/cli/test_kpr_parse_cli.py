"""`kpr parse FORMAT [FILE|-]`: one JSON document on stdout, or the ParseError on stderr and exit 1."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_kpr.cli import main
from pytest_kpr.parse.formats import FORMATS
from pytest_kpr.testing import render

LOCAL = Path(__file__).parent.parent / "data" / "local"


def kpr_parse(fmt: str, text: str | None = None, path: Path | None = None, subprocess_: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``kpr parse`` in-process (fast), or as the real console entry in a subprocess."""
    args = ["parse", fmt] + ([str(path)] if path else ["-"])
    if subprocess_:
        return subprocess.run([sys.executable, "-m", "pytest_kpr", *args], input=text, capture_output=True, text=True, timeout=60)
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(text or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(args)
            except SystemExit as e:
                rc = int(e.code or 0)
    finally:
        sys.stdin = old_stdin
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


def ok(cp: subprocess.CompletedProcess[str]):  # type: ignore[no-untyped-def]
    assert cp.returncode == 0, cp.stderr
    assert cp.stderr == ""
    return json.loads(cp.stdout)


def samples(cilium: Path) -> dict[str, Path | str]:
    """One real input per required FORMAT: a shared fixture, a local capture, or (where no authentic
    sample exists: status -o json, map list, endpoint get) the renderer that follows Cilium's printer."""
    return {
        "service-list": cilium / "service-list/main-2026-02-issue-pr44301-kind.txt",
        "service-list-json": cilium / "unattributed/service-list-o-json-v1.18plus.json",
        "bpf-lb-list": cilium / "bpf-lb-list/v1.16.0-dev-2024-03-pr31503-pre-slot-suffix.txt",
        "bpf-ct-list": cilium / "bpf-ct-list/v1.18-issue40820-ct6-global.txt",
        "bpf-metrics-list": cilium / "bpf-metrics-list/v1.16.0-dev-2024-02-pr30972-line-file.txt",
        "status": cilium / "status/v1.17-commit-e46568b6b2-kpr-details-verbose.txt",
        "status-json": render.status_json(hostns_only=True),
        "config": cilium / "unattributed/config-all-v1.18-likely-2025-08.txt",
        "map-list": render.map_list([("cilium_lb4_services_v2", 12), ("cilium_policy_v2_00123", 0)]),
        "endpoint-json": render.endpoint_json({"id": 123, "namespace": "t", "pod": "holder", "ipv4": "10.244.1.7", "ifindex": 17, "ifname": "lxc49adfa975abf"}),
        "db-frontends": cilium / "statedb-lb/v1.19-issue45252-db-show-frontends-grep.txt",
        "bpftool-net": cilium / "bpftool-net/v1.17.7-issue41393-tcx-netdev.txt",
        "iptables-save": LOCAL / "iptables-nft-save.txt",
        "ss": LOCAL / "ss-tn.txt",
        "netstat": LOCAL / "busybox-netstat-tn.txt",
    }


REQUIRED = ["service-list", "service-list-json", "bpf-lb-list", "bpf-ct-list", "bpf-metrics-list", "status", "status-json", "config", "map-list",
            "endpoint-json", "db-frontends", "bpftool-net", "iptables-save", "ss", "netstat"]


def test_every_required_format_is_registered() -> None:
    assert set(REQUIRED) <= set(FORMATS)


@pytest.mark.parametrize("fmt", REQUIRED)
def test_each_format_parses_from_a_file_and_from_stdin(cilium_fixtures: Path, fmt: str) -> None:
    src = samples(cilium_fixtures)[fmt]
    if isinstance(src, Path):
        a, b = ok(kpr_parse(fmt, path=src, subprocess_=fmt == "service-list")), ok(kpr_parse(fmt, text=src.read_text()))
    else:
        a = b = ok(kpr_parse(fmt, text=src))
    assert a == b and a


def test_json_keys_of_the_main_formats(cilium_fixtures: Path) -> None:
    s = samples(cilium_fixtures)
    svc = ok(kpr_parse("service-list", path=s["service-list"]))[1]  # type: ignore[arg-type]
    assert svc == {"id": 2, "frontend": "10.96.0.10:53/TCP", "type": "ClusterIP",
                   "backends": [{"address": "10.244.1.69:53/TCP", "state": "active"}, {"address": "10.244.1.109:53/TCP", "state": "active"}]}
    v6 = ok(kpr_parse("service-list", path=cilium_fixtures / "service-list/v1.15-or-v1.16-issue33076-ipv6-dualstack.txt"))[0]
    assert v6["frontend"] == "[ffff:fff:fff:701::2:dceb]:80", "no /PROTO when the input has none"
    lb = ok(kpr_parse("bpf-lb-list", path=s["bpf-lb-list"]))[:2]  # type: ignore[arg-type]
    assert lb == [
        {"frontend": "10.96.0.1:443", "slot": 1, "backend": "172.18.0.3:6443", "revnat": 1, "flags": []},
        {"frontend": "10.96.0.1:443", "slot": 0, "backend": None, "revnat": 1, "flags": ["ClusterIP", "non-routable"]},
    ]
    ct = ok(kpr_parse("bpf-ct-list", path=s["bpf-ct-list"]))[1]  # type: ignore[arg-type]
    assert {k: ct[k] for k in ("proto", "dir", "src", "dst", "flags", "rev_nat", "backend_id", "source_security_id")} == {
        "proto": "TCP", "dir": "SVC", "src": "2603:8080:c0f0:d2e0:99f2:9195:c043:304f:44564", "dst": "2a03:3f40:88:1::24:80",
        "flags": ["RxClosing", "TxClosing", "SeenNonSyn"], "rev_nat": 218, "backend_id": 98, "source_security_id": 0,
    }
    assert ct["expires"] == 26806933 and ct["last_tx_report"] == 26806929
    fe = ok(kpr_parse("db-frontends", path=s["db-frontends"]))[1]  # type: ignore[arg-type]
    assert {k: fe[k] for k in ("address", "type", "service", "status", "error")} == {
        "address": "0.0.0.0:30885/TCP/i", "type": "NodePort", "service": "default/service-deathstar", "status": "Done", "error": None}
    ep = ok(kpr_parse("endpoint-json", text=s["endpoint-json"]))[0]  # type: ignore[arg-type]
    assert (ep["id"], ep["interface_name"], ep["interface_index"]) == (123, "lxc49adfa975abf", 17)
    st = ok(kpr_parse("status-json", text=s["status-json"]))  # type: ignore[arg-type]
    assert st["kpr"]["socket_lb_hostns_only"] is True and st["kpr"]["mode"] == "True"


def test_malformed_input_exits_2_with_the_error_on_stderr_only() -> None:
    cp = kpr_parse("bpf-ct-list", text="TCP OUT 10.0.0.1:1 -> 10.0.0.2:2 expires=\n", subprocess_=True)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.startswith("kpr parse: bpf-ct-list: line 1: unrecognised line: 'TCP OUT 10.0.0.1:1")


def test_missing_file_and_unknown_format() -> None:
    cp = kpr_parse("ss", path=Path("/nonexistent/ss.txt"), subprocess_=True)
    assert cp.returncode == 2 and "cannot read /nonexistent/ss.txt" in cp.stderr and cp.stdout == ""
    cp = kpr_parse("no-such-format", text="")
    assert cp.returncode == 2 and "is not one of the choices" in cp.stderr


def test_conntrack_fast_path_equals_the_generic_path_on_every_fixture(cilium_fixtures: Path) -> None:
    """The conntrack JSON written straight from the parser is the generic path's, byte for byte, and a
    file that is not a dump fails the same way on both."""
    import json as _json

    from pytest_kpr.parse import ParseError
    from pytest_kpr.parse.formats import JSON_ENTRIES, parse_as

    def outcome(fn: Any, text: str) -> Any:
        try:
            return fn(text)
        except ParseError as e:
            return str(e)

    parsed = 0
    for path in sorted((cilium_fixtures / "bpf-ct-list").rglob("*.txt")):
        text = path.read_text()
        fast = outcome(JSON_ENTRIES["bpf-ct-list"], text)
        assert fast == outcome(lambda t: [_json.dumps(e) for e in parse_as("bpf-ct-list", t)], text), path
        parsed += isinstance(fast, list)
    assert parsed >= 3, "the authentic dumps must parse"
