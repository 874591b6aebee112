"""Every tool-output fixture in tests/data/cilium (authentic Cilium output, sources in its PROVENANCE.md), parsed with concrete expectations.

Hand-edited documentation text and annotated pastes are not tool output: for those the expectation is
a ParseError that names the line a person added.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_kpr.parse import (
    ParseError,
    parse_bpftool_cgroup_tree,
    parse_bpftool_net,
    parse_config,
    parse_ct_list,
    parse_frontends_json,
    parse_frontends_table,
    parse_lb_list,
    parse_lb_maps_dump,
    parse_service_list,
    parse_service_list_json,
    parse_status_text,
)
from pytest_kpr.parse.addr import L3n4
from pytest_kpr.parse.statedb import parse_backends_json, parse_services_json


def read(base: Path, rel: str) -> str:
    return (base / rel).read_text()


def txtar_sections(text: str) -> dict[str, str]:
    parts = re.split(r"^-- (\S+) --$\n", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


# -- service list --------------------------------------------------------------------------------------


def test_service_list_main_era_kind_with_protocols(cilium_fixtures: Path) -> None:
    svcs = parse_service_list(read(cilium_fixtures, "service-list/main-2026-02-issue-pr44301-kind.txt"))
    assert [s.id for s in svcs] == [1, 2, 3, 4, 5, 12, 15]
    dns_udp = svcs[2]
    assert str(dns_udp.frontend) == "10.96.0.10:53/UDP" and dns_udp.type == "ClusterIP"
    assert [str(b.address) for b in dns_udp.backends] == ["10.244.1.69:53/UDP", "10.244.1.109:53/UDP"]
    assert all(b.state == "active" for s in svcs for b in s.backends)
    assert svcs[4].frontend == L3n4("10.96.0.1", 443, "TCP") and str(svcs[4].backends[0].address) == "172.19.0.2:6443/TCP"


def test_service_list_v116_docs_has_no_protocol_and_marks_preferred(cilium_fixtures: Path) -> None:
    local = parse_service_list(read(cilium_fixtures, "service-list/v1.16-docs-clustermesh-affinity-local.txt"))
    remote = parse_service_list(read(cilium_fixtures, "service-list/v1.16-docs-clustermesh-affinity-remote.txt"))
    assert len(local) == len(remote) == 5
    assert local[4].frontend == L3n4("10.96.173.113", 80, None)
    assert [b.preferred for b in local[4].backends] == [False, True, True, False]
    assert [b.preferred for b in remote[4].backends] == [True, False, False, True]
    assert [b.index for b in local[4].backends] == [1, 2, 3, 4]


def test_service_list_ipv6_frontends_in_brackets(cilium_fixtures: Path) -> None:
    svcs = parse_service_list(read(cilium_fixtures, "service-list/v1.15-or-v1.16-issue33076-ipv6-dualstack.txt"))
    assert len(svcs) == 7
    assert svcs[0].frontend == L3n4("ffff:fff:fff:701::2:dceb", 80, None)
    assert str(svcs[0].frontend) == "[ffff:fff:fff:701::2:dceb]:80"
    assert [str(b.address) for b in svcs[0].backends] == ["[ffff:fff:fff:700:0:2:7:2c53]:80", "[ffff:fff:fff:700:0:2:7:949c]:80"]
    assert str(svcs[1].frontend) == "10.7.14.194:9000"
    assert svcs[6].backends[0].address.port == 10250


def test_service_list_with_trailing_spaces_and_a_cut_last_line(cilium_fixtures: Path) -> None:
    """This paste kept the tabwriter padding except on its last line: strictly that line was cut off."""
    text = read(cilium_fixtures, "service-list/v1.14-pr24136-service-get-with-trailing-spaces.txt")
    with pytest.raises(ParseError, match=r"line 4: line cut off"):
        parse_service_list(text)
    (svc,) = parse_service_list(text, strict=False)
    assert (svc.id, str(svc.frontend), svc.type) == (3043, "10.32.95.217:6379", "NodePort")
    assert [b.state for b in svc.backends] == ["active", "maintenance", "active"]
    assert [b.address.port for b in svc.backends] == [42069] * 3


def test_service_list_localredirect_rows_without_header(cilium_fixtures: Path) -> None:
    (before,) = parse_service_list(read(cilium_fixtures, "service-list/v1.19dev-2025-08-commit-7b54f57576-lrp-before-rows-no-header.txt"))
    (after,) = parse_service_list(read(cilium_fixtures, "service-list/v1.19dev-2025-08-commit-7b54f57576-lrp-after-row-no-header.txt"))
    assert (before.id, before.type, len(before.backends)) == (12, "LocalRedirect", 5)
    assert [b.address.port for b in before.backends] == [80, 443, 3000, 8080, 9090]
    assert (after.id, str(after.frontend), [str(b.address) for b in after.backends]) == (14, "169.254.169.254:8080/TCP", ["10.244.1.86:80/TCP"])


@pytest.mark.parametrize(
    "name", ["v1.18-docs-kubeproxy-free-nodeport-handedited.txt", "v1.18-docs-lrp-localredirect-handedited.txt"]
)
def test_hand_edited_docs_are_not_tool_output(cilium_fixtures: Path, name: str) -> None:
    with pytest.raises(ParseError, match=r"service-list: line 2: unrecognised line: '\[\.\.\.\]'"):
        parse_service_list(read(cilium_fixtures, f"service-list/{name}"))


def test_service_list_json_v118_one_entry_per_frontend(cilium_fixtures: Path) -> None:
    svcs = parse_service_list_json(read(cilium_fixtures, "unattributed/service-list-o-json-v1.18plus.json"))
    assert len(svcs) == 8
    k = svcs[0]
    assert (k.id, str(k.frontend), k.type, k.namespace, k.name) == (1, "10.96.0.1:443/TCP", "ClusterIP", "default", "kubernetes")
    assert [str(b.address) for b in k.backends] == ["91.217.196.189:6443/TCP"]
    assert all(b.preferred for s in svcs for b in s.backends), "v1.18 sets preferred on every backend"
    assert svcs[-1].name == "hubble-peer" and svcs[-1].namespace == "kube-system"
    dns = [s for s in svcs if s.name == "kube-dns"]
    assert {s.frontend.proto for s in dns} >= {"TCP", "UDP"}
    assert dns[0].backends[0].node == "k8s-master-n1"


# -- bpf lb list ---------------------------------------------------------------------------------------


def test_bpf_lb_list_pre_116_grouped_layout(cilium_fixtures: Path) -> None:
    entries = parse_lb_list(read(cilium_fixtures, "bpf-lb-list/v1.16.0-dev-2024-03-pr31503-pre-slot-suffix.txt"))
    assert len(entries) == 8
    kapi = [e for e in entries if e.frontend == L3n4("10.96.0.1", 443)]
    assert sorted(e.slot for e in kapi) == [0, 1]
    master = next(e for e in kapi if e.slot == 0)
    assert master.flags == ("ClusterIP", "non-routable") and master.revnat == 1 and master.backend is None
    backend = next(e for e in kapi if e.slot == 1)
    assert backend.backend == L3n4("172.18.0.3", 6443) and backend.revnat == 1
    l7 = [e for e in entries if e.l7_proxy_port is not None]
    assert [(str(e.frontend), e.flags, e.l7_proxy_port) for e in l7] == [
        ("172.18.0.2:32646", ("NodePort", "l7-load-balancer"), 15735),
        ("10.96.193.7:443", ("ClusterIP", "non-routable", "l7-load-balancer"), 15735),
    ]
    assert next(e for e in entries if e.frontend.port == 443 and e.revnat == 22 and e.slot == 0).flags == ("ClusterIP", "InternalLocal", "non-routable")


def test_bpf_lb_list_main_per_slot_rows_and_wildcard(cilium_fixtures: Path) -> None:
    entries = parse_lb_list(read(cilium_fixtures, "bpf-lb-list/main-2026-01-commit-c4d6072fa2-loadbalancer-wildcard.txt"))
    assert [(str(e.frontend), e.slot, e.revnat) for e in entries] == [
        ("10.244.255.200:8000/TCP", 0, 19),
        ("10.244.255.200:8000/UDP", 0, 20),
        ("10.244.255.200:0/ANY", 0, 0),
        ("172.18.0.3:8001/TCP", 0, 35),
        ("172.18.0.3:8001/UDP", 0, 36),
    ]
    assert entries[2].flags == ("LoadBalancer", "non-routable")
    assert all(e.flags[0] == "LoadBalancer" for e in entries)


# -- bpf ct list ---------------------------------------------------------------------------------------


def test_ct_list_v118_ipv4_out_and_in(cilium_fixtures: Path) -> None:
    out, in_ = parse_ct_list(read(cilium_fixtures, "bpf-ct-list/v1.18-format-commit-92a331920e-proxyredirect-fromtunnel.txt"))
    assert (out.proto, out.dir, out.src, out.dst) == ("TCP", "OUT", "10.244.1.234:44892", "10.244.0.215:80")
    assert out.flag_names == ("RxClosing", "SeenNonSyn", "ProxyRedirect") and out.flags == 0x51
    assert (out.expires, out.rx_flags_seen, out.last_rx_report, out.source_security_id) == (1595143, 0x1B, 1587142, 44892)
    assert (out.ifindex, out.nat_port, out.backend_id, out.rev_nat) == (None, None, 0, 0)
    assert in_.dir == "IN" and in_.flag_names == ("TxClosing", "SeenNonSyn", "FromTunnel") and in_.source_security_id == 60249


def test_ct_list_v118_ipv6_unbracketed_with_svc_entries(cilium_fixtures: Path) -> None:
    entries = parse_ct_list(read(cilium_fixtures, "bpf-ct-list/v1.18-issue40820-ct6-global.txt"))
    assert [e.dir for e in entries] == ["IN", "SVC", "IN", "SVC"]
    svc = entries[1]
    assert (svc.src_ip, svc.src_port) == ("2603:8080:c0f0:d2e0:99f2:9195:c043:304f", 44564)
    assert (svc.dst_ip, svc.dst_port) == ("2a03:3f40:88:1::24", 80)
    assert (svc.rev_nat, svc.backend_id) == (218, 98)
    assert entries[0].dst == "fd85:ee78:d8a6:8607::1:fe5:8000"


def test_ct_list_time_diff_form(cilium_fixtures: Path) -> None:
    (e,) = parse_ct_list(read(cilium_fixtures, "bpf-ct-list/v1.19dev-2025-09-commit-67e8fe5797-time-diff.txt"))
    assert (e.proto, e.dir, e.expires, e.remaining, e.flag_names, e.source_security_id) == ("UDP", "OUT", 316, -27, ("ProxyRedirect",), 5164)


# -- status --------------------------------------------------------------------------------------------


def test_status_v117_kpr_details_verbose(cilium_fixtures: Path) -> None:
    d = parse_status_text(read(cilium_fixtures, "status/v1.17-commit-e46568b6b2-kpr-details-verbose.txt")).kpr_details
    assert d is not None
    assert (d.status, d.socket_lb, d.socket_lb_coverage, d.mode, d.backend_selection) == ("False", "Enabled", "Full", "SNAT", "Random")
    assert (d.graceful_termination, d.xdp_acceleration, d.session_affinity) == ("Enabled", "Native", "Disabled")
    assert d.services == {
        "ClusterIP": "Enabled", "NodePort": "Enabled (Range: 30000-32767)", "LoadBalancer": "Enabled",
        "externalIPs": "Enabled", "HostPort": "Disabled",
    }
    assert d.annotations == ("service.cilium.io/node", "service.cilium.io/src-ranges-policy", "service.cilium.io/type")


def test_status_head_with_the_device_spacing_quirk(cilium_fixtures: Path) -> None:
    s = parse_status_text(read(cilium_fixtures, "status/v1.17.0-dev-2024-10-pr35542-status-head.txt"))
    assert s.kube_proxy_replacement == "True"
    assert s.kpr_devices == "eth0    172.18.0.5 fc00:c111::5 fe80::42:acff:fe12:5 (Direct Routing)"
    assert s.fields["Cilium"].startswith("Ok   1.17.0-dev (v1.17.0-dev-0bc32ae110)")
    assert s.fields["CNI Chaining"] == "none" and len(s.fields) == 11


def test_status_annotation_snippets(cilium_fixtures: Path) -> None:
    on = parse_status_text(read(cilium_fixtures, "status/v1.18-commit-8cf3cc0603-kpr-annotations-snippet.txt")).kpr_details
    off = parse_status_text(read(cilium_fixtures, "status/v1.18-commit-8cf3cc0603-kpr-annotations-na-snippet.txt")).kpr_details
    assert on is not None and off is not None
    assert len(on.annotations or ()) == 5 and "service.cilium.io/proxy-delegation" in (on.annotations or ())
    assert off.annotations == ()


def test_status_attach_and_device_mode(cilium_fixtures: Path) -> None:
    s = parse_status_text(read(cilium_fixtures, "status/main-2025-11-commit-882a2e9082-attach-device-mode.txt"))
    assert s.fields == {"Attach Mode": "TCX", "Device Mode": "netkit [Configured: auto]"}


def test_status_grep_line_from_docs(cilium_fixtures: Path) -> None:
    s = parse_status_text(read(cilium_fixtures, "status/v1.18-docs-kubeproxy-free-grep-kpr-handedited.txt"))
    assert (s.kube_proxy_replacement, s.kpr_devices) == ("True", "eth0 (Direct Routing), eth1")


def test_status_garbled_paste_is_refused_on_the_merged_line(cilium_fixtures: Path) -> None:
    with pytest.raises(ParseError, match=r"status: line 9: .*'  - ClusterIP:      Enabled   "):
        parse_status_text(read(cilium_fixtures, "status/main-2026-01-pr43864-kpr-details-false-pasted.txt"))
    text = read(cilium_fixtures, "status/main-2026-01-pr43864-kpr-details-false-pasted.txt")
    fixed = re.sub(r"Enabled\s+- NodePort", "Enabled\n  - NodePort", text)
    d = parse_status_text(fixed).kpr_details
    assert d is not None and d.status == "False" and d.services["NodePort"] == "Disabled" and d.socket_lb == "Disabled"


def test_status_stale_docs_are_not_tool_output(cilium_fixtures: Path) -> None:
    with pytest.raises(ParseError, match=r"line 1: unrecognised line: '\[\.\.\.\]'"):
        parse_status_text(read(cilium_fixtures, "status/v1.18-docs-kubeproxy-free-verbose-stale.txt"))


# -- config --------------------------------------------------------------------------------------------


def test_config_all_v118(cilium_fixtures: Path) -> None:
    c = parse_config(read(cilium_fixtures, "unattributed/config-all-v1.18-likely-2025-08.txt"))
    assert c.service_no_backend_response == "reject"
    assert c.get("BPFSocketLBHostnsOnly") == "false" and c.get("bpf-socket-lb-hostns-only") == "false"
    assert c.get("ConfigDir") == "/tmp/cilium/config-map"
    assert c.get("KubeProxyReplacement") is None, "moved out of DaemonConfig in 1.18"
    assert c.get("DNSProxyConcurrencyProcessingGracePeriod") == "0"
    assert c.nested["Monitor"] == {"cpus": "10", "npages": "64", "pagesize": "4096"}
    assert len(c.read_write) == 13 and c.read_write["PolicyEnforcement"] == "default"


# -- new LB control plane (statedb) --------------------------------------------------------------------


def test_db_show_frontends_v119_all_columns_with_empty_cells(cilium_fixtures: Path) -> None:
    fes = parse_frontends_table(read(cilium_fixtures, "statedb-lb/v1.19-issue45252-db-show-frontends-grep.txt"))
    assert [str(f.address) for f in fes] == [
        "0.0.0.0:30885/TCP", "0.0.0.0:30885/TCP/i", "10.244.255.200:12345/TCP", "10.244.255.200:12345/TCP/i", "172.20.1.183:12345/TCP",
    ]
    assert [f.type for f in fes] == ["NodePort", "NodePort", "LoadBalancer", "LoadBalancer", "ClusterIP"]
    assert {f.service for f in fes} == {"default/service-deathstar"}
    assert fes[0].backends == () and fes[1].backends == (L3n4("10.1.0.78", 80, "TCP"),)
    assert all(f.status == "Done" and f.since == "12m" and f.error is None and f.port_name is None and f.redirect_to is None for f in fes)


def test_db_show_frontends_annotated_commit_message(cilium_fixtures: Path) -> None:
    text = read(cilium_fixtures, "statedb-lb/v1.19dev-2025-09-commit-9ea94fec85-db-show-frontends-annotated.txt")
    with pytest.raises(ParseError, match="line 1"):
        parse_frontends_table(text)  # the prompt the author added
    body = "\n".join(text.splitlines()[2:])
    with pytest.raises(ParseError, match="misaligned row"):
        parse_frontends_table(body)  # the ' -------->' marker runs from Since into Error
    (fe,) = parse_frontends_table(body.replace(" -------->", ""))
    assert (str(fe.address), fe.type, fe.service, fe.port_name) == ("10.96.69.44:8080/TCP", "ClusterIP", "default/echo-server", "http")
    assert (fe.redirect_to, fe.status, fe.since, fe.backends) == ("default/echo-server-lrp:local-redirect", "Done", "2s", ())


def test_db_cmp_frontends_column_subset(cilium_fixtures: Path) -> None:
    fes = parse_frontends_table(read(cilium_fixtures, "statedb-lb/v1.18-db-cmp-frontends-table-from-nodeport-txtar.txt"))
    assert [(str(f.address), f.service, f.port_name, f.status) for f in fes] == [
        ("0.0.0.0:30781/TCP", "test/echo", "http", "Done"),
        ("0.0.0.0:30782/TCP", "test/echo2", "http2", "Done"),
        ("10.96.50.104:80/TCP", "test/echo", "http", "Done"),
        ("10.96.50.105:80/TCP", "test/echo2", "http2", "Done"),
    ]
    assert all(len(f.backends or ()) == 4 for f in fes) and fes[0].since is None


@pytest.mark.parametrize("name", ["v1.18-testdata-clusterip.txtar", "v1.18-testdata-nodeport.txtar", "v1.18-testdata-reuse.txtar", "v1.17-experimental-testdata-clusterip.txtar", "main-2026-01-testdata-name-collisions.txtar"])
def test_txtar_frontend_tables_parse(cilium_fixtures: Path, name: str) -> None:
    sections = txtar_sections(read(cilium_fixtures, f"statedb-lb/{name}"))
    tables = {k: v for k, v in sections.items() if k.startswith("frontends") and k.endswith(".table")}
    assert tables, f"{name} has frontends tables"
    for key, table in tables.items():
        fes = parse_frontends_table(table)
        assert fes or "empty" in key or "nobackends" in key or table.strip().count("\n") == 0, key
        for f in fes:
            assert f.address.port > 0 or f.address.proto == "ANY"


def test_reuse_txtar_documents_the_owner_change(cilium_fixtures: Path) -> None:
    s = txtar_sections(read(cilium_fixtures, "statedb-lb/v1.18-testdata-reuse.txtar"))
    (first,) = parse_frontends_table(s["frontends.table"])
    (second,) = parse_frontends_table(s["frontends2.table"])
    assert first.address == second.address == L3n4("10.96.50.104", 80, "TCP")
    assert (first.service, second.service) == ("test/echo", "test/echo2")


def test_db_show_frontends_json_with_redactions_filled_in(cilium_fixtures: Path) -> None:
    text = read(cilium_fixtures, "statedb-lb/v1.18-db-show-frontends-f-json-REDACTED-from-marshalling-txtar.txt")
    with pytest.raises(ParseError, match=r"line 14: invalid JSON"):
        parse_frontends_json(text)
    filled = text.replace('"updated-at": <redacted>', '"updated-at": "2025-06-27T00:00:00Z"').replace('"id": <redacted>', '"id": 7')
    fes = parse_frontends_json(filled)
    assert [(str(f.address), f.status, f.id) for f in fes] == [("10.96.50.104:80/TCP", "Done", 1), ("[2001::1]:80/TCP", "Done", 2)]
    assert fes[0].backends == (L3n4("10.244.1.1", 8080, "TCP"),) and fes[0].service == "test/echo"


def test_db_show_services_and_backends_json_streams(cilium_fixtures: Path) -> None:
    (svc,) = parse_services_json(read(cilium_fixtures, "statedb-lb/v1.18-db-show-services-f-json-stream-from-marshalling-txtar.txt"))
    assert (svc.name, svc.source, svc.ext_traffic_policy, svc.port_names) == ("test/echo", "k8s", "Cluster", {"http": 80})
    bes = parse_backends_json(read(cilium_fixtures, "statedb-lb/v1.18-db-show-backends-f-json-stream-from-marshalling-txtar.txt"))
    assert [(str(b.address), b.services, b.node) for b in bes] == [
        ("10.244.1.1:8080/TCP", ("test/echo",), "nodeport-worker"),
        ("[2002::2]:8080/TCP", ("test/echo",), "nodeport-worker"),
    ]


def test_lb_maps_dump(cilium_fixtures: Path) -> None:
    ci = parse_lb_maps_dump(read(cilium_fixtures, "statedb-lb/v1.18-lb-maps-dump-from-clusterip-txtar.txt"))
    assert [e.kind for e in ci] == ["AFF", "BE", "REV", "SVC", "SVC"]
    assert ci[3].fields["FLAGS"] == "ClusterIP+sessionAffinity+non-routable" and ci[3].fields["AFFTimeout"] == "42"
    npd = parse_lb_maps_dump(read(cilium_fixtures, "statedb-lb/v1.18-lb-maps-dump-from-nodeport-txtar.txt"))
    svc = [e for e in npd if e.kind == "SVC"]
    assert len(svc) == 30 and len([e for e in npd if e.kind == "BE"]) == 8
    assert {e.fields["ADDR"] for e in svc if e.fields["SLOT"] == "0"} == {
        "0.0.0.0:30781/TCP", "1.1.1.1:30781/TCP", "10.96.50.104:80/TCP", "0.0.0.0:30782/TCP", "1.1.1.1:30782/TCP", "10.96.50.105:80/TCP",
    }


# -- bpftool --------------------------------------------------------------------------------------------


def test_bpftool_net_tcx_excerpt(cilium_fixtures: Path) -> None:
    a = parse_bpftool_net(read(cilium_fixtures, "bpftool-net/v1.17.7-issue41393-tcx-netdev.txt"))
    assert [(x.device, x.ifindex, x.attach, x.program, x.prog_id, x.link_id) for x in a] == [
        ("lan", 2, "tcx/ingress", "cil_from_netdev", 680, 12),
        ("lan", 2, "tcx/egress", "cil_to_netdev", 688, 15),
    ]
    assert all(x.is_tcx for x in a)


def test_bpftool_net_legacy_tc(cilium_fixtures: Path) -> None:
    (a,) = parse_bpftool_net(read(cilium_fixtures, "bpftool-net/main-2026-01-pr43864-legacy-tc.txt"))
    assert (a.section, a.device, a.ifindex, a.attach, a.name, a.program, a.prog_id) == ("tc", "eth0", 13, "clsact/ingress", "cil_from_netdev-eth0", "cil_from_netdev", 1266)
    assert not a.is_tcx


def test_bpftool_cgroup_tree_socket_lb_programs(cilium_fixtures: Path) -> None:
    progs = parse_bpftool_cgroup_tree(read(cilium_fixtures, "bpftool-net/v1.15-era-issue30665-bpftool-cgroup-tree-socketlb.txt"))
    assert len(progs) == 8 and {p.cgroup for p in progs} == {"/var/run/cilium/cgroupv2"}
    assert {p.name for p in progs} >= {"cil_sock4_connect", "cil_sock4_getpeername", "cil_sock6_getpeername"}
    assert next(p for p in progs if p.name == "cil_sock4_getpeername").attach_type == "cgroup_inet4_getpeername"


# -- LB-IPAM fixtures are manifests and kubectl output, not agent output: the suite's manifests must match them


def test_lbipam_pool_api_versions_match_the_fixtures(cilium_fixtures: Path) -> None:
    import yaml

    v116 = yaml.safe_load(read(cilium_fixtures, "lbipam/v1.16-docs-pool-v2alpha1.yaml"))
    v118 = yaml.safe_load(read(cilium_fixtures, "lbipam/v1.18-docs-pool-v2.yaml"))
    assert (v116["apiVersion"], v118["apiVersion"]) == ("cilium.io/v2alpha1", "cilium.io/v2")
    assert v116["kind"] == v118["kind"] == "CiliumLoadBalancerIPPool"
    conds = json.loads(read(cilium_fixtures, "lbipam/v1.18-docs-svc-status-conditions-lb-ipam.json"))
    assert [(c["reason"], c["status"]) for c in conds] == [("no_pool", "False"), ("satisfied", "True")]


def test_lb_maps_dump_maglev_lines() -> None:
    """MAGLEV lines as Cilium's own reconciler tests expect them (cilium/cilium pkg/loadbalancer/reconciler/
    bpf_reconciler_test.go, NodePort cases: "MAGLEV: ID=2 INNER=[1(511), 2(510)]"; format from pkg/loadbalancer/maps/
    test_utils.go DumpLBMaps): the INNER list keeps its spaces, which the KEY=VALUE split of the other kinds would break."""
    from pytest_kpr.parse.errors import ParseError
    from pytest_kpr.parse.statedb import maglev_slots

    (e,) = parse_lb_maps_dump("MAGLEV: ID=2 INNER=[1(511), 2(510)]\n")
    assert (e.kind, e.fields["ID"], maglev_slots(e)) == ("MAGLEV", "2", {"1": 511, "2": 510})
    (sanitized,) = parse_lb_maps_dump("MAGLEV: ID=<non-zero> INNER=[<non-zero>(1021)]\n")
    assert maglev_slots(sanitized) == {"<non-zero>": 1021}
    with pytest.raises(ParseError, match="bad MAGLEV line"):
        parse_lb_maps_dump("MAGLEV: ID=2 INNER=1(511)\n")


@pytest.mark.parametrize(("line", "flags"), [
    # cilium/cilium pkg/loadbalancer/tests/testdata/source-ranges.txtar@0725568c: the flag name holds a space
    ("SVC: ID=1 ADDR=10.96.50.104:80/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=1 QCOUNT=0 "
     "FLAGS=ClusterIP+non-routable+check source-range", "ClusterIP+non-routable+check source-range"),
    ("SVC: ID=3 ADDR=10.96.0.1:443/TCP SLOT=0 LBALG=undef AFFTimeout=0 COUNT=1 QCOUNT=0 FLAGS=ClusterIP+non-routable",
     "ClusterIP+non-routable"),
])
def test_lb_maps_dump_flags_may_hold_a_space(line: str, flags: str) -> None:
    (e,) = parse_lb_maps_dump(line + "\n")
    assert e.fields["FLAGS"] == flags and e.fields["QCOUNT"] == "0"


def test_lb_maps_dump_a_bare_word_outside_the_flags_is_an_error() -> None:
    from pytest_kpr.parse.errors import ParseError

    with pytest.raises(ParseError, match="bad field 'stray'"):
        parse_lb_maps_dump("SVC: ID=1 stray ADDR=10.96.0.1:443/TCP\n")


def test_bpf_metrics_list_with_line_and_file_v116(cilium_fixtures: Path) -> None:
    from pytest_kpr.parse.metrics import MetricRow, parse_bpf_metrics_list

    rows = parse_bpf_metrics_list(read(cilium_fixtures, "bpf-metrics-list/v1.16.0-dev-2024-02-pr30972-line-file.txt"))
    assert len(rows) == 7
    assert rows[0] == MetricRow("Interface", "ingress", 151, 9368, 1092, "bpf_host.c")
    assert rows[-1] == MetricRow("Unsupported L3 protocol", "egress", 6, 460, 1466, "bpf_lxc.c")  # a reason with spaces
    assert [r.reason for r in rows if r.is_drop] == ["Unsupported L3 protocol"], "Interface and Success count forwards"


def test_bpf_metrics_list_four_columns_before_v116(cilium_fixtures: Path) -> None:
    from pytest_kpr.parse.metrics import parse_bpf_metrics_list

    rows = parse_bpf_metrics_list(read(cilium_fixtures, "bpf-metrics-list/v1.6-era-2019-05-pr8042-four-columns.txt"))
    assert [(r.reason, r.direction, r.packets, r.line, r.file) for r in rows][:2] == [
        ("Decrypted packet", "ingress", 227499, None, None), ("Not a local target address", "ingress", 169955, None, None)]
    assert rows[3].bytes == 124463343


@pytest.mark.parametrize("line", [
    # pkg/maps/ctmap/types.go@d93bee93 CtKey6Global.Dump: " OUT [" addr "]:" port (a NatPort-era dump)
    "TCP OUT [fd00:10:244:1::a]:40404 -> [fd00:10:244:2::b]:8080 expires=100 Packets=0 Bytes=0 RxFlagsSeen=0x00 LastRxReport=0 "
    "TxFlagsSeen=0x00 LastTxReport=0 Flags=0x0000 [ ] RevNAT=0 SourceSecurityID=0 BackendID=0 NatPort=0 ",
    # the older, bare form
    "TCP OUT fd00:10:244:1::a:40404 -> fd00:10:244:2::b:8080 expires=100 Packets=0 Bytes=0 RxFlagsSeen=0x00 LastRxReport=0 "
    "TxFlagsSeen=0x00 LastTxReport=0 Flags=0x0000 [ ] RevNAT=0 SourceSecurityID=0 BackendID=0 NatPort=0 ",
])
def test_ct_list_reads_ipv6_bracketed_or_bare(line: str) -> None:
    (e,) = parse_ct_list(line + "\n", version=(1, 19))
    assert (e.src_ip, e.src_port, e.dst_ip, e.dst_port) == ("fd00:10:244:1::a", 40404, "fd00:10:244:2::b", 8080)
