"""Node-tool output captured on a real kernel here (tests/data/local, scripts/capture_local_samples.sh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kpr.parse import ParseError, parse_bpftool_net, parse_iptables_save, parse_netstat, parse_nft_ruleset, parse_ss, parse_tc_filter
from pytest_kpr.parse.node import parse_curl

LOCAL = Path(__file__).parent.parent / "data" / "local"


def read(name: str) -> str:
    return (LOCAL / name).read_text()


def test_iptables_nft_save_counts_kube_proxy_lines_ips_and_ports() -> None:
    d = parse_iptables_save(read("iptables-nft-save.txt"))
    assert d.tables == ("nat",) and d.rules == 3
    assert d.counts(ip="10.96.0.10", port=80) == {"lines": 11, "kube_svc": 3, "kube_sep": 0, "cilium": 0, "ip": 1, "port": 1}
    assert d.count_token("10.96.0.1") == 0, "10.96.0.1 is not 10.96.0.10"
    assert d.count_token("8080") == 1 and d.count_token("808") == 0


def test_iptables_legacy_save_sees_only_legacy_rules() -> None:
    d = parse_iptables_save(read("iptables-legacy-save.txt"))
    assert d.count_token("30782") == 1 and d.count("KUBE-SVC") == 0


def test_nft_ruleset_shows_iptables_nft_and_native_tables() -> None:
    d = parse_nft_ruleset(read("nft-list-ruleset.txt"))
    assert d.tables == ("ip nat", "ip kpr")
    assert d.chains == ("ip nat/KUBE-SERVICES", "ip nat/KUBE-SVC-ABCDEF", "ip nat/PREROUTING", "ip kpr/prerouting")
    assert d.rules == 4 and d.count_token("30780") == 1 and d.count("KUBE-SVC") == 2


def test_ss_listeners_and_established() -> None:
    (listener,) = parse_ss(read("ss-Htln.txt"))
    assert (listener.state, listener.local, listener.peer, listener.send_q) == ("LISTEN", "127.0.0.1:8080", "0.0.0.0:*", 5)
    est = parse_ss(read("ss-tn.txt"))
    assert [(s.local, s.peer) for s in est] == [("127.0.0.1:40404", "127.0.0.1:8080"), ("127.0.0.1:8080", "127.0.0.1:40404")]
    assert all(s.established for s in est)


def test_busybox_netstat_established() -> None:
    socks = parse_netstat(read("busybox-netstat-tn.txt"))
    assert [(s.state, s.local, s.peer) for s in socks] == [
        ("ESTABLISHED", "127.0.0.1:40404", "127.0.0.1:8080"),
        ("ESTABLISHED", "127.0.0.1:8080", "127.0.0.1:40404"),
    ]


def test_bpftool_and_tc_see_a_legacy_tc_program() -> None:
    (a,) = parse_bpftool_net(read("bpftool-net-show-legacy-tc.txt"))
    assert (a.device, a.attach, a.name, a.is_tcx) == ("lxc1234", "clsact/ingress", "prog.o:[tc]", False)
    filters = parse_tc_filter(read("tc-filter-show-ingress.txt"))
    assert len(filters) == 2
    assert filters[1].prog_id == a.prog_id and filters[1].prog_name == "cil_from_contai" and filters[1].direct_action
    assert parse_tc_filter(read("tc-filter-show-egress-empty.txt")) == []


@pytest.mark.parametrize(
    "fmt,text",
    [
        ("ss", "LISTEN 0 4096 0.0.0.0:8080\n"),
        ("netstat", "tcp 0 0 10.0.0.1:80 10.0.0.2:5 SOMETIMES\n"),
        ("iptables", "*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j X\n"),
        ("nft", "table ip kpr {\n\tchain x {\n"),
    ],
)
def test_cut_or_garbled_node_output_is_an_error(fmt: str, text: str) -> None:
    parser = {"ss": parse_ss, "netstat": parse_netstat, "iptables": parse_iptables_save, "nft": parse_nft_ruleset}[fmt]
    with pytest.raises(ParseError):
        parser(text)


def test_curl_write_out() -> None:
    r = parse_curl(7, "000 0.000412", "curl: (7) Failed to connect")
    assert (r.exit_code, r.http_code, r.seconds) == (7, 0, 0.000412)
    with pytest.raises(ParseError):
        parse_curl(0, "")


def test_the_iptables_save_parser_refuses_a_line_it_does_not_know() -> None:
    from pytest_kpr.parse import ParseError, parse_iptables_save

    with pytest.raises(ParseError) as e:
        parse_iptables_save("*nat\n:PREROUTING ACCEPT [0:0]\nsomething else\nCOMMIT\n")
    assert str(e.value) == "iptables-save: line 3: unrecognised line: 'something else'"
