"""What a client of the fake cluster sees, decided by the sourced rules in :mod:`pytest_kpr.rules.datapath`.

The steps follow the datapath: classify the destination (which kind of frontend it is, if any), pick
the plane that handles this client, access and frontend (``plane_for``), look the frontend up in the
tables of the node whose plane it is, and answer: a backend answers; with no backend the plane's
no-backend rule (``no_backend``) says what the client sees. A path no rule covers raises
:class:`~pytest_kpr.rules.datapath.NoRule` -- the fake never guesses. The faults in :class:`.config.Faults`
are the only departures from the rules, each one named where it applies.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..parse.addr import family_of
from ..rules.workloads import server_families
from ..rules.datapath import (DROP_NOT_IN_SRC_RANGE, EPERM_REGRESSION, ICMP6_PORT_UNREACHABLE, NODEPORT_WILDCARD, SRC_RANGES_POLICY, Plane,
                              coverage_name, no_backend, plane_for, source_range_allows, source_ranges_applied,
                              xdp_forward_dropped)
from ..core.versions import kernel_tuple
from ..core.versions import Version, in_range
from . import maglev
from .view import ClusterView, FakeBackend, FakeFrontend, pod_ip
from .faults import Fails, Fault, declare


FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("socket_lb_reverse", "socket LB",
          doc="the agent reports Hostns-only coverage (configure socket_lb_hostns_only=True), yet pods take the socket path",
          fails=Fails(name="pods-on-socket-lb-while-hostns-only", fake="socket_lb_hostns_only=True",
                      tests=("hairpin::test_the_backend_sees_the_source_its_plane_gives",
                             "no_backend::test_connect_from_a_pod_fails_as_its_plane_says",
                             "no_backend::test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it",
                             "test_application_sees_the_service_while_its_socket_points_at_a_backend"),
                      says=("*socket LB (agent reports coverage Hostns-only): socket LB is hostns-only, yet the pod's socket peer is 10.244.*, not the service*",
                            "*no backend (pod connect() to ClusterIP *; per-packet plane, ServiceNoBackendResponse=reject): connect() gave unreachable (EHOSTUNREACH)*",
                            "*hairpin: hairpin saw its own request to 10.96.*:80 come from 10.244.*, expected 169.254.42.1 (per-packet plane*"))),
    Fault("socket_lb_broken", "socket LB", per_family=True,
          doc="the agent reports socket LB, yet pods' connections to a ClusterIP of the family take the per-packet path (no connect4 / "
              "connect6 translation)",
          fails=(
              Fails(name="pods-per-packet-while-full",
                    tests=("affinity::test_a_client_stays_on_one_backend_with_session_affinity",
                           "affinity::test_the_affinity_expires_after_its_timeout",
                           "affinity::test_without_affinity_connections_spread_over_the_backends",
                           "hairpin::test_the_backend_sees_the_source_its_plane_gives",
                           "itp::test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
                           "itp::test_a_pod_reaches_only_the_backends_on_its_own_node",
                           "no_backend::test_connect_from_a_pod_fails_as_its_plane_says",
                           "test_application_sees_the_service_while_its_socket_points_at_a_backend",
                           "test_conntrack_out_entry_names_the_socket_peer",
                           "terminating::test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists",
                           "terminating::test_when_only_terminating_backends_remain_new_connections_follow_the_rule",
                           "udp::test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on"),
                    says=("*socket LB (agent reports coverage Full): the socket's peer is the service address*not rewritten at connect()*service translation entries exist*",
                          "*affinity (sessionAffinity ClientIP): connections reached [[]'10.96.*:80'[]], which are not the Service's backends*",
                          "*iTP=Local (local backends only): 12 of 12 connections from a pod on fake-worker have their socket on 10.96.*:80, no backend of the Service (the socket plane did not translate them to a backend)*",
                          "*terminating backends (new connections): while term-a terminates: 20 of 20 new connections reached 10.96.*:7000, no backend of the Service*",
                          "*hairpin: hairpin saw its own request to 10.96.*:80 come from 169.254.42.1, expected 10.244.* (socket plane*",
                          "*UDP (socket termination): the connected socket to the deleted backend udpterm-a (10.244.*:5353) was not terminated (no ECONNABORTED)*")),
              Fails(name="ipv6-pods-per-packet-while-full", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests=("affinity::test_a_client_stays_on_one_backend_with_session_affinity[IPv6]",
                           "affinity::test_the_affinity_expires_after_its_timeout[IPv6]",
                           "affinity::test_without_affinity_connections_spread_over_the_backends[IPv6]",
                           "hairpin::test_the_backend_sees_the_source_its_plane_gives[IPv6]",
                           "itp::test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer[IPv6]",
                           "itp::test_a_pod_reaches_only_the_backends_on_its_own_node[IPv6]",
                           "no_backend::test_connect_from_a_pod_fails_as_its_plane_says[IPv6]",
                           "test_application_sees_the_service_while_its_socket_points_at_a_backend[IPv6]",
                           "test_conntrack_out_entry_names_the_socket_peer[IPv6]",
                           "terminating::test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists[IPv6]",
                           "terminating::test_when_only_terminating_backends_remain_new_connections_follow_the_rule[IPv6]",
                           "udp::test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on[IPv6]"),
                    says=("*socket LB (agent reports coverage Full): the socket's peer is the service address [[]fd00:10:96::*]:80: the destination was not rewritten at connect()*",
                          "*no backend (pod connect() to ClusterIP [[]fd00:10:96::*]:80; socket plane, ServiceNoBackendResponse=reject): connect() gave refused (ECONNREFUSED)*")),
          )),
    Fault("slow_reject_ms", "no backend", "the per-packet plane's reject arrives this late", default=None,
          fails=Fails(name="slow-reject", value=2000,
                      tests=("test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                             "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"),
                      says="*raw failed as expected (icmp-unreachable) but took 2.00s; the per-packet plane answers at once (bound 1s)*")),
    Fault("no_backend_silent_drop", "no backend", per_family=True,
          doc="the per-packet plane drops a backendless service's traffic although the agent says reject (no ICMP 3/3, no ICMPv6 1/4)",
          fails=(
              Fails(name="silent-drop-while-reject",
                    tests=("test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                           "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"),
                    says="*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort *; per-packet plane, ServiceNoBackendResponse=reject): a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 3/3*"),
              Fails(name="ipv6-silent-drop-while-reject", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests=("test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer[IPv6]",
                           "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer[IPv6]"),
                    says="*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort [[]fc00:f853:ccd:e793::4]:*; per-packet plane, ServiceNoBackendResponse=reject): a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 1/4*"),
          )),
    Fault("reject_icmp_code", "no backend", default=None,
          doc="the per-packet plane rejects with ICMP 3/<code> instead of 3/3 (port unreachable), e.g. 1 (host unreachable)",
          fails=(
              Fails(name="reject-icmp-host-unreachable", value=1,
                    tests=("test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                           "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"),
                    says="*the reject answer is ICMP 3/1, expected ICMP 3/3 (destination unreachable, port unreachable)*"),
              Fails(name="reject-icmp-admin-prohibited", value=13,
                    tests=("test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                           "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"),
                    says="*the reject answer is ICMP 3/13, expected ICMP 3/3*"),
          )),
    Fault("socket_lb_honours_drop", "no backend",
          doc="the socket plane follows ServiceNoBackendResponse=drop (connect() times out) -- the belief the source disproves",
          fails=Fails(name="socket-plane-follows-drop", fake="no_backend_response='drop'",
                      tests=("itp::test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
                             "test_connect_from_a_pod_fails_as_its_plane_says",
                             "test_curl_from_a_pod_fails_as_its_plane_says",
                             "udp::test_a_backendless_udp_service_fails_the_datagram_at_once"),
                      says=("*no backend (pod curl to ClusterIP *; socket plane, ServiceNoBackendResponse=drop): curl exited 28 after 5.00s (it timed out: the traffic was dropped); expected exit 7 at once*whatever ServiceNoBackendResponse says*",
                            "*no backend (pod sendto() to UDP ClusterIP 10.96.*:53; socket plane, ServiceNoBackendResponse=drop): sendto() gave timeout after 2.00s*",
                            "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; socket plane, ServiceNoBackendResponse=drop): connect() gave timeout after 2.00s*"))),
    Fault("eperm_on_new_kernel", "no backend",
          doc="the socket plane's no-backend connect() fails with EPERM on a kernel that lets it set EHOSTUNREACH (6.1+)",
          fails=(
              # the socket plane's errno: EHOSTUNREACH from kernel 6.1 (clusters/kernels.yaml sock_addr_set_retval)
              Fails(name="eperm-on-a-6.1-kernel",
                    tests=("itp::test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
                           "test_connect_from_a_pod_fails_as_its_plane_says",
                           "udp::test_a_backendless_udp_service_fails_the_datagram_at_once"),
                    says=("*no backend (pod connect() to ClusterIP *; socket plane, ServiceNoBackendResponse=reject): connect() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression of cilium/cilium#45184 (reported for Cilium 1.19.2 up to 1.20.0*",
                          "*UDP (no backend)*sendto() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression*",
                          "*iTP=Local (no local backend)*connect() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression*")),
          )),
    Fault("no_backend_not_routable", "no backend",
          doc="the per-packet plane hands a backendless Cluster-policy service's traffic to the node's stack (a reset) although the agent "
              "resolves enable-no-service-endpoints-routable true (the ICMP/drop answer is expected)",
          fails=(
              # enable-no-service-endpoints-routable is true (the default), yet the per-packet plane lets the SYN through to the stack
              Fails(tests=("test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                           "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"),
                    says="*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort *; per-packet plane, ServiceNoBackendResponse=reject): a raw SYN got reset after *; expected icmp-unreachable ICMP 3/3*"),
          )),
    Fault("not_routable_ignored", "no backend",
          doc="the agent resolves enable-no-service-endpoints-routable false, yet the per-packet plane answers as if it were true",
          fails=Fails(name="icmp-while-not-routable", fake="no_service_endpoints_routable=False",
                      tests=("test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                             "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"),
                      says="*no backend (raw SYN from fake-worker's host network *; per-packet plane, ServiceNoBackendResponse=reject, enable-no-service-endpoints-routable=false): a raw SYN got icmp-unreachable ICMP 3/3 after *; expected reset: enable-no-service-endpoints-routable is false*")),
    Fault("not_routable_resets_anywhere", "no backend",
          doc="with enable-no-service-endpoints-routable false, a pod's SYN to a backendless ClusterIP (per packet) gets a reset from the "
              "node's stack, as one to a NodePort does, though nothing on the node owns the ClusterIP",
          fails=(
              # ... but a pod's SYN to the ClusterIP (per packet, hostns-only) continues as addressed, and nothing owns that address
              Fails(name="not-routable-resets-a-cluster-ip", fake="no_service_endpoints_routable=False, socket_lb_hostns_only=True",
                    tests=("test_connect_from_a_pod_fails_as_its_plane_says", "test_curl_from_a_pod_fails_as_its_plane_says",
                           "test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it"),
                    says=("*no backend (pod curl to ClusterIP *; per-packet plane, *enable-no-service-endpoints-routable=false): curl exited 7 after *; expected exit 28 at its limit: *bpf_lxc lets the pod's packet continue untranslated to the ClusterIP, which nothing on the node owns*",
                          "*no backend (pod connect() to ClusterIP *): connect() gave refused (ECONNREFUSED) after *; expected timeout at its limit*",
                          "*no backend (pod raw SYN to ClusterIP *): a raw SYN got reset after *; expected timeout*")),
          )),
    Fault("per_packet_drop_on", "NodePort", default=None,
          doc="this node's per-packet plane drops the service traffic it handles although the service has backends, counting it in its BPF "
              "metrics as \"Service backend not found\" (DROP_NO_SERVICE, 158: cilium/cilium pkg/monitor/api/drop.go)",
          proven_by="tests/test_suites_vs_fake.py::test_a_probe_dropped_at_an_agent_names_the_drop_reason_and_the_node"),
    Fault("itp_no_local_drops", "iTP=Local",
          doc="a pod on a node without a local backend of an internalTrafficPolicy=Local Service gets a silent drop (connect() times out) "
              "instead of its plane's no-backend answer",
          fails=Fails(tests="test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
                      says="*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; socket plane, ServiceNoBackendResponse=reject): connect() gave timeout after 2.00s; expected unreachable at once (under 1s)*")),
    Fault("maglev_ignored", "Maglev", "the agents report Maglev but pick a random backend per connection",
          fails=Fails(fake="lb_algorithm='Maglev'",
                      tests=("test_a_flow_reaches_the_same_backend_through_every_node", "test_removing_a_backend_moves_only_its_flows"),
                      says=("*Maglev (the same IPv4 flow through different nodes): * of 24 flows did not reach one backend through fake-control-plane and fake-worker*",
                            "*Maglev (after deleting mag-*, IPv4 flows sent through fake-worker2): * of * flows on the surviving backends moved (*; allowed 1)*"))),
    Fault("outside_lb_always_first", "affinity",
          doc="a request from outside through a NodePort always gets the first backend (the per-packet plane does not spread)",
          fails=Fails(tests="test_from_outside_without_affinity_requests_spread_over_the_backends",
                      says="*affinity from outside (NodePort, none): all 12 requests from outside to fake-worker's NodePort without affinity reached aff-* of 4 backends (chance: 2.4e-07)*")),
    Fault("vip_not_served_from_outside", "north-south",
          doc="a request from outside to a LoadBalancer VIP, routed to a node, is dropped (the VIP is no frontend of bpf_host there)",
          fails=(
              # every VIP request from outside is dropped: the source-ranges suite's served cases too, and its drops go uncounted
              Fails(tests=("test_a_loadbalancer_vip_answers_from_outside_through_every_node",
                           "test_etp_local_on_a_vip_is_served_only_where_the_backend_is",
                           "source_ranges::test_a_source_in_the_ranges_is_served",
                           "source_ranges::test_the_drop_is_counted_as_denied_by_the_source_range_check",
                           "source_ranges::test_with_the_deny_annotation_a_source_outside_the_ranges_is_served"),
                    says=("*north-south (LoadBalancer VIP 198.18.21.10 from outside): 198.18.21.10:80 through fake-control-plane: no answer (timeout)*",
                          "*north-south (externalTrafficPolicy Local on VIP 198.18.21.11): through fake-worker2, which has the backend, 198.18.21.11:80: no answer (timeout)*",
                          "*source ranges (allow list, the client in it): sr-allow-in (allow list 172.18.0.1/32): 172.18.0.1 may pass, yet 198.18.22.10:80 through fake-worker gave no answer (timeout)*")),
              # LB-IPAM's families: a dual-stack run's IPv6 VIPs (and the source-ranges suite's), each reached through a node
              Fails(name="ipv6-vip-not-served", fake="ip_families=('IPv4', 'IPv6')",
                    tests=("test_a_loadbalancer_vip_answers_from_outside_through_every_node[IPv4]",
                           "test_a_loadbalancer_vip_answers_from_outside_through_every_node[IPv6]",
                           "test_etp_local_on_a_vip_is_served_only_where_the_backend_is[IPv4]",
                           "test_etp_local_on_a_vip_is_served_only_where_the_backend_is[IPv6]",
                           "source_ranges::test_a_source_in_the_ranges_is_served[IPv4]",
                           "source_ranges::test_a_source_in_the_ranges_is_served[IPv6]",
                           "source_ranges::test_the_drop_is_counted_as_denied_by_the_source_range_check[IPv4]",
                           "source_ranges::test_the_drop_is_counted_as_denied_by_the_source_range_check[IPv6]",
                           "source_ranges::test_with_the_deny_annotation_a_source_outside_the_ranges_is_served[IPv4]",
                           "source_ranges::test_with_the_deny_annotation_a_source_outside_the_ranges_is_served[IPv6]"),
                    says=("*north-south (LoadBalancer VIP 2001:2::15:10 from outside): [[]2001:2::15:10]:80 through fake-control-plane: no answer (timeout)*",
                          "*source ranges (allow list, the client in it): sr-allow-in (allow list 172.18.0.1/32, fc00:f853:ccd:e793::1/128)*")),
          )),
    Fault("external_ip_not_served_from_outside", "north-south",
          doc="a request from outside to an externalIPs address, routed to a node, is dropped",
          fails=(
              # the source-ranges suite asks an externalIPs address too: dropped, but not by the check, so no such drop is counted
              Fails(tests=("test_an_external_ip_answers_from_outside_through_every_node",
                           "source_ranges::test_the_ranges_hold_on_the_services_external_ips"),
                    says="*north-south (externalIPs 198.18.21.30 from outside): 198.18.21.30:80 through fake-control-plane: no answer (timeout)*"),
          )),
    Fault("source_ranges_ignored", "source ranges",
          doc="a VIP's loadBalancerSourceRanges are not checked: every source from outside is served",
          fails=Fails(tests=("test_a_source_outside_the_ranges_is_dropped", "test_the_drop_is_counted_as_denied_by_the_source_range_check",
                             "test_the_ranges_hold_on_the_services_external_ips",
                             "test_with_the_deny_annotation_a_source_in_the_ranges_is_dropped"),
                      says="*source ranges (allow list, the client outside it): sr-allow-out (allow list 192.0.2.0/24, 2001:db8::/64): 172.18.0.1 is refused by the ranges, yet 198.18.22.11:80 through fake-worker answered HTTP 200: the source-range check did not apply*")),
    Fault("source_range_deny_ignored", "source ranges",
          doc="the annotation service.cilium.io/src-ranges-policy: deny is ignored: the ranges stay an allow list",
          fails=Fails(tests=("test_the_drop_is_counted_as_denied_by_the_source_range_check",
                             "test_with_the_deny_annotation_a_source_in_the_ranges_is_dropped",
                             "test_with_the_deny_annotation_a_source_outside_the_ranges_is_served"),
                      says="*source ranges (deny list, the client in it): sr-deny-in (deny list 172.18.0.1/32): 172.18.0.1 is refused by the ranges, yet 198.18.22.12:80 through fake-worker answered HTTP 200*")),
    Fault("source_range_drop_uncounted", "source ranges",
          doc="a packet refused by the source-range check is dropped without counting \"Denied by LB src range check\" in the metrics",
          fails=Fails(tests=("test_the_drop_is_counted_as_denied_by_the_source_range_check",
                             "test_the_ranges_hold_on_the_services_external_ips"),
                      says='*source ranges (the drop reason in the agent\'s metrics): sr-allow-out (allow list 192.0.2.0/24, 2001:db8::/64): the request from 172.18.0.1 was dropped, but the agent on fake-worker counted no "Denied by LB src range check" drop (drops that rose: none)*')),
    Fault("source_ranges_on_nodeport", "source ranges",
          doc="a LoadBalancer Service's ranges are checked on its NodePort too, on 1.19+ without bpf-lb-source-range-all-types (as "
              "1.18 did: issue #42334)",
          fails=(
              # the ranges on a LoadBalancer Service's other frontends (datapath.SRC_SOURCE_RANGES_TYPES)
              Fails(tests="test_the_nodeport_answers_as_the_source_range_setting_says",
                    says="*source ranges (the Service's NodePort): sr-allow-out (NodePort 172.18.0.3:*, allow list 192.0.2.0/24, 2001:db8::/64): the ranges are not checked on a NodePort frontend here, yet 172.18.0.3:* through fake-worker gave *"),
          )),
    Fault("source_ranges_skip_nodeport", "source ranges",
          doc="a LoadBalancer Service's ranges are not checked on its NodePort where the release checks every frontend type (1.18: "
              "source-ranges.txtar@062e4cdb)",
          fails=Fails(name="source-ranges-skip-nodeport-1.18", fake="cilium_version='1.18.14'",
                      tests="test_the_nodeport_answers_as_the_source_range_setting_says",
                      says="*source ranges (the Service's NodePort): sr-allow-out (NodePort 172.18.0.3:*, allow list 192.0.2.0/24, 2001:db8::/64): 172.18.0.1 is refused by the ranges, yet 172.18.0.3:* through fake-worker answered HTTP 200: the source-range check did not apply*")),
    Fault("source_ranges_skip_external_ip", "source ranges",
          doc="a LoadBalancer Service's ranges are not checked on its externalIPs addresses (as before PR #44747)",
          fails=Fails(tests="test_the_ranges_hold_on_the_services_external_ips",
                      says="*source ranges (the Service's externalIPs): sr-allow-out (ExternalIP 198.18.22.30:80, allow list 192.0.2.0/24, 2001:db8::/64): 172.18.0.1 is refused by the ranges, yet 198.18.22.30:80 through fake-worker answered HTTP 200: the source-range check did not apply*")),
    Fault("wildcard_drop_missing", "protocols on a port",
          doc="a request from outside to a VIP on a port it does not serve is not dropped by its wildcard entry (it is routed on)",
          fails=Fails(tests="test_a_port_the_vip_does_not_serve_is_dropped_and_counted",
                      says='*protocols on a port (a port the VIP does not serve, from outside): 198.18.23.10:7001, a port the Service does not have, got no answer (timeout) through fake-worker, but the agent there counted no "Service backend not found" drop (drops that rose: none)*')),
    Fault("source_range_all_types_ignored", "source ranges",
          doc="the agents resolve bpf-lb-source-range-all-types true, yet a Service's ranges stay on its VIP (and externalIPs)",
          fails=Fails(fake="lb_source_range_all_types=True", tests="test_the_nodeport_answers_as_the_source_range_setting_says",
                      says="*source ranges (the Service's NodePort): sr-allow-out (NodePort 172.18.0.3:*, allow list 192.0.2.0/24, 2001:db8::/64): 172.18.0.1 is refused by the ranges, yet 172.18.0.3:* through fake-worker answered HTTP 200: the source-range check did not apply*")),
    Fault("source_ranges_inside", "source ranges",
          doc="a pod's connection to a VIP is held to loadBalancerSourceRanges too (the field is for traffic from outside only)",
          fails=Fails(tests="test_in_cluster_access_ignores_the_ranges",
                      says="*source ranges (in-cluster access): a pod's connection to sr-allow-out's VIP, whose ranges exclude it, got timeout: in-cluster access must ignore loadBalancerSourceRanges*")),
    Fault("outside_affinity_ignored", "affinity",
          doc="a request from outside to a NodePort with sessionAffinity ClientIP gets a new pick each time: the per-packet plane "
              "ignores the client's address",
          fails=(
              # no affinity kept, so no entry in the node's map either
              Fails(tests=("test_a_client_from_outside_stays_on_one_backend_with_session_affinity",
                           "test_the_nodes_affinity_map_holds_the_clients_entry"),
                    says="*affinity from outside (NodePort, sessionAffinity ClientIP): 12 requests from outside (172.18.0.1) to fake-worker's NodePort reached * backends [[]'aff-*'*despite sessionAffinity ClientIP*"),
          )),
)



@dataclass(frozen=True)
class Outcome:
    result: str  # answered | refused | unreachable | timeout | icmp | reset
    plane: Plane | None = None
    errno: str | None = None
    icmp: tuple[int, int] | None = None
    frontend: str = "none"  # ClusterIP | NodePort | ExternalIP | LoadBalancer | none
    delay_ms: float | None = None  # when the answer came (None: at once)
    backend: FakeBackend | None = None  # the backend that answered (a translated connection)
    handler: str | None = None  # the node whose plane translated it
    service: str | None = None  # ns/name of the frontend's Service


def classify(c: ClusterView, ip: str) -> tuple[str, str | None]:
    """(frontend kind, node whose InternalIP it is) of a destination address."""
    node = c.node_addresses().get(ip)
    if node is not None:
        return "NodePort", node
    for svc in c.services():
        spec = svc.get("spec", {})
        if ip in (spec.get("clusterIPs") or [spec.get("clusterIP")]):
            return "ClusterIP", None
        if ip in (spec.get("externalIPs") or []):
            return "ExternalIP", None
        if ip in [i.get("ip") for i in svc.get("status", {}).get("loadBalancer", {}).get("ingress") or []]:
            return "LoadBalancer", None
    return "none", None


def routed(c: ClusterView, ip: str, port: int, kind: str = "none", plane: Plane | None = None) -> Outcome:
    """No Cilium LB translated it: the packet goes to the address itself."""
    for p in c.pods():
        if pod_ip(p, family_of(ip)) == ip and not p["spec"].get("hostNetwork") and c.pod_ready(p):
            if not listens(p, family_of(ip)):
                return Outcome("refused", plane, "ECONNREFUSED", frontend=kind)
            return Outcome("answered", plane, frontend=kind)
    node = c.node_addresses().get(ip)
    if node is not None:  # the node's kernel: nobody listens there -> RST
        return Outcome("refused" if port not in c.node_listeners.get(node, []) else "answered", plane, "ECONNREFUSED", frontend=kind)
    return Outcome("timeout", plane, frontend=kind)  # nothing in the cluster owns the address


def listens(pod: dict, family: str) -> bool:
    """Whether the pod's server accepts connections of ``family`` (rules.workloads: http.server without ``--bind ::`` is
    IPv4 only)."""
    return family in server_families(((pod.get("spec", {}).get("containers") or [{}])[0].get("command")) or [])


def backend_listens(c: ClusterView, be: FakeBackend, family: str) -> bool:
    """Whether the backend's pod (any, when it is gone from the API) accepts connections of ``family`` (:func:`listens`)."""
    pod = next((p for p in c.pods() if p["metadata"]["name"] == be.pod), None)
    return pod is None or listens(pod, family)


def _coverage(c: ClusterView, client: str, access: str, frontend: str, family: str = "IPv4") -> str:
    cov = coverage_name(c.cfg.socket_lb_hostns_only and not (c.cfg.faults.socket_lb_reverse and client == "pod"))
    broken = c.cfg.faults.on("socket_lb_broken", family)
    if broken and client == "pod" and access == "connect" and frontend == "ClusterIP":
        cov = "Hostns-only"  # faults: pods' connections to a ClusterIP (of the family socket_lb_broken is set for) take the per-packet path
    return cov


#: cilium/cilium pkg/monitor/api/drop.go (read at ed49278a): ``158: "Service backend not found",``
DROP_NO_SERVICE = "Service backend not found"


def reach(c: ClusterView, node: str, *, host_network: bool, access: str, ip: str, port: int, outside: bool = False,
          flow: tuple[str, int] | None = None, proto: str = "TCP", source: str | None = None) -> Outcome:
    """A ``connect``, an unconnected UDP ``sendmsg`` or a ``raw`` SYN to ``ip:port`` (``proto``) from a pod on ``node``
    (its own namespace, or the host's for a host-network pod), or, with ``outside``, from a machine that reaches the
    nodes (the runner; ``source``: its address, what a node's per-packet affinity is keyed by)."""
    kind, target_node = classify(c, ip)
    family = family_of(ip)
    if kind == "none":
        return routed(c, ip, port)
    if outside:
        client, handler = "outside", target_node or node
    elif kind == "NodePort" and target_node != node and (host_network and access == "raw" or not host_network and access == "connect"
                                                         and _coverage(c, "pod", access, kind, family) == "Hostns-only"):
        # the SYN leaves this node untranslated (a raw one; a pod's, per packet: bpf_lxc's service map holds only this
        # node's NodePort addresses, datapath.SRC_LXC_NODEPORT) and arrives at the other one's bpf_host
        client, handler = "outside", target_node or node
    else:
        client, handler = ("host" if host_network else "pod"), node
    rule = plane_for(client, access, kind, _coverage(c, client, access, kind, family), "on" if c.cfg.external_ip_mitigation else "off")
    if rule.plane is Plane.NONE:
        return routed(c, ip, port, kind, Plane.NONE)
    fe = c.lb.find(handler, ip, port, proto)
    if fe is None and kind == "NodePort":
        fe = c.lb.find(handler, NODEPORT_WILDCARD[family], port, proto)
    if fe is None and client == "outside" and any(f.ip == ip and f.wildcard_in_map for f in c.lb.frontends(handler)) \
            and not c.cfg.faults.wildcard_drop_missing:
        # datapath.SRC_WILDCARD_DROP: the VIP's wildcard entry drops a port or protocol it does not serve (the fault: no drop)
        c.agents[handler].count(DROP_NO_SERVICE, "ingress", 1, "nodeport.h")
        return Outcome("timeout", rule.plane, frontend=kind)
    if fe is None:  # no such frontend: nothing translates it
        return routed(c, ip, port, kind, rule.plane)
    faults = c.cfg.faults
    if client == "outside" and (faults.vip_not_served_from_outside and kind == "LoadBalancer"
                                or faults.external_ip_not_served_from_outside and kind == "ExternalIP"):
        return Outcome("timeout", rule.plane, frontend=kind)  # the faults: nothing serves it from outside
    if (kind == "LoadBalancer" and faults.source_ranges_inside or client == "outside" and kind in ("LoadBalancer", "NodePort", "ExternalIP")) \
            and not faults.source_ranges_ignored:
        svc = c.service(fe.service)
        ranges = (svc.get("spec") or {}).get("loadBalancerSourceRanges") or []
        deny = ((svc.get("metadata") or {}).get("annotations") or {}).get(SRC_RANGES_POLICY, "").lower() == "deny" \
            and not faults.source_range_deny_ignored
        # datapath.SRC_SOURCE_RANGES(_DENY): checked on the per-packet path from outside only (SRC_SOURCE_RANGES_INSIDE; the
        # source_ranges_inside fault checks a pod too, whose address is in no range a suite sets: the unspecified one stands for it),
        # on the frontends SRC_SOURCE_RANGES_TYPES names (the faults: a NodePort checked as on 1.18, or not where it is, an externalIPs address not)
        src = source if client == "outside" and source else ("::" if family == "IPv6" else "0.0.0.0")
        all_types = c.cfg.lb_source_range_all_types and not faults.source_range_all_types_ignored
        checked = source_ranges_applied(kind, c.cfg.cilium_version, all_types)
        if kind == "NodePort" and faults.source_ranges_on_nodeport or kind == "ExternalIP" and faults.source_ranges_skip_external_ip:
            checked = kind == "NodePort"
        if kind == "NodePort" and faults.source_ranges_skip_nodeport:
            checked = False  # fault: the NodePort left alone where the release checks it
        if ranges and checked and not source_range_allows(src, ranges, deny):
            if not faults.source_range_drop_uncounted:  # the fake's own place in the datapath, as for DROP_NO_SERVICE
                c.agents[handler].count(DROP_NOT_IN_SRC_RANGE, "ingress", 1, "nodeport.h")
            return Outcome("timeout", rule.plane, frontend=kind)
    # traffic from outside looks up the external scope; east-west lookups the internal one (datapath.SRC_ETP_SCOPES)
    backends = fe.backends if client == "outside" or fe.internal is None else fe.internal
    if backends and c.cfg.faults.per_packet_drop_on == handler and rule.plane is Plane.PER_PACKET:
        # the fake's own place in the datapath: a real agent names its source line and file
        c.agents[handler].count(DROP_NO_SERVICE, "ingress" if client == "outside" else "egress", 1, "nodeport.h")
        return Outcome("timeout", rule.plane, frontend=kind)
    if backends:
        be = _select(c, handler, fe, backends, client, port, flow, source)
        if client == "outside" and be.node != handler and xdp_forward_dropped(c.cfg.acceleration, c.cfg.node_provider == "kind"):
            # datapath.SRC_XDP_KIND: forwarded with XDP_TX through the kind node's veth, dropped at its host end
            return Outcome("timeout", rule.plane, frontend=kind)
        if not backend_listens(c, be, family):  # the backend's kernel refuses: nothing listens on that family
            # (an unconnected UDP socket is not told of the ICMP port unreachable: its recvfrom() waits)
            return Outcome("timeout" if access == "sendmsg" else "refused", rule.plane, None if access == "sendmsg" else "ECONNREFUSED",
                           frontend=kind)
        return Outcome("answered", rule.plane, frontend=kind, backend=be, handler=handler, service=fe.service)
    faults, response = c.cfg.faults, c.cfg.no_backend_response
    if faults.itp_no_local_drops and client != "outside" \
            and c.service(fe.service).get("spec", {}).get("internalTrafficPolicy") == "Local":  # fault: a silent drop
        return Outcome("timeout", rule.plane, frontend=kind)
    if rule.plane is Plane.SOCKET:
        if faults.socket_lb_honours_drop and response == "drop":
            return Outcome("timeout", rule.plane, frontend=kind)
        # below 6.1 the hook cannot set the errno (EPERM); 1.19.2 up to 1.20.0 compiled the helper out (datapath.SRC_EPERM_BUG)
        nb = no_backend(Plane.SOCKET, response, kernel=kernel_tuple(c.cfg.kernel))
        eperm = "EPERM" in nb.errnos or in_range(Version.parse(c.cfg.cilium_version), EPERM_REGRESSION) or faults.eperm_on_new_kernel
        return Outcome("unreachable", rule.plane, "EPERM" if eperm else "EHOSTUNREACH", frontend=kind) if nb.fast else \
            Outcome("timeout", rule.plane, frontend=kind)
    if (c.cfg.no_service_endpoints_routable is False and not faults.not_routable_ignored) or faults.no_backend_not_routable:
        # datapath.SRC_NO_SVC_ROUTABLE: Local policy drops; Cluster policy continues as addressed: the node's stack resets
        # a SYN to its own NodePort address, and nothing answers one to a ClusterIP (SRC_NO_SVC_ROUTABLE_LXC)
        spec = c.service(fe.service).get("spec", {})
        local = spec.get("externalTrafficPolicy" if client == "outside" else "internalTrafficPolicy") == "Local"
        if local:
            return Outcome("timeout", rule.plane, frontend=kind)
        nb = no_backend(rule.plane, response, routable=False, owner="node" if kind == "NodePort" else "elsewhere")
        if nb.raw == "reset" or faults.not_routable_resets_anywhere:  # fault: a reset as if the node owned every address
            return Outcome("refused", rule.plane, "ECONNREFUSED", frontend=kind)
        return Outcome("timeout", rule.plane, frontend=kind)
    if response == "reject" and faults.on("no_backend_silent_drop", family):
        return Outcome("timeout", rule.plane, frontend=kind)  # fault: a silent drop (of the family it is set for)
    nb = no_backend(rule.plane, response, family=6 if family == "IPv6" else 4)
    if nb.icmp is None:
        return Outcome("timeout", rule.plane, frontend=kind)
    icmp = (nb.icmp[0], faults.reject_icmp_code) if faults.reject_icmp_code is not None else nb.icmp
    late = float(faults.slow_reject_ms) if faults.slow_reject_ms is not None else None  # fault: a slow reject
    if access == "raw":
        return Outcome("icmp", rule.plane, icmp=icmp, frontend=kind, delay_ms=late)
    # the client's TCP stack turns ICMP port unreachable (ICMPv6 too) into ECONNREFUSED, host unreachable into EHOSTUNREACH
    if icmp in ((3, 3), ICMP6_PORT_UNREACHABLE):
        return Outcome("refused", rule.plane, "ECONNREFUSED", icmp=icmp, frontend=kind, delay_ms=late)
    return Outcome("unreachable", rule.plane, "EHOSTUNREACH", icmp=icmp, frontend=kind, delay_ms=late)


def _select(c: ClusterView, handler: str, fe: FakeFrontend, backends: list[FakeBackend], client: str, port: int,
            flow: tuple[str, int] | None, source: str | None = None) -> FakeBackend:
    """The backend the handling node's plane picks. From outside, through a Service with sessionAffinity ClientIP: the
    backend this node remembers for the client's address (datapath.SRC_AFFINITY_OUTSIDE; each node has its own map),
    while it was last used less than timeoutSeconds ago (SRC_AFFINITY_TIMEOUT), else a new pick that it then remembers
    (the outside_affinity_ignored fault never remembers). The pick: the Maglev table's slot for a flow from outside
    through a frontend that has a table (datapath.SRC_MAGLEV_HASH, SRC_MAGLEV_SCOPE; the maglev_ignored fault picks at
    random), else at random (bpf/lib/lb.h LB_SELECTION_RANDOM, bpf_sock.c)."""
    spec = c.service(fe.service).get("spec", {}) if client == "outside" and source is not None else {}
    if spec.get("sessionAffinity") == "ClientIP" and not c.cfg.faults.outside_affinity_ignored:
        assert source is not None
        timeout = int(((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}).get("timeoutSeconds") or 10800)
        table, key, now = c.agents[handler].affinity_by_addr, (source, fe.service, fe.ip, fe.port), int(c.clock.monotonic())
        by_addr = {f"{b.ip}:{b.port}": b for b in backends}
        remembered = table.get(key)
        if remembered is not None and remembered[0] in by_addr and now < remembered[1] + timeout:
            table[key] = (remembered[0], now)
            return by_addr[remembered[0]]
        chosen = _pick(c, handler, fe, backends, client, port, flow)
        table[key] = (f"{chosen.ip}:{chosen.port}", now)
        return chosen
    return _pick(c, handler, fe, backends, client, port, flow)


def _pick(c: ClusterView, handler: str, fe: FakeFrontend, backends: list[FakeBackend], client: str, port: int,
          flow: tuple[str, int] | None) -> FakeBackend:
    agent = c.agents[handler]
    if client == "outside" and flow is not None and agent.has_maglev_table(fe) and not c.cfg.faults.maglev_ignored:
        by_addr = {(b.ip, b.port): b for b in backends}
        return by_addr[maglev.pick(agent.seed(), tuple(by_addr), flow[0], flow[1], port, fe.proto)]
    if client == "outside" and c.cfg.faults.outside_lb_always_first:  # fault: no spreading on the per-packet plane
        return backends[0]
    return random.choice(backends)


ERRNO = {"ECONNREFUSED": 111, "EHOSTUNREACH": 113, "EPERM": 1}


def curl_result(o: Outcome, ip: str, port: int, max_time: float) -> tuple[int, float, int, str]:
    """(http_code, seconds, curl exit, stderr) of ``curl http://ip:port/`` with that outcome."""
    if o.result == "answered":
        return 200, 0.0021, 0, ""
    if o.result == "timeout":
        return 0, max_time, 28, f"curl: (28) Connection timed out after {int(max_time * 1000)} milliseconds\n"
    ms = o.delay_ms or 0.4
    return 0, ms / 1000.0, 7, f"curl: (7) Failed to connect to {ip} port {port} after {int(ms)} ms: Couldn't connect to server\n"


def probe_result(o: Outcome, kind: str, timeout: float) -> dict[str, object]:
    """The JSON ``kpr probe syn|connect|http`` prints for that outcome."""
    if o.result == "answered":
        ok: dict[str, dict[str, object]] = {"syn": {"verdict": "accepted"}, "connect": {"verdict": "connected"},
                                            "http": {"verdict": "http", "http_code": 200}}
        return {**ok[kind], "elapsed_ms": 1.1}
    if o.result == "timeout":
        return {"verdict": "timeout", "elapsed_ms": timeout * 1000.0}
    if kind == "syn":
        if o.result == "icmp" and o.icmp is not None:
            return {"verdict": "icmp-unreachable", "elapsed_ms": o.delay_ms or 0.9, "icmp_type": o.icmp[0], "icmp_code": o.icmp[1]}
        if o.result == "refused":
            return {"verdict": "reset", "elapsed_ms": 0.8}
        raise AssertionError(f"a raw SYN cannot see {o}")  # the socket plane never sees a packet
    verdict = "refused" if o.result == "refused" else "unreachable"
    return {"verdict": verdict, "elapsed_ms": o.delay_ms or 0.05, "errno": ERRNO.get(o.errno or "", 0), "errno_name": o.errno}
