"""Hypothesis: entries rendered in the real formats parse back to the same values; output that was cut
off or garbled gives a ParseError, never a wrong value or another exception.

"Cut off" is a stream that ends early (an exec that timed out): every complete line still parses to
what it said, and a partial line is an error. "Garbled" is a character the format never contains
inserted anywhere in a line.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from helpers import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_kpr.parse import ParseError, parse_ct_list, parse_lb_list, parse_service_list
from pytest_kpr.parse.ct import CT_FLAGS, ct_list_json
from pytest_kpr.parse.formats import parse_as
from pytest_kpr.testing import render

SETTINGS = settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
GARBLE = "#!~$%^&*?;'\"|\\`@"

ipv4 = st.ip_addresses(v=4).map(str)
ipv6 = st.ip_addresses(v=6).map(str)
port = st.integers(0, 65535)
u32 = st.integers(0, 2**32 - 1)


@st.composite
def ct_entries(draw: Any, v6: bool | None = None) -> dict[str, Any]:
    six = draw(st.booleans()) if v6 is None else v6
    ip = ipv6 if six else ipv4
    flag_names = tuple(f for f in CT_FLAGS if draw(st.booleans()))
    bits = sum(1 << CT_FLAGS.index(f) for f in flag_names)
    return {
        "proto": draw(st.sampled_from(["TCP", "UDP", "ICMP"] if not six else ["TCP", "UDP", "ICMPv6"])),
        "dir": draw(st.sampled_from(["OUT", "IN", "SVC"])),
        "src_ip": draw(ip), "src_port": draw(port), "dst_ip": draw(ip), "dst_port": draw(port),
        "related": draw(st.booleans()),
        "expires": draw(u32), "remaining": draw(st.none() | st.integers(-10**6, 10**6)),
        "packets": draw(st.integers(0, 2**63)), "bytes": draw(st.integers(0, 2**63)),
        "rx_flags_seen": draw(st.integers(0, 255)), "last_rx_report": draw(u32),
        "tx_flags_seen": draw(st.integers(0, 255)), "last_tx_report": draw(u32),
        "flags": bits, "flag_names": flag_names,
        "rev_nat": draw(st.integers(0, 65535)), "source_security_id": draw(u32),
        "ifindex": draw(st.integers(0, 65535)), "backend_id": draw(u32), "nat_port": draw(port),
    }


VERSIONS = st.sampled_from([(1, 16), (1, 17), (1, 18), (1, 19), (1, 20)])


def _expected_ct(e: dict[str, Any], version: tuple[int, int]) -> dict[str, Any]:
    d = dict(e)
    if version >= (1, 18):
        d["ifindex"] = None
    if version < (1, 19):
        d["nat_port"] = None
    return d


def _as_dict(entry: Any) -> dict[str, Any]:
    return {k: getattr(entry, k) for k in entry.__slots__}


@SETTINGS
@given(maps=st.lists(st.lists(ct_entries(), max_size=4), min_size=1, max_size=3), version=VERSIONS)
def test_ct_entries_round_trip(maps: list[list[dict[str, Any]]], version: tuple[int, int]) -> None:
    text = render.ct_list(maps, version)
    parsed = [_as_dict(e) for e in parse_ct_list(text, strict=True)]
    assert parsed == [_as_dict(e) for e in parse_ct_list(text, strict=True, version=version)]
    assert parsed == [_expected_ct(e, version) for m in maps for e in m]


def _generic_ct_json(text: str) -> list[str]:
    return [json.dumps(e) for e in parse_as("bpf-ct-list", text)]


def _outcome(fn: Callable[[str], Any], text: str) -> Any:
    try:
        return fn(text)
    except ParseError as e:
        return f"ParseError: {e}"


@SETTINGS
@given(maps=st.lists(st.lists(ct_entries(), max_size=4), min_size=1, max_size=3), version=VERSIONS,
       where=st.integers(0, 10**6), ch=st.sampled_from(GARBLE + " 0"), garble=st.booleans())
@example(
    maps=[[],
     [],
     [{'proto': 'TCP',
       'dir': 'OUT',
       'src_ip': '10.100.100.100',
       'src_port': 1000,
       'dst_ip': '100.64.0.0',
       'dst_port': 0,
       'related': False,
       'expires': 0,
       'remaining': None,
       'packets': 0,
       'bytes': 0,
       'rx_flags_seen': 0,
       'last_rx_report': 0,
       'tx_flags_seen': 0,
       'last_tx_report': 0,
       'flags': 0,
       'flag_names': (),
       'rev_nat': 0,
       'source_security_id': 0,
       'ifindex': 0,
       'backend_id': 0,
       'nat_port': 0}]],
    version=(1, 16),
    where=217,
    ch='0',
    garble=True,
).via("a leading-zero port: both paths reject it (Go prints %d)")
def test_ct_json_fast_path_is_the_generic_path(maps: list[list[dict[str, Any]]], version: tuple[int, int], where: int, ch: str,
                                               garble: bool) -> None:
    """``kpr parse bpf-ct-list`` writes entries straight from the parser: the very same text as the dicts
    through json.dumps, and the very same error for a garbled line."""
    text = render.ct_list(maps, version)
    if garble:
        lines = text.split("\n")
        i = where % len(lines)
        pos = (where // len(lines)) % (len(lines[i]) + 1)
        lines[i] = lines[i][:pos] + ch + lines[i][pos:]
        text = "\n".join(lines)
    assert _outcome(ct_list_json, text) == _outcome(_generic_ct_json, text)


def check_cut(text: str, cut: int, parse: Callable[[str], Any]) -> None:
    """A prefix of the output parses to what its complete lines say, or raises ParseError."""
    prefix = text[:cut]
    partial = prefix.rpartition("\n")[2]
    original_line = text.split("\n")[prefix.count("\n")]
    try:
        got = parse(prefix)
    except ParseError:
        assert partial != "", "a stream cut at a line boundary must parse"
        return
    if partial == "":
        return
    # acceptable only when the partial line lost nothing but trailing padding: then it says the same
    assert partial.rstrip() == original_line.rstrip(), f"cut line {partial!r} parsed as {got!r}"
    assert got == parse(prefix[: len(prefix) - len(partial)] + original_line)


def check_garble(text: str, where: int, ch: str, parse: Callable[[str], Any]) -> None:
    lines = text.split("\n")
    targets = [i for i, line in enumerate(lines) if line.strip()]
    if not targets:
        return
    i = targets[where % len(targets)]
    pos = (where // len(targets)) % (len(lines[i]) + 1)
    lines[i] = lines[i][:pos] + ch + lines[i][pos:]
    garbled = "\n".join(lines)
    try:
        got = parse(garbled)
    except ParseError:
        return
    raise AssertionError(f"garbled line {lines[i]!r} parsed as {got!r}")


@SETTINGS
@given(entries=st.lists(ct_entries(), min_size=1, max_size=5), version=VERSIONS, data=st.data())
def test_ct_list_cut_off_is_an_error_never_a_wrong_value(entries: list[dict[str, Any]], version: tuple[int, int], data: Any) -> None:
    text = render.ct_list([entries], version)
    cut = data.draw(st.integers(0, len(text)))
    check_cut(text, cut, lambda t: parse_ct_list(t, strict=True, version=version))


@SETTINGS
@given(entries=st.lists(ct_entries(), min_size=1, max_size=4), version=VERSIONS, where=st.integers(0, 10**6), ch=st.sampled_from(GARBLE))
def test_ct_list_garbled_is_an_error(entries: list[dict[str, Any]], version: tuple[int, int], where: int, ch: str) -> None:
    check_garble(render.ct_list([entries], version), where, ch, lambda t: parse_ct_list(t, strict=True, version=version))


# -- service list ----------------------------------------------------------------------------------------

TYPES = ["ClusterIP", "NodePort", "ExternalIPs", "HostPort", "LoadBalancer", "LocalRedirect"]
STATES = ["active", "terminating", "quarantined", "maintenance"]


@st.composite
def service_rows(draw: Any) -> list[tuple[int, str, str, list[tuple[str, str]]]]:
    proto = draw(st.sampled_from([None, "TCP", "UDP"]))  # v1.16 prints no protocol
    ids = sorted(draw(st.sets(st.integers(1, 65535), min_size=1, max_size=5)))
    rows = []
    for sid in ids:
        six = draw(st.booleans())
        ip = draw(ipv6 if six else ipv4)
        fe = render.addr(ip, draw(port), proto, internal=draw(st.booleans()))
        bes = [(render.addr(draw(ipv6 if six else ipv4), draw(port), proto), draw(st.sampled_from(STATES))) for _ in range(draw(st.integers(0, 4)))]
        rows.append((sid, fe, draw(st.sampled_from(TYPES)), bes))
    return rows


def _services_as_rows(text: str) -> list[tuple[int, str, str, list[tuple[str, str]]]]:
    return [(s.id, str(s.frontend), s.type, [(str(b.address), b.state) for b in s.backends]) for s in parse_service_list(text, strict=True)]


@SETTINGS
@given(rows=service_rows())
def test_service_list_round_trip(rows: list[tuple[int, str, str, list[tuple[str, str]]]]) -> None:
    assert _services_as_rows(render.service_list(rows)) == rows


@SETTINGS
@given(rows=service_rows(), data=st.data())
def test_service_list_cut_off_is_an_error_never_a_wrong_value(rows: list[tuple[int, str, str, list[tuple[str, str]]]], data: Any) -> None:
    text = render.service_list(rows)
    check_cut(text, data.draw(st.integers(0, len(text))), _services_as_rows)


@SETTINGS
@given(rows=service_rows(), where=st.integers(0, 10**6), ch=st.sampled_from(GARBLE))
def test_service_list_garbled_is_an_error(rows: list[tuple[int, str, str, list[tuple[str, str]]]], where: int, ch: str) -> None:
    check_garble(render.service_list(rows), where, ch, _services_as_rows)


# -- bpf lb list -----------------------------------------------------------------------------------------

LB_FLAG_SETS = [["ClusterIP", "non-routable"], ["NodePort"], ["NodePort", "Local", "two-scopes"], ["LoadBalancer"], ["ExternalIPs", "sessionAffinity"]]


@st.composite
def lb_rows(draw: Any) -> list[tuple[str, str]]:
    proto = draw(st.sampled_from([None, "TCP", "UDP"]))
    rows = []
    for revnat in sorted(draw(st.sets(st.integers(1, 65535), min_size=1, max_size=4))):
        six = draw(st.booleans())
        key = render.addr(draw(ipv6 if six else ipv4), draw(port), proto)
        rows.append((f"{key} (0)", render.lb_master_value(revnat, draw(st.sampled_from(LB_FLAG_SETS)), v6=six)))
        for slot in range(1, draw(st.integers(0, 4)) + 1):
            be = render.addr(draw(ipv6 if six else ipv4), draw(port), proto)
            rows.append((f"{key} ({slot})", f"{be} ({revnat}) ({slot})"))
    return rows


def _lb_as_rows(text: str) -> list[tuple[str, int, str | None, int, tuple[str, ...]]]:
    return [(str(e.frontend), e.slot, str(e.backend) if e.backend else None, e.revnat, e.flags) for e in parse_lb_list(text)]


@SETTINGS
@given(rows=lb_rows())
def test_lb_list_round_trip(rows: list[tuple[str, str]]) -> None:
    got = _lb_as_rows(render.lb_list(rows))
    assert [f"{fe} ({slot})" for fe, slot, *_ in got] == [k for k, _ in rows]
    for (fe, slot, be, revnat, flags), (_, value) in zip(got, rows, strict=True):
        if slot == 0:
            assert value.startswith(f"{'[::]' if ':' in fe.split(']')[0] and fe.startswith('[') else '0.0.0.0'}:0 ({revnat}) (0) [{', '.join(flags)}]")
        else:
            assert value == f"{be} ({revnat}) ({slot})"


@SETTINGS
@given(rows=lb_rows(), data=st.data())
def test_lb_list_cut_off_is_an_error_never_a_wrong_value(rows: list[tuple[str, str]], data: Any) -> None:
    text = render.lb_list(rows)
    check_cut(text, data.draw(st.integers(0, len(text))), _lb_as_rows)


@SETTINGS
@given(rows=lb_rows(), where=st.integers(0, 10**6), ch=st.sampled_from(GARBLE))
def test_lb_list_garbled_is_an_error(rows: list[tuple[str, str]], where: int, ch: str) -> None:
    check_garble(render.lb_list(rows), where, ch, _lb_as_rows)


# -- lb/maps-dump MAGLEV lines ---------------------------------------------------------------------------------------

backend_ids = st.one_of(st.integers(1, 2**32 - 1).map(str), st.just("<non-zero>"))


@SETTINGS
@given(rev=st.integers(1, 65535), counts=st.dictionaries(backend_ids, st.integers(1, 131071), max_size=12))
def test_a_maglev_line_parses_back_to_its_slot_counts(rev: int, counts: dict[str, int]) -> None:
    """A MAGLEV line as DumpLBMaps writes it (most slots first, ", "-joined) gives back every backend ID's count."""
    from pytest_kpr.parse.statedb import maglev_slots, parse_lb_maps_dump

    inner = ", ".join(f"{i}({n})" for i, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    (entry,) = parse_lb_maps_dump(f"MAGLEV: ID={rev} INNER=[{inner}]\n")
    assert entry.fields["ID"] == str(rev) and maglev_slots(entry) == counts


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(list("MAGLEV: ID=INNER[](),0123456789 <>-zro\n")), max_size=60))
def test_any_maps_dump_text_parses_or_is_a_parse_error(text: str) -> None:
    """Whatever the dump holds, lb/maps-dump parsing ends in entries or a ParseError, never another exception."""
    from pytest_kpr.parse.statedb import maglev_slots, parse_lb_maps_dump

    try:
        entries = parse_lb_maps_dump(text)
    except ParseError:
        return
    for e in entries:
        if e.kind == "MAGLEV":
            assert all(n >= 0 for n in maglev_slots(e).values())
