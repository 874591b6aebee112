"""The fake agent's load-balancer state, derived from the fake cluster's Services and ready pods.

It mirrors what Cilium programs: one frontend per (address, port, protocol), a service ID (= RevNAT
ID) per frontend that stays stable while the frontend exists, backend slots 1..N for the ready
endpoints. NodePort services get ``0.0.0.0:<nodePort>`` and ``<node InternalIP>:<nodePort>`` frontends.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from ..rules.datapath import (HEADLESS_LABEL, LB_MAP_MAX_DEFAULT, MAGLEV_DEFAULT_SEED, MAP_FULL_ERROR, NODEPORT_WILDCARD, REV_NAT_FULL_ERROR,
                              REV_NAT_MAP_NAME, itp_enabled, lrp_backends, new_connection_backends, service_exposed_on,
                              terminating_endpoints_kept, wildcard_entry)
from ..rules.lbmodel import Event, LbModel, Op, Variant
from ..parse.addr import family_of, hp, split_host_port
from .config import FakeConfig, Faults
from .view import ClusterView, FakeBackend, FakeFrontend, pod_ip
from .faults import Fails, Fault, declare
from .lbcp import AgentConfig
from .lbcp.addr import SCOPE_EXTERNAL, SCOPE_INTERNAL, L3n4, ip_of
from .lbcp.bpf import BACKEND_ID_LIMIT, SERVICE_ID_LIMIT, IdAllocator, master_flags, slot_order, svc_flags
from .lbcp.agent import backend_matches, convert_service, parse_endpoint_slice, select_backends
from .lbcp.tables import ACTIVE, MAINTENANCE, TERMINATING, TERMINATING_NOT_SERVING, BackendParams, Frontend, FrontendParams, Service


FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("stale_slots", "backend slots", "backends removed by scaling down stay in the BPF slots",
          fails=Fails(name="stale-slots-after-scale-down", tests="test_slots_follow_a_scale_down",
                      says="*backend slots did not follow web scaling down to 2*: fake-control-plane: slots still hold [[]*which the EndpointSlice no longer has*")),
    Fault("backend_missing_on", "backend slots", default=None,
          doc="this node's agent lacks one backend of every service that has more than two (a scale-up never converges there)",
          fails=Fails(name="backend-missing-on-one-agent", value="fake-worker2",
                      tests="test_slots_converge_to_the_endpointslice_after_scaling_to_four",
                      says="*backend slots did not converge after scaling web to 4*: fake-worker2: slots lack [[]*")),
    Fault("backend6_missing", "backend slots", "IPv6 only (dual stack): every agent's IPv6 frontends with more than 2 backends lack one",
          fails=Fails(name="ipv6-slots-lack-a-backend", fake="ip_families=('IPv4', 'IPv6')",
                      tests="test_slots_converge_to_the_endpointslice_after_scaling_to_four[IPv6]",
                      says="*backend slots did not converge after scaling web to 4 (IPv6, waited *s): fake-control-plane: slots lack [[]'[[]fd00:10:244:*")),
    Fault("slots_cap", "backend slots", "the agents program at most this many backend slots per frontend (never converge)", default=None,
          fails=Fails(name="slots-capped", value=3, tests="test_slots_converge_to_the_endpointslice_after_scaling_to_four",
                      says="*backend slots did not converge after scaling web to 4 (IPv4, waited *s): fake-control-plane: slots lack [[]*")),
    Fault("slow_agent_on", "backend slots", default=None,
          doc="this node's agent programs a new backend only slow_agent_s (wall-clock) seconds after it became ready",
          proven_by="tests/test_suites_vs_fake.py::test_the_slowest_agent_is_timed_within_the_poll_resolution"),
    Fault("slow_agent_s", "backend slots", "how late slow_agent_on's agent programs a new backend, in (wall-clock) seconds", default=2.0,
          proven_by="tests/test_suites_vs_fake.py::test_the_slowest_agent_is_timed_within_the_poll_resolution"),
    Fault("nodeport_wrong_port", "NodePort", "NodePort frontends are programmed on nodePort+1",
          fails=Fails(name="nodeport-frontend-on-the-wrong-port",
                      tests=("affinity::test_a_client_from_outside_stays_on_one_backend_with_session_affinity",
                             "affinity::test_from_outside_without_affinity_requests_spread_over_the_backends",
                             "affinity::test_the_nodes_affinity_map_holds_the_clients_entry",
                             "dsr::test_the_backend_sees_the_address_the_nodeport_mode_promises",
                             "etp::test_only_the_node_with_a_local_backend_serves_it_from_outside",
                             "etp::test_the_backend_sees_the_clients_own_address",
                             "icmp_errors::test_a_fragmentation_needed_error_reaches_the_client_reverse_translated",
                             "no_backend::test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
                             "no_backend::test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer",
                             "test_agent_lists_the_wildcard_nodeport_frontend",
                             "test_nodeport_answers_from_outside_the_cluster",
                             "test_nodeport_answers_http_200_on_the_node"),
                      says=("*NodePort: the agent lists no 0.0.0.0:30780 NodePort frontend (NodePort frontends: [[]*0.0.0.0:30781/TCP*",
                            "*NodePort: 172.18.0.3:30780 answered 0 (curl exit 7)*",
                            "*ICMP errors (*): no ICMP error came back to * (timeout), and ie-backend on * logged no datagram: the NodePort did not forward it*"))),
    Fault("nodeport_v6_missing", "NodePort",
          doc="IPv6 only (dual stack): the agents program no ``[::]:<port>`` NodePort frontend (a NodePort Service is served over IPv4 only)",
          fails=Fails(name="ipv6-nodeport-not-programmed", fake="ip_families=('IPv4', 'IPv6')",
                      tests=("affinity::test_a_client_from_outside_stays_on_one_backend_with_session_affinity[IPv6]",
                             "affinity::test_from_outside_without_affinity_requests_spread_over_the_backends[IPv6]",
                             "affinity::test_the_nodes_affinity_map_holds_the_clients_entry[IPv6]",
                             "dsr::test_the_backend_sees_the_address_the_nodeport_mode_promises[IPv6]",
                             "etp::test_only_the_node_with_a_local_backend_serves_it_from_outside[IPv6]",
                             "etp::test_the_backend_sees_the_clients_own_address[IPv6]",
                             "itp::test_traffic_from_outside_is_unaffected[IPv6]",
                             "no_backend::test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer[IPv6]",
                             "no_backend::test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer[IPv6]",
                             "test_agent_lists_the_wildcard_nodeport_frontend[IPv6]",
                             "test_nodeport_answers_from_outside_the_cluster[IPv6]",
                             "test_nodeport_answers_http_200_on_the_node[IPv6]",
                             "source_ranges::test_the_nodeport_answers_as_the_source_range_setting_says[IPv6]"),
                      says=("*NodePort: [[]fc00:f853:ccd:e793::3]:30780 answered 0 (curl exit 7)*",
                            "*NodePort from outside: http http://[[]fc00:f853:ccd:e793::3]:30780/: refused*",
                            "*NodePort: the agent lists no [[]::]:30780 NodePort frontend (NodePort frontends: [[]'0.0.0.0:*/TCP'*",
                            "*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort [[]fc00:f853:ccd:e793::4]:*; per-packet plane, ServiceNoBackendResponse=reject): a raw SYN got reset after *; expected icmp-unreachable ICMP 1/4*"))),
    Fault("late_requeue_s", "shared VIP", default=None,
          doc="a rejected claimant gets its frontend this many (wall-clock) seconds after a Service is deleted: a re-queue that comes late "
              "(the shared-VIP watch must still see it) instead of never (Cilium 1.18) or at once (fixed)",
          proven_by="tests/test_suites_vs_fake.py::test_a_claimant_that_appears_late_is_still_seen_to_appear"),
    Fault("lrp_ignored", "local redirect",
          doc="the agents honour CiliumLocalRedirectPolicy (enable-local-redirect-policy), yet a redirected Service keeps its own backends",
          fails=(
              # the lrp profile's agents forward to the Service's own backends: the policy changed nothing
              Fails(fake="local_redirect_policy=True", tests="test_a_service_matcher_policy_keeps_pods_on_their_nodes_selected_pods",
                    says="*local redirect (ServiceMatcher): * of 12 connections from * to * reached lrp-far-1 x*, lrp-far-2 x*, not the policy's local lrp-local: the Local Redirect Policy did not redirect them*"),
          )),
    Fault("multi_protocol_collapsed", "protocols on a port",
          doc="a Service with one port number for two protocols gets frontends for the first protocol only",
          fails=Fails(tests="test_tcp_and_udp_on_one_port_are_both_served",
                      says="*protocols on a port (TCP and UDP): UDP to 10.96.*:7000 from a pod: timeout, though the Service has 7000/UDP beside its TCP port*")),
    Fault("node_exposure_ignored", "node exposure",
          doc="the agents ignore service.cilium.io/node and service.cilium.io/node-selector: every agent installs the Service",
          fails=Fails(tests=("test_a_node_annotation_no_node_carries_installs_the_service_nowhere",
                             "test_a_node_selector_annotation_installs_the_service_only_on_the_nodes_it_selects"),
                      says=("*node exposure (service.cilium.io/node-selector): kpr-suite-node-exposure-*/nx-here (service.cilium.io/node-selector: kubernetes.io/hostname=fake-worker) selects fake-worker, yet fake-control-plane, fake-worker2 list its frontends*",
                            "*node exposure (service.cilium.io/node): kpr-suite-node-exposure-*/nx-nowhere (service.cilium.io/node: kpr-*) selects no node, yet fake-control-plane, fake-worker, fake-worker2 list its frontends*"))),
    Fault("node_exposure_inverted", "node exposure",
          doc="the agents install a Service annotated service.cilium.io/node(-selector) exactly on the nodes it does not select",
          fails=(
              # installed where it is not exposed and not where it is: the selected node does not serve it either
              Fails(tests=("test_a_node_annotation_no_node_carries_installs_the_service_nowhere",
                           "test_a_node_selector_annotation_installs_the_service_only_on_the_nodes_it_selects"),
                    says="*node exposure (service.cilium.io/node-selector): * is exposed on fake-worker, yet the agent there lists no frontend of it*a pod on the selected node could not reach nx-here: timeout*"),
          )),
    Fault("headless_label_ignored", "headless",
          doc="the agents ignore the service.kubernetes.io/headless label: a labelled Service's ClusterIP (and NodePorts) are programmed",
          fails=Fails(tests=("test_a_clusterip_service_labelled_headless_gets_no_frontend",
                             "test_a_nodeport_service_labelled_headless_gets_no_nodeport"),
                      says=("*headless (ClusterIP): fake-* lists 1 frontend for kpr-suite-headless-*/hl-clusterip, a ClusterIP Service labelled service.kubernetes.io/headless: 10.96.*:80/TCP ClusterIP*",
                            "*headless (NodePort): fake-* lists * frontends for kpr-suite-headless-*/hl-nodeport, a NodePort Service labelled service.kubernetes.io/headless: *"))),
    Fault("headless_nodeport_programmed", "headless",
          doc="the label is honoured for the ClusterIP only: a labelled NodePort Service's NodePort frontends are programmed",
          fails=Fails(tests="test_a_nodeport_service_labelled_headless_gets_no_nodeport",
                      says="*headless (NodePort): fake-* lists 1 frontend for kpr-suite-headless-*/hl-nodeport, a NodePort Service labelled service.kubernetes.io/headless: 0.0.0.0:3*/TCP NodePort*")),
    Fault("etp_local_ignored", "eTP=Local",
          doc="the external scope of an externalTrafficPolicy=Local Service keeps every backend: a node without a local backend serves it",
          fails=(
              # the VIP of an eTP=Local Service keeps every backend too (the north-south suite's Local VIP)
              Fails(tests=("test_only_the_node_with_a_local_backend_serves_it_from_outside",
                           "north_south::test_etp_local_on_a_vip_is_served_only_where_the_backend_is"),
                    says="*eTP=Local (from outside): fake-control-plane, which has no local backend, served it from outside (accepted)*"),
          )),
    Fault("topology_ignored", "trafficDistribution",
          doc="the agents report enable-service-topology, yet select every backend whatever the Service's trafficDistribution",
          fails=(
              Fails(fake="service_topology=True",
                    tests=("test_prefer_close_keeps_a_client_in_its_zone", "test_prefer_same_node_keeps_a_client_on_its_nodes_backend"),
                    says=("*trafficDistribution (PreferSameNode): * of 20 connections from fake-worker to td-same-node (PreferSameNode) left the node: reached td-far x*, td-near x*",
                          "*trafficDistribution (PreferClose): * of 20 connections from zone-a to td-close (PreferClose) left the zone: reached td-far x*")),
              Fails(name="ipv6-topology-ignored", fake="ip_families=('IPv4', 'IPv6'), service_topology=True",
                    tests=("test_prefer_close_keeps_a_client_in_its_zone[IPv4]", "test_prefer_close_keeps_a_client_in_its_zone[IPv6]",
                           "test_prefer_same_node_keeps_a_client_on_its_nodes_backend[IPv4]",
                           "test_prefer_same_node_keeps_a_client_on_its_nodes_backend[IPv6]"),
                    says="*trafficDistribution (PreferSameNode): * of 20 connections from fake-worker to td-same-node (PreferSameNode) left the node*"),
          )),
    Fault("zone_hints_ignored", "trafficDistribution",
          doc="under service topology, PreferClose is ignored (every backend), PreferSameNode still honoured",
          fails=Fails(fake="service_topology=True", tests="test_prefer_close_keeps_a_client_in_its_zone",
                      says="*trafficDistribution (PreferClose): * of 20 connections from zone-a to td-close (PreferClose) left the zone*")),
    Fault("same_node_no_fallback", "trafficDistribution",
          doc="PreferSameNode on a node without a local backend selects none (no fallback to all backends)",
          fails=Fails(fake="service_topology=True", tests="test_prefer_same_node_without_a_local_backend_reaches_every_backend",
                      says="*trafficDistribution (PreferSameNode, no local backend): 20 of 20 connections to td-away did not connect*")),
    Fault("vip_etp_local_ignored", "north-south",
          doc="the external scope of an externalTrafficPolicy=Local Service's LoadBalancer VIP keeps every backend (its NodePort does not)",
          fails=Fails(tests="test_etp_local_on_a_vip_is_served_only_where_the_backend_is",
                      says="*north-south (externalTrafficPolicy Local on VIP 198.18.21.11): through fake-control-plane, which has no local backend, 198.18.21.11:80 was served by ns-local-backend: the request was forwarded to another node*")),
    Fault("etp_breaks_cluster_ip", "eTP=Local",
          doc="an eTP=Local Service's ClusterIP is served from local backends only (iTP treated as Local)",
          fails=Fails(tests="test_in_cluster_cluster_ip_access_is_unaffected",
                      says="*eTP=Local (ClusterIP from a pod on fake-worker, which has no local backend): unreachable*")),
    Fault("itp_local_ignored", "iTP=Local", per_family=True,
          doc="internalTrafficPolicy=Local is not honoured: the ClusterIP keeps every backend (a pod reaches another node's backend)",
          fails=(
              Fails(tests=("test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
                           "test_a_pod_reaches_only_the_backends_on_its_own_node"),
                    says=("*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): another node's backend, as if internalTrafficPolicy were Cluster*",
                          "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; socket plane, ServiceNoBackendResponse=reject): connect() gave connected after *; expected unreachable at once*")),
              # from 1.19 internalTrafficPolicy is always honoured: a leftover enable-internal-traffic-policy=false does not make the
              # suite skip, so an agent that ignores the policy fails it (datapath.SRC_ITP_ALWAYS)
              Fails(name="itp-ignored-beside-a-leftover-option", fake="enable_internal_traffic_policy='false'",
                    tests=("test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
                           "test_a_pod_reaches_only_the_backends_on_its_own_node"),
                    says="*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): another node's backend, as if internalTrafficPolicy were Cluster*"),
              Fails(name="ipv6-itp-local-ignored", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests=("test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer[IPv6]",
                           "test_a_pod_reaches_only_the_backends_on_its_own_node[IPv6]"),
                    says=("*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): another node's backend, as if internalTrafficPolicy were Cluster*",
                          "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to [[]fd00:10:96::*]:80, whose only backend is on fake-worker2*connect() gave connected*")),
          )),
    Fault("itp_narrows_external", "iTP=Local",
          doc="internalTrafficPolicy=Local narrows the external scope too: outside traffic through a node without a local backend fails",
          # what the SYN gets is the no-backend answer of its run (icmp-unreachable under reject, a timeout where a fault of
          # the no-backend property drops it), so the words hold to what names this property
          fails=Fails(tests="test_traffic_from_outside_is_unaffected",
                      says="*iTP=Local (from outside): a raw SYN from outside to 172.18.0.3:*, which has no local backend, got *; internalTrafficPolicy must not apply to traffic from outside (externalTrafficPolicy Cluster: the backend on fake-worker2 serves it)*")),
    Fault("terminating_selected", "terminating backends", per_family=True,
          doc="a terminating backend stays selectable while active ones exist: new connections may pick it",
          fails=(
              Fails(tests="test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists",
                    says="*terminating backends (new connections): while term-a terminates: * of 20 new connections reached term-a, which should not be picked*"),
              Fails(name="ipv6-terminating-backend-picked", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists[IPv6]",
                    says="*terminating backends (new connections): while term-a terminates: * of 20 new connections reached term-a, which should not be picked*"),
          )),
    Fault("terminating_never_used", "terminating backends",
          doc="when only terminating backends remain they are not used: new connections get the no-backend answer",
          fails=Fails(tests="test_when_only_terminating_backends_remain_new_connections_follow_the_rule",
                      says="*terminating backends (only terminating): with only terminating backends: 20 of 20 new connections failed although term-a, term-b are there to serve them*")),
    Fault("hostport_unserved", "hostPort", per_family=True,
          doc="a pod's hostPort gets no HostPort frontend of the family: nothing answers on the node's address",
          fails=(
              Fails(tests=("test_the_agent_lists_a_host_port_frontend", "test_the_host_port_answers_on_the_nodes_address"),
                    says=("*hostPort: 172.18.0.3:18780 from the node: connect refused, HTTP 0 (curl exit 7)*",
                          "*hostPort: on fake-worker: the agent lists no IPv4 HostPort frontend on port 18780*")),
              Fails(name="ipv6-host-port-not-served", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests=("test_the_agent_lists_a_host_port_frontend[IPv6]", "test_the_host_port_answers_on_the_nodes_address[IPv6]"),
                    says=("*hostPort: [[]fc00:f853:ccd:e793::3]:18780 from the node: connect refused, HTTP 0 (curl exit 7)*",
                          "*hostPort: on fake-worker: the agent lists no IPv6 HostPort frontend on port 18780 (only [[]'HostPort 0.0.0.0:18780/TCP'*")),
          )),
    Fault("service_map_capacity", "map pressure", default=None,
          doc="the service map holds only this many entries, whatever size the agents report (other users filled it)",
          fails=(
              # each suite's Services are gone when the next one runs (plugin.fixtures.lab), so the map-pressure suite meets its own: its
              # 20 Services take 40 service entries (a master and, 1.19+, a wildcard entry: datapath.SRC_WILDCARD) and 20 reverse-NAT
              # entries; a service map of 30 and a reverse-NAT map of 15 leave some of them out
              Fails(name="service-map-full-unexpectedly", value=90, tests="test_every_service_of_the_run_is_in_the_bpf_maps",
                    says="*map pressure (IPv4 maps): service map full (90 of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the BPF maps (mp-*"),
          )),
    Fault("service6_map_capacity", "map pressure", default=None,
          doc="IPv6 only (dual stack): the lb6 service map holds only this many entries (the lb4 one what the agents report)",
          fails=(
              # the lb6 service map alone holds fewer entries than the agent reports: only the IPv6 inventory misses Services (the 50
              # map-pressure Services take 100 IPv6 entries with their wildcard entries, datapath.SRC_WILDCARD; as above)
              Fails(name="ipv6-service-map-full-unexpectedly", value=90, fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_every_service_of_the_run_is_in_the_bpf_maps[IPv6]",
                    says="*map pressure (IPv6 maps): service map full (90 of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the BPF maps (mp-*"),
          )),
    Fault("rev_nat_map_capacity", "map pressure", default=None,
          doc="the reverse-NAT map holds only this many entries, whatever size the agents report (it fills before the service map)",
          fails=(
              # the reverse-NAT entry is written before the master (bpf_reconciler.go updateFrontend): that map can fill first
              Fails(name="rev-nat-map-full-unexpectedly", value=40, tests="test_every_service_of_the_run_is_in_the_bpf_maps",
                    says="*map pressure (IPv4 maps): reverse-NAT map full (* of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the BPF maps*"),
              Fails(name="map-larger-than-reported", value=100000, fake="lb_map_max=512", also=(('service_map_capacity', 100000),),
                    tests="test_every_service_of_the_run_is_in_the_bpf_maps",
                    says="*map pressure (IPv4 maps): 528 Services for a service map of 512 entries (/tmp/cilium/config-map/bpf-lb-map-max), yet none is missing*"),
          )),
    Fault("map_full_silent", "map pressure", "frontends that do not fit in the service map show Done, no error, and health stays OK",
          fails=(
              Fails(name="rev-nat-map-full-silent", fake="lb_map_max=512, lb_rev_nat_map_max=200", tests="test_a_full_map_is_not_silent",
                    says="*map pressure (how the agent shows a full IPv4 map): * of * Services missing from the map show no error for it (e.g. mp-*: status Done, error None; expected Error with 'Unable to update element for LB bpf map' (service map full) or 'Unable to update reverse NAT' (reverse-NAT map full))*the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled*"),
              Fails(fake="lb_map_max=512", tests="test_a_full_map_is_not_silent",
                    says="*map pressure (how the agent shows a full IPv4 map): * of * Services missing from the map show no error for it (e.g. mp-*: status Done*the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (* readings: no row)*"),
          )),
    Fault("no_wildcard_entries", "map pressure",
          doc="1.19+: the agents write no wildcard entry for a ClusterIP or LoadBalancer address (datapath.SRC_WILDCARD says they do)",
          fails=(
              # without the wildcard entry nothing drops a request to a port the VIP does not serve (datapath.SRC_WILDCARD_DROP)
              Fails(tests=("test_each_address_has_its_wildcard_entry_as_the_rule_says",
                           "protocols::test_a_port_the_vip_does_not_serve_is_dropped_and_counted"),
                    says=("*map pressure (wildcard entries, IPv4 maps): 50 of 50 Services in the map have no wildcard entry for their address (<address>:0/ANY) although Cilium 1.20, default-lb-service-ipam lbipam (no file), bpf-lb-enable-wildcard-entries true (no file): the rule says one*",
                          '*protocols on a port (a port the VIP does not serve, from outside): 198.18.23.10:7001, a port the Service does not have, got no answer (timeout) through *, but the agent there counted no "Service backend not found" drop*the VIP\'s wildcard entry did not drop it*')),
          )),
    Fault("map_entries_leak", "map pressure", "a deleted Service's entries stay in the service map (and its frontend in the agent)",
          fails=(
              # a leaked frontend also outlives the shared-VIP suite's deletions, which its model comparisons see
              Fails(fake="lb_map_max=512",
                    tests=("test_cleanup_removes_every_service_and_its_entries",
                           "shared_vip::test_claim_before_release_in_one_window_ends_as_the_model_predicts",
                           "shared_vip::test_generated_upserts_and_deletes_end_as_the_model_predicts",
                           "shared_vip::test_the_release_first_handoff_recovers_a_port_swap"),
                    says="*map pressure (cleanup, IPv4 maps): 0 of the suite's Services still in Kubernetes, * frontends still in the service map (10.96.*"),
          )),
)

#: upsertService's words for E2BIG (datapath.SRC_MAP_FULL)
SERVICE_MAP_FULL = (f"{MAP_FULL_ERROR}: You can resize it with the flag \"--bpf-lb-map-max\". The resizing might break existing "
                    "connections to services")

__all__ = ["FakeBackend", "FakeFrontend", "LbState", "StealingModel"]



class StealingModel(LbModel):
    """A broken control plane (the shared-VIP suite's fault): a claimant silently takes a frontend its
    owner still holds."""

    def _upsert(self, service: str, wanted: tuple[str, ...]) -> bool:
        for addr in wanted:
            fe = self.frontends.get(addr)
            if fe is not None and fe.owner != service:
                owner = self.services.get(fe.owner, ())
                self.services[fe.owner] = tuple(a for a in owner if a != addr)
                del self.frontends[addr]
        return super()._upsert(service, wanted)



def agent_config(cfg: "FakeConfig", node: str = "") -> AgentConfig:
    """The load-balancer settings of the fake's agents (on ``node``) in the control plane's terms (lbcp.AgentConfig): the
    settings Cilium's scripts run with, set from what the fake's agents report in their config map."""
    return _agent_config(cfg.ip_families, cfg.lb_algorithm, cfg.nodeport_mode, cfg.lb_mode_annotation, cfg.lb_source_range_all_types,
                         cfg.lb_wildcard_entries, cfg.default_lb_service_ipam, cfg.service_topology, cfg.lb_map_max, cfg.maglev_seed,
                         cfg.cilium_version, node)


@functools.lru_cache(maxsize=64)
def _agent_config(families: tuple[str, ...], algorithm: str, mode: str, mode_annotation: bool, all_types: bool, wildcards: str | None,
                  ipam: str | None, topology: bool, map_max: int | None, seed: str | None, version: str, node: str) -> AgentConfig:
    minor = tuple(int(x) for x in version.lstrip("v").split(".")[:2]) if version else (1, 20)
    return AgentConfig(node_name=node, enable_ipv4="IPv4" in families, enable_ipv6="IPv6" in families,
                       lb_algorithm="maglev" if algorithm == "Maglev" else "random", lb_mode=mode.lower(), mode_annotation=mode_annotation,
                       source_range_all_types=all_types, wildcard_entries=(wildcards or "true").strip().lower() == "true",
                       default_lb_service_ipam=(ipam or "lbipam").strip(), service_topology=topology,
                       lb_map_max=map_max or LB_MAP_MAX_DEFAULT, maglev_seed=seed or MAGLEV_DEFAULT_SEED,
                       cilium_minor=(minor[0], minor[1]))


#: logical milliseconds per tick of the fake's clock (one API call or exec is one tick)
MS_PER_TICK = 100


class LbState:
    """Allocates stable IDs and computes each node's frontends on demand.

    Which service owns a frontend is decided by :class:`~pytest_kpr.rules.lbmodel.LbModel` (the fake's
    ``lb_variant``): every Service create/update/delete is an event at the fake's clock, coalesced in
    ``lb_window_ticks`` windows, exactly as the model describes Cilium 1.18.
    """

    def __init__(self, cluster: ClusterView):
        self.cluster = cluster
        #: service (= RevNAT) IDs by frontend, as the BPF reconciler hands them out (lbcp.bpf.IdAllocator, id_allocator.go:
        #: the next free ID after the last one handed out, a released one not reused until the IDs wrap)
        self._svc_ids = IdAllocator(1, SERVICE_ID_LIMIT)
        cfg = cluster.cfg
        cls = StealingModel if cfg.lb_variant == "steal" else LbModel
        variant = Variant.REQUEUE if cfg.lb_variant == "requeue" else Variant.CILIUM_1_18
        self.model = cls(variant=variant, window_ms=cfg.lb_window_ticks * MS_PER_TICK)
        #: (service key, addr) -> (type, port spec) as last pushed
        self._spec: dict[tuple[str, str], tuple[str, dict]] = {}
        #: when each backend was first programmed anywhere (self.cluster.clock.monotonic()), for the slow_agent_on fault
        self._born: dict[tuple[str, int], float] = {}
        #: when the late_requeue_s fault re-queues the rejected services (self.cluster.clock.monotonic())
        self._late_due: float | None = None
        self._t0 = self.cluster.clock.monotonic()
        #: backend IDs, likewise (never released: the fake keeps a backend's ID while the run lasts)
        self._be_ids = IdAllocator(1, BACKEND_ID_LIMIT)
        #: every backend a service port ever had (the stale_slots fault keeps them all)
        self._ever: dict[tuple[str, str, str, str], list[FakeBackend]] = {}
        #: the EndpointSlices parsed during the current reading (id -> (slice, backends))
        self._parsed: dict[int, tuple[dict, dict]] = {}
        #: node -> every frontend it ever listed (the map_entries_leak fault)
        self._seen: dict[str, dict[tuple[str, int, str], FakeFrontend]] = {}

    @staticmethod
    def addr(ip: str, port: int, proto: str) -> str:
        return f"{hp(ip, port)}/{proto}"

    def desired(self, svc: dict) -> list[tuple[str, str, dict]]:
        """(addr, type, port) of every frontend a Service asks for, as the agents convert a Service (lbcp.convert_service:
        each ClusterIP, NodePort -- as the zero address of each family --, LoadBalancer VIP of ipMode VIP and externalIP,
        per port and protocol; the service.cilium.io/type exposure; none for a headless Service), external scope only:
        the internal scope of a Service with one Local traffic policy is the same address (``FakeFrontend.internal``).
        The faults change the derived set afterwards."""
        faults = self.cluster.cfg.faults
        body = svc
        if HEADLESS_LABEL in ((svc.get("metadata") or {}).get("labels") or {}) and (
                faults.headless_label_ignored or faults.headless_nodeport_programmed):  # faults: the label ignored (for NodePorts)
            labels = {k: v for k, v in svc["metadata"]["labels"].items() if k != HEADLESS_LABEL}
            body = {**svc, "metadata": {**svc["metadata"], "labels": labels}}
        _, params = convert_service(agent_config(self.cluster.cfg), body, None)
        ports = {(int(p["port"]), p.get("protocol", "TCP")): p for p in svc["spec"].get("ports", [])}
        out, first_proto = [], {}
        for fp in params:
            if fp.address.scope != SCOPE_EXTERNAL:
                continue
            if body is not svc and faults.headless_nodeport_programmed and not faults.headless_label_ignored and fp.type == "ClusterIP":
                continue  # fault: the label honoured for the ClusterIP only
            proto, port = fp.address.proto, ports[(fp.service_port, fp.address.proto)]
            if faults.multi_protocol_collapsed and first_proto.setdefault(fp.service_port, proto) != proto:
                continue  # fault: one frontend per port number, the first protocol's (datapath.SRC_MULTI_PROTOCOL)
            ip, number = str(fp.address.ip), fp.address.port
            if fp.type == "NodePort":
                number += 1 if faults.nodeport_wrong_port else 0  # fault: the wrong port
                if fp.address.is6 and faults.nodeport_v6_missing:
                    continue  # fault: no [::]:<port> frontend
            out.append((self.addr(ip, number, proto), fp.type, port))
        return out

    def now_ms(self) -> float:
        """The LB control plane's clock. Cilium's coalescing window is wall-clock time (``reflectorWaitTime``,
        500 ms: cilium/cilium pkg/loadbalancer/reflectors/k8s.go), so the fake's advances with wall time, and
        also one tick (100 ms) per API call or exec so that tests need not sleep: a suite that waits out a
        window sees it closed, one that polls sees it close after a few calls."""
        return self.cluster.tick * MS_PER_TICK + (self.cluster.clock.monotonic() - self._t0) * 1000.0

    def service_changed(self, key: str, svc: dict | None) -> None:
        at = self.now_ms()
        if svc is None:
            self.model.push(Event(at, Op.DELETE, key))
            late = self.cluster.cfg.faults.late_requeue_s
            if late is not None and self._late_due is None:  # fault: whatever is rejected then is re-queued,
                self._late_due = self.cluster.clock.monotonic() + late  # but only this much after the (first pending) deletion
            return
        wanted = self.desired(svc)
        for addr, typ, port in wanted:
            self._spec[(key, addr)] = (typ, port)
        self.model.push(Event(at, Op.UPSERT, key, tuple(a for a, _, _ in wanted)))

    def backend_id(self, ip: str, port: int, proto: str) -> int:
        """A backend's ID, stable while it exists (lb/maps-dump ``BE: ID=``)."""
        return self._be_ids.acquire((ip, port, proto))

    def renumber(self, family: str | None = None) -> None:
        """The upgrade_renumbers_ids fault: every service and backend ID changes (IDs not restored after a restart);
        with ``family`` (the fault set for one family) only that family's."""
        def moved(ids: IdAllocator) -> IdAllocator:
            out = IdAllocator(ids.first, ids.limit)
            for key, i in ids.by_addr.items():
                out.add(key, i + 100 if family in (None, family_of(key[0])) else i)
            out.next = ids.next + 100
            return out

        self._svc_ids, self._be_ids = moved(self._svc_ids), moved(self._be_ids)

    def _id(self, key: tuple[str, int, str]) -> int:
        return self._svc_ids.acquire(key)

    def backends_of(self, svc: dict, port: dict, family: str = "IPv4", slices: list[dict] | None = None) -> list[FakeBackend]:
        """The backends of a Service port's frontend of ``family``, read from the Service's EndpointSlices as the agent reads
        them (lbcp.parse_endpoint_slice: an endpoint's conditions decide its state; a backend serves the frontends of its
        protocol, family and port name). Only backends that take a slot: active ones, and terminating ones while
        enable-k8s-terminating-endpoint is on (datapath.SRC_TERMINATING_STATE); an endpoint in maintenance (not ready, not
        terminating) or terminating and no longer serving keeps no slot. ``slices``: the Service's, when the caller has them."""
        c = self.cluster
        name = f"{svc['metadata']['namespace']}/{svc['metadata']['name']}"
        keep = terminating_endpoints_kept(c.cfg.k8s_terminating_endpoint)
        cfg = agent_config(c.cfg)
        bes: list[FakeBackend] = []
        seen: set[tuple[str, int]] = set()
        for es in (c.endpointslices(svc) if slices is None else slices):
            if es.get("addressType") != family:
                continue
            pods = {a: (ep.get("targetRef") or {}).get("name", "") for ep in es.get("endpoints") or [] for a in ep.get("addresses") or []}
            parsed = self._parsed.get(id(es))
            if parsed is None or parsed[0] is not es:  # once per slice and reading (a reading's slices are kept alive by it)
                parsed = self._parsed[id(es)] = (es, parse_endpoint_slice(cfg, name, es))
            for addr, be in parsed[1].items():
                if not backend_matches(be, port.get("protocol", "TCP"), family == "IPv6", port.get("name", "")):
                    continue
                state = be.state  # lbcp's states: active, terminating, terminating-not-serving, maintenance
                ip = str(addr.ip)
                if (state in (TERMINATING, TERMINATING_NOT_SERVING) and not keep) or (ip, addr.port) in seen:
                    continue
                seen.add((ip, addr.port))
                bes.append(FakeBackend(ip, addr.port, be.node_name, pods.get(ip, ""), state, be.for_zones))
        # the slots in the reconciler's order (lbcp.bpf.slot_order: active first, then by address and port)
        bes.sort(key=lambda b: slot_order(L3n4(ip_of(b.ip), b.port, port.get("protocol", "TCP")), b.state))
        if c.cfg.faults.stale_slots:  # fault: backends removed by scaling down stay in the slots
            key = (svc["metadata"]["namespace"], svc["metadata"]["name"], port.get("name", ""), family)
            ever = self._ever.setdefault(key, [])
            ever += [b for b in bes if b not in ever]
            live_pods = {p["metadata"]["name"] for p in c.pods()}
            bes = bes + [b for b in ever if b not in bes and b.pod not in live_pods]
        cap = c.cfg.faults.slots_cap
        return bes[:cap] if cap is not None else bes

    def frontends(self, node: str) -> list[FakeFrontend]:
        """The frontends the agent on ``node`` has programmed, sorted by ID."""
        c = self.cluster
        self.model.advance(self.now_ms())
        if self._late_due is not None and self.cluster.clock.monotonic() >= self._late_due:
            due_ms = self.now_ms() - (self.cluster.clock.monotonic() - self._late_due) * 1000.0  # when it was due, not when read
            self._late_due = None
            for service, (wanted, _) in list(self.model.rejected.items()):
                self.model.push(Event(due_ms, Op.UPSERT, service, wanted))
            self.model.advance(self.now_ms())
        out: list[FakeFrontend] = []
        self._parsed = {}
        node_ip = c.node_ip(node)
        services = {f"{s['metadata']['namespace']}/{s['metadata']['name']}": s for s in c.services()}
        selected: dict[str, list[dict]] = {}  # a Service's EndpointSlices, once per reading: its frontends share them
        converted: dict[str, tuple[Service | None, list[FrontendParams]]] = {}  # the Service as this node's agent converts it
        labels = c.node_labels(node)
        cfg = agent_config(c.cfg, node)
        for addr, state in sorted(self.model.frontends.items()):
            svc = services.get(state.owner)
            # datapath.SRC_NODE_EXPOSURE: an annotated Service is installed only on the nodes it selects (the fault: everywhere)
            annotations = ((svc or {}).get("metadata") or {}).get("annotations") or {}
            exposed = service_exposed_on(annotations, labels)
            if svc is not None and annotations and c.cfg.faults.node_exposure_inverted and any(
                    k.startswith("service.cilium.io/node") for k in annotations):
                exposed = not exposed  # fault: installed exactly where it is not exposed
            if svc is not None and not exposed and not c.cfg.faults.node_exposure_ignored:
                continue
            typ, port = self._spec[(state.owner, addr)]
            hostport, proto = addr.rsplit("/", 1)
            ip, p = split_host_port(hostport) or ("", 0)
            if svc is not None and state.owner not in selected:
                selected[state.owner] = c.endpointslices(svc)
            bes = self.backends_of(svc, port, family_of(ip), selected[state.owner]) if svc is not None else []
            if node == c.cfg.faults.backend_missing_on and len(bes) > 2:  # fault: this agent lacks one backend
                bes = bes[:-1]
            if c.cfg.faults.backend6_missing and family_of(ip) == "IPv6" and len(bes) > 2:  # fault: IPv6 frontends lack one
                bes = bes[:-1]
            if node == c.cfg.faults.slow_agent_on:  # fault: this agent programs new backends late
                now = self.cluster.clock.monotonic()
                bes = [b for b in bes if now - self._born.setdefault((b.ip, b.port), now) >= c.cfg.faults.slow_agent_s]
            status = "Done" if state.status == "done" else "Pending"
            if svc is not None and state.owner not in converted:
                converted[state.owner] = convert_service(cfg, svc, None)  # exposure: above, where its faults are
            lsvc, params = converted.get(state.owner, (None, []))
            internal = None
            spec = svc["spec"] if svc is not None else {}
            faults = c.cfg.faults
            if lsvc is not None:
                lsvc = self._configured(lsvc)
                scopes = {fp.address.scope for fp in params if fp.type == typ and fp.address.proto == proto
                          and fp.service_port == int(port["port"]) and str(fp.address.ip) in (ip, NODEPORT_WILDCARD[family_of(ip)])}
                bes, internal = self._selected(lsvc, typ, ip, int(p), proto, bes, node, labels, SCOPE_INTERNAL in scopes)
            if typ == "ClusterIP":
                bes = self._redirected(svc, port, bes, node, family_of(ip))
            timeout = lsvc.affinity_timeout if lsvc is not None and lsvc.session_affinity else 0
            ranges = lsvc.source_ranges if lsvc is not None else ()
            maintenance = [b for b in bes if b.state == MAINTENANCE]  # a backend entry, no slot (datapath.SRC_STARTING_NO_SLOT)
            bes, draining = selectable(bes, faults, family_of(ip))
            internal_draining: list[FakeBackend] = []
            if internal is not None:
                internal, internal_draining = selectable([b for b in internal if b.state != MAINTENANCE], faults, family_of(ip))
            out.append(FakeFrontend(ip, int(p), proto, typ, state.owner, port.get("name", ""), list(bes), status=status, internal=internal,
                                    draining=list(draining), lb_class=spec.get("loadBalancerClass"),
                                    flags=self._flags(cfg, lsvc, typ, ip, int(p), proto), affinity_timeout=timeout,
                                    source_ranges=ranges, maintenance=maintenance, internal_draining=internal_draining))
            if ip in NODEPORT_WILDCARD.values():  # a NodePort's frontend on the node's own address of that family
                own = node_ip if ip == "0.0.0.0" else c.node_ip6(node)
                out.append(FakeFrontend(own, int(p), proto, typ, state.owner, port.get("name", ""), list(bes), status=status,
                                        internal=internal, draining=list(draining), flags=self._flags(cfg, lsvc, typ, own, int(p), proto),
                                        affinity_timeout=timeout, source_ranges=ranges, maintenance=maintenance,
                                        internal_draining=internal_draining))
        out += self.hostport_frontends(node)
        for fe in out:
            fe.id = self._id(fe.key)
            if fe.internal is not None:  # the internal scope's frontend has an ID of its own (lbcp: `<addr>/i`)
                fe.internal_id = self._id(fe.internal_key)
        out = self._leaks(node, out)
        # a deleted frontend frees its ID; a NodePort's per-node frontend (<node IP>:port) lives while its 0.0.0.0 one does,
        # whichever node's agent is being read
        live = {fe.key for fe in out} | {fe.internal_key for fe in out if fe.internal_id}
        wildcard = {(p, proto) for ip, p, proto in live if ip in NODEPORT_WILDCARD.values()}
        node_ips = set(c.node_addresses())
        for key in [k for k in self._svc_ids.by_addr if k not in live and not (k[0] in node_ips and (k[1], k[2]) in wildcard)]:
            self._svc_ids.release(key)
        return self._fit(sorted(out, key=lambda f: f.id))

    def _configured(self, lsvc: Service) -> Service:
        """The Service as agents of this configuration hold it: with enable-internal-traffic-policy off, its
        internalTrafficPolicy is not honoured (datapath.SRC_ITP_ENABLED)."""
        if lsvc.int_policy == "Local" and not itp_enabled(self.cluster.cfg.enable_internal_traffic_policy, self.cluster.cfg.cilium_version):
            return replace(lsvc, int_policy="Cluster")
        return lsvc

    @staticmethod
    def _flags(cfg: AgentConfig, lsvc: Service | None, typ: str, ip: str, port: int, proto: str) -> int:
        """The frontend's ServiceFlags as the agent writes them (lbcp.bpf.master_flags)."""
        if lsvc is None:
            return svc_flags(typ, routable=typ != "ClusterIP" and ip not in NODEPORT_WILDCARD.values())
        return master_flags(cfg, Frontend(FrontendParams(L3n4(ip_of(ip), port, proto), typ, lsvc.name), lsvc))

    def _selected(self, lsvc: Service, typ: str, ip: str, port: int, proto: str, bes: list[FakeBackend], node: str,
                  labels: dict[str, str], two_scopes: bool) -> tuple[list[FakeBackend], list[FakeBackend] | None]:
        """(the external scope's backends, the internal scope's when the frontend has two) as this node's agent selects them
        (lbcp.select_backends, Cilium's writer: the protocol and family, the traffic policy of the scope -- iTP=Local the
        internal scope and a ClusterIP's only one, eTP=Local the external scope -- and, under enable-service-topology, the
        Service's trafficDistribution over the EndpointSlice hints). The faults change the Service the agent selects for."""
        c, faults, family = self.cluster, self.cluster.cfg.faults, family_of(ip)
        svc = replace(lsvc)
        if typ != "ClusterIP" and (faults.etp_local_ignored or (faults.vip_etp_local_ignored and typ == "LoadBalancer")):
            svc.ext_policy = "Cluster"  # faults: the external scope keeps every backend
        if typ == "ClusterIP" and lsvc.ext_policy == "Local" and faults.etp_breaks_cluster_ip:
            svc.int_policy = "Local"  # fault: the ClusterIP too is served from local backends only
        if typ == "ClusterIP" and faults.on("itp_local_ignored", family):
            svc.int_policy = "Cluster"  # fault: the (family's) ClusterIP keeps every backend
        if faults.topology_ignored or (faults.zone_hints_ignored and svc.traffic_distribution != "PreferSameNode"):
            svc.traffic_distribution = ""  # faults: trafficDistribution (or its zone hints) not honoured
        by_addr = {(b.ip, b.port): b for b in bes}
        params = [BackendParams(svc.name, L3n4(ip_of(b.ip), b.port, proto), (), node_name=b.node, for_zones=b.zones,
                                state=b.state) for b in bes]

        def pick(scope: int) -> list[FakeBackend]:
            fe = Frontend(FrontendParams(L3n4(ip_of(ip), port, proto, scope), typ, svc.name), svc)
            chosen = [by_addr[(str(be.address.ip), be.address.port)] for be in select_backends(agent_config(c.cfg, node), labels, params, svc, fe)]
            if faults.same_node_no_fallback and svc.traffic_distribution == "PreferSameNode" and not any(b.node == node for b in bes):
                return []  # fault: no fallback to every backend
            return chosen

        external = pick(SCOPE_EXTERNAL)
        internal = pick(SCOPE_INTERNAL) if two_scopes else None
        if internal is not None and faults.itp_narrows_external and svc.int_policy == "Local":
            external = list(internal)  # fault: outside traffic too is served from local backends only
        return external, internal

    def _redirected(self, svc: dict | None, port: dict, bes: list[FakeBackend], node: str, family: str) -> list[FakeBackend]:
        """A ServiceMatcher CiliumLocalRedirectPolicy on the Service (where the agents honour them, datapath.SRC_LRP): its
        ClusterIP is served by the policy's selected pods on this node only (the fault: the policy is ignored)."""
        c = self.cluster
        if svc is None or not c.cfg.local_redirect_policy or c.cfg.faults.lrp_ignored:
            return bes
        md = svc["metadata"]
        for lrp in c.local_redirect_policies():
            spec = lrp.get("spec") or {}
            matcher = (spec.get("redirectFrontend") or {}).get("serviceMatcher") or {}
            if lrp["metadata"].get("namespace") != md["namespace"] or matcher.get("serviceName") != md["name"] \
                    or matcher.get("namespace", md["namespace"]) != md["namespace"]:
                continue
            backend = spec.get("redirectBackend") or {}
            wanted = ((backend.get("localEndpointSelector") or {}).get("matchLabels") or {})
            to_port = int(((backend.get("toPorts") or [{}])[0]).get("port") or port.get("targetPort") or port["port"])
            pods = [p for p in c.pods(md["namespace"]) if c.pod_ready(p)
                    and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in wanted.items())]
            local = [FakeBackend(ip, to_port, p["spec"]["nodeName"], p["metadata"]["name"]) for p in pods
                     if (ip := pod_ip(p, family))]
            return lrp_backends(local, node)
        return bes

    def capacity(self) -> int:
        cfg = self.cluster.cfg
        return cfg.faults.service_map_capacity or cfg.lb_map_max or LB_MAP_MAX_DEFAULT

    def rev_nat_capacity(self) -> int:
        cfg = self.cluster.cfg
        return cfg.faults.rev_nat_map_capacity or cfg.lb_rev_nat_map_max or cfg.lb_map_max or LB_MAP_MAX_DEFAULT

    def _fit(self, fes: list[FakeFrontend]) -> list[FakeFrontend]:
        """Frontends in the order they were reconciled (by ID) are written as bpf_reconciler.go updateFrontend writes them
        (datapath.SRC_MAP_FULL): the backend slots, then the reverse-NAT entry, then the master entry; the first write that
        does not fit ends the frontend with that map's error (the map_full_silent fault hides it). What was written before
        stays: a frontend whose master did not fit still holds its reverse-NAT entry. Each family has its own maps of the
        same sizes (datapath.SRC_MAP_FAMILY). From 1.19, after the master, the first ClusterIP or LoadBalancer frontend of
        an address writes that address's wildcard entry (datapath.SRC_WILDCARD); when it does not fit, the frontend keeps
        its master and shows the error."""
        cfg = self.cluster.cfg
        node_ips = set(self.cluster.node_addresses())
        wildcards: set[str] = set()  # addresses whose wildcard entry is written
        rooms = {f: [self.capacity(), self.rev_nat_capacity()] for f in REV_NAT_MAP_NAME}
        if self.cluster.cfg.faults.service6_map_capacity is not None:  # fault: the lb6 service map alone is smaller
            rooms["IPv6"][0] = self.cluster.cfg.faults.service6_map_capacity
        for fe in fes:
            family = family_of(fe.ip)
            room = rooms[family]  # [service entries, reverse-NAT entries] left in this family's maps
            master = f"{{Address:{fe.ip} Port:{fe.port} BackendSlot:0 Scope:0}} => {{BackendID:0 Count:{len(fe.backends)} RevNat:{fe.id}}}"
            if len(fe.backends) > room[0]:
                fe.in_map = fe.rev_in_map = fe.slots_in_map = False
                err = f"upsert service: Unable to update service entry {master}: {SERVICE_MAP_FULL}"
            else:
                room[0] -= len(fe.backends)
                if room[1] < 1:
                    fe.in_map = fe.rev_in_map = False
                    # the format of upsertRevNat; the wrapped map error's own words are the kernel's E2BIG
                    err = (f"upsert reverse nat: {REV_NAT_FULL_ERROR} {{Key:{fe.id}}} => {{Address:{fe.ip} Port:{fe.port}}}: "
                           f"update map {REV_NAT_MAP_NAME[family]}: argument list too long")
                else:
                    room[1] -= 1
                    if room[0] < 1:
                        fe.in_map = False
                        err = f"upsert service master: Unable to update service entry {master}: {SERVICE_MAP_FULL}"
                    else:
                        room[0] -= 1
                        if fe.ip in wildcards or cfg.faults.no_wildcard_entries or not wildcard_entry(
                                cfg.cilium_version, fe.type, fe.lb_class, cfg.default_lb_service_ipam, cfg.lb_wildcard_entries,
                                fe.ip in node_ips):
                            continue
                        if room[0] >= 1:
                            room[0] -= 1
                            wildcards.add(fe.ip)
                            fe.wildcard_in_map = True
                            continue
                        wild = f"{{Address:{fe.ip} Port:0 BackendSlot:0 Scope:0}} => {{BackendID:0 Count:0 RevNat:0}}"
                        err = f"upsert wildcard: Unable to update service entry {wild}: {SERVICE_MAP_FULL}"
            if not self.cluster.cfg.faults.map_full_silent:
                fe.status, fe.error = "Error", err
        return fes

    def _leaks(self, node: str, out: list[FakeFrontend]) -> list[FakeFrontend]:
        """The map_entries_leak fault: frontends of deleted Services stay (in the map and in the agent's lists)."""
        if not self.cluster.cfg.faults.map_entries_leak:
            return out
        seen = self._seen.setdefault(node, {})
        live = {fe.key for fe in out}
        gone = [fe for key, fe in seen.items() if key not in live]
        for fe in out:
            seen[fe.key] = fe
        return out + gone

    def hostport_frontends(self, node: str) -> list[FakeFrontend]:
        """HostPort frontends of the running pods on ``node``, per family of the pod's addresses: the zero address
        (``0.0.0.0:<hostPort>``, ``[::]:<hostPort>``, the same as a NodePort's) and ``<node IP>:<hostPort>``, on that
        node's agent only (datapath.SRC_HOSTPORT). The hostport_unserved fault leaves them out (nothing serves the port in that family)."""
        c = self.cluster
        cfg = agent_config(c.cfg, node)
        out = []
        for pod in c.pods():
            if pod["spec"].get("nodeName") != node or pod["spec"].get("hostNetwork") or not c.pod_ready(pod):
                continue
            for ctr in pod["spec"].get("containers") or []:
                for cp in ctr.get("ports") or []:
                    if not cp.get("hostPort"):
                        continue
                    proto = cp.get("protocol", "TCP")
                    owner = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}:host-port:{cp['hostPort']}"
                    # a frontend per family the pod has an address of (datapath.SRC_HOSTPORT_FAMILIES)
                    for family in ("IPv4", "IPv6"):
                        pod_addr = pod_ip(pod, family)
                        if pod_addr is None or c.cfg.faults.on("hostport_unserved", family):  # fault: none of the family
                            continue
                        be = FakeBackend(pod_addr, int(cp["containerPort"]), node, pod["metadata"]["name"])
                        for ip in (NODEPORT_WILDCARD[family], c.node_ip_of(node, family)):
                            out.append(FakeFrontend(ip, int(cp["hostPort"]), proto, "HostPort", owner, "", [be],
                                                    flags=self._flags(cfg, Service(owner), "HostPort", ip, int(cp["hostPort"]), proto)))
        return out

    def find(self, node: str, ip: str, port: int, proto: str = "TCP") -> FakeFrontend | None:
        """The frontend the datapath finds: one that has its entry in the service map."""
        for fe in self.frontends(node):
            if fe.key == (ip, port, proto) and fe.in_map:
                return fe
        return None


def selectable(backends: list[FakeBackend], faults: Faults, family: str = "IPv4") -> tuple[list[FakeBackend], list[FakeBackend]]:
    """(the backends new connections may pick, the ones that only keep their slots), by the reconciler's rule
    (datapath.SRC_TERMINATING_SLOTS): active ones while any exists, else the terminating ones; a terminating backend no
    longer serving only keeps its slot; one in maintenance has none (SRC_STARTING_NO_SLOT). Faults: terminating_selected (terminating backends
    stay selectable beside active ones, on the frontends of the family it is set for), terminating_never_used (never
    selectable)."""
    active = [b for b in backends if b.state == ACTIVE]
    terminating = [b for b in backends if b.state == TERMINATING]
    not_serving = [b for b in backends if b.state == TERMINATING_NOT_SERVING]
    if faults.terminating_never_used:
        return active, terminating + not_serving
    if faults.on("terminating_selected", family):
        return active + terminating, not_serving
    picked = new_connection_backends(active, terminating)
    return picked, [b for b in terminating if b not in picked] + not_serving
