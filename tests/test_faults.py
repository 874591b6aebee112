"""A fault per claim: for every suite on the documentation's suites page and every figure in the evidence files,
the fake can produce that one wrong behaviour, and the suites then fail exactly the tests that check it,
with words that name the property. Every other test passes.

Each row: its name, the suites its property lives in, the fake's configuration, the exact set of tests that must fail
(``module::test[param]``), and a line pattern (fnmatch) of each failure's message. Rows share runs: the rows of a
group (same configuration but for the faults, no declared suite in common) run the suites they declare once, together,
and each failure is the row's that declares its suite. Whether a fault reaches further is the `reach` tier's question
(make test-reach, in CI): each group's faults under every suite none of its rows declares, where any failure is an
error naming the row that reached it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import pytest
from test_suites_vs_fake import SUITES, failure_blocks, run_suites, shared_run

NB = "test_no_backend.py::"
IPT = "test_iptables.py::"
NP = "test_nodeport.py::"
KP = "test_kube_proxy.py::"
AFF = "test_affinity.py::"
SL = "test_socket_lb.py::"
BS = "test_backend_slots.py::"
SV = "test_shared_vip.py::"
ETP = "test_etp.py::"
HP = "test_hostport.py::"
DSR = "test_dsr.py::"
MAG = "test_maglev.py::"
MAPS = "test_maps.py::"
KPI = "test_kube_proxy_installed.py::"
UDP = "test_udp.py::"
ITP = "test_itp.py::"
TERM = "test_terminating.py::"
HL = "test_headless.py::"
HP_ = "test_hairpin.py::"

FAULTS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    # -- iptables -------------------------------------------------------------------------------------
    ("kube-proxy-iptables-nft", ("iptables", "kube_proxy_installed"), "faults=Faults(kube_proxy_rules='nft')",
     {IPT + "test_no_node_has_kube_proxy_service_rules", IPT + "test_no_rule_names_the_web_cluster_ip"},
     ["*iptables: kube-proxy's service rules are on the nodes*fake-worker (iptables-nft): kube-proxy chains {*'KUBE-SERVICES'*'KUBE-SVC'*'KUBE-SEP'*",
      "*iptables: rules name web's ClusterIP 10.96.*so something other than BPF translates it*"]),
    ("kube-proxy-iptables-legacy", ("iptables", "kube_proxy_installed"), "faults=Faults(kube_proxy_rules='legacy')",
     {IPT + "test_no_node_has_kube_proxy_service_rules", IPT + "test_no_rule_names_the_web_cluster_ip"},
     ["*iptables: kube-proxy's service rules are on the nodes*(iptables-legacy): kube-proxy chains*"]),
    ("only-kube-sep", ("iptables", "kube_proxy_installed"), "faults=Faults(kube_proxy_rules='sep-only')",
     {IPT + "test_no_node_has_kube_proxy_service_rules"},
     ["*iptables: kube-proxy's service rules are on the nodes*kube-proxy chains {'KUBE-SEP': *"]),
    ("kube-proxy-nodeport-chain", ("iptables", "kube_proxy_installed", "nodeport"), "faults=Faults(kube_proxy_rules='nodeports')",
     {IPT + "test_no_node_has_kube_proxy_service_rules", NP + "test_no_rule_names_the_nodeport"},
     ["*kube-proxy chains {'KUBE-NODEPORTS': *", "*NodePort: rules name the port*lines name the NodePort 30780*"]),
    ("kube-proxy-nftables-mode", ("iptables", "kube_proxy_installed", "nodeport"), "faults=Faults(kube_proxy_rules='nftables')",
     {IPT + "test_no_node_has_kube_proxy_service_rules", IPT + "test_no_rule_names_the_web_cluster_ip", NP + "test_no_rule_names_the_nodeport"},
     ["*(nft): kube-proxy's nftables table [[]'ip kube-proxy'[]] with * chains*", "*fake-worker (nft): * lines name web's ClusterIP*"]),
    # IPv6: kube-proxy programs an IPv6 Service into ip6tables (the nft family ip6 when iptables-nft), where an IPv4-only
    # reading would never look
    ("kube-proxy-ip6tables-nft", ("iptables", "kube_proxy_installed"), "faults=Faults(kube_proxy_rules_v6='nft')", {IPT + "test_no_node_has_kube_proxy_service_rules"},
     ["*iptables: kube-proxy's service rules are on the nodes*fake-control-plane (ip6tables-nft): kube-proxy chains {'KUBE-SERVICES': *"
      "fake-control-plane (nft): kube-proxy chains*"]),
    ("kube-proxy-ip6tables-legacy", ("iptables", "kube_proxy_installed"), "faults=Faults(kube_proxy_rules_v6='legacy')", {IPT + "test_no_node_has_kube_proxy_service_rules"},
     ["*iptables: kube-proxy's service rules are on the nodes*fake-control-plane (ip6tables-legacy): kube-proxy chains {'KUBE-SERVICES': *"]),
    ("unreadable-ip6tables-view", ("hostport", "iptables", "nodeport"), "faults=Faults(unreadable_rule_view='ip6tables-legacy')",
     {IPT + "test_every_node_can_be_read_in_each_rule_view", NP + "test_no_rule_names_the_nodeport", HP + "test_no_rule_names_the_host_port"},
     ["*iptables: the rule views are not all readable*fake-worker: the ip6tables-legacy view could not be read*"]),
    # -- session affinity --------------------------------------------------------------------------------
    ("affinity-ignored", ("affinity",), "faults=Faults(affinity_ignored=True)", {AFF + "test_a_client_stays_on_one_backend_with_session_affinity"},
     ["*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends * despite sessionAffinity ClientIP*"]),
    ("affinity-no-timeout", ("affinity",), "faults=Faults(affinity_no_timeout=True)", {AFF + "test_the_affinity_expires_after_its_timeout"},
     ["*affinity (timeoutSeconds 1): all 10 connections, 2.5 s apart (past the 1 s timeout), reached *: the affinity never expired (chance if it does: 3.8e-06)*"]),
    ("lb-always-first", ("affinity",), "faults=Faults(lb_always_first=True)", {AFF + "test_without_affinity_connections_spread_over_the_backends",
                                                                  AFF + "test_the_affinity_expires_after_its_timeout"},
     ["*affinity (none): all 20 connections without affinity reached * of 4 backends (chance: 3.6e-12)*"]),
    # -- externalTrafficPolicy=Local ---------------------------------------------------------------------
    ("etp-local-ignored", ("etp",), "faults=Faults(etp_local_ignored=True)", {ETP + "test_only_the_node_with_a_local_backend_serves_it_from_outside"},
     ["*eTP=Local (from outside): fake-control-plane, which has no local backend, served it from outside (accepted)*"]),
    ("etp-snat", ("etp",), "faults=Faults(etp_snat=True)", {ETP + "test_the_backend_sees_the_clients_own_address"},
     ["*eTP=Local (client address): the backend saw 172.18.0.4 (the receiving node's InternalIP), expected 172.18.0.1 (the client*"]),
    ("etp-breaks-cluster-ip", ("etp",), "faults=Faults(etp_breaks_cluster_ip=True)", {ETP + "test_in_cluster_cluster_ip_access_is_unaffected"},
     ["*eTP=Local (ClusterIP from a pod on fake-worker, which has no local backend): unreachable*"]),
    ("healthcheck-cluster-count", ("etp",), "faults=Faults(healthcheck_cluster_count=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints"},
     ["*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP 200 with localEndpoints 1, expected 503 with 0 (its own backends' addresses and ports)*"]),
    # -- internalTrafficPolicy=Local ---------------------------------------------------------------------
    ("itp-local-ignored", ("itp",), "faults=Faults(itp_local_ignored=True)",
     {ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): "
      "another node's backend, as if internalTrafficPolicy were Cluster*",
      "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; "
      "socket plane, ServiceNoBackendResponse=reject): connect() gave connected after *; expected unreachable at once*"]),
    # from 1.19 internalTrafficPolicy is always honoured: a leftover enable-internal-traffic-policy=false does not make the
    # suite skip, so an agent that ignores the policy fails it (datapath.SRC_ITP_ALWAYS)
    ("itp-ignored-beside-a-leftover-option", ("itp",), "enable_internal_traffic_policy='false', faults=Faults(itp_local_ignored=True)",
     {ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): "
      "another node's backend, as if internalTrafficPolicy were Cluster*"]),
    ("itp-no-local-drops", ("itp",), "faults=Faults(itp_no_local_drops=True)",
     {ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; "
      "socket plane, ServiceNoBackendResponse=reject): connect() gave timeout after 2.00s; expected unreachable at once (under 1s)*"]),
    ("itp-narrows-external", ("itp",), "faults=Faults(itp_narrows_external=True)", {ITP + "test_traffic_from_outside_is_unaffected"},
     ["*iTP=Local (from outside): a raw SYN from outside to 172.18.0.3:*, which has no local backend, got icmp-unreachable; "
      "internalTrafficPolicy must not apply to traffic from outside (externalTrafficPolicy Cluster: the backend on fake-worker2 serves it)*"]),
    # -- terminating backends ----------------------------------------------------------------------------
    ("terminating-selected", ("terminating",), "faults=Faults(terminating_selected=True)",
     {TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists"},
     ["*terminating backends (new connections): while term-a terminates: * of 20 new connections reached term-a, which should not be picked*"]),
    ("terminating-cuts-connections", ("terminating",), "faults=Faults(terminating_cuts_connections=True)",
     {TERM + "test_an_established_connection_keeps_working_while_its_backend_terminates"},
     ["*terminating backends (established connection): the established connection to term-a was interrupted while it terminated: "
      "1 resets, 1 reconnects*"]),
    ("terminating-stalls-connections", ("terminating",), "faults=Faults(terminating_stalls_connections=True)",
     {TERM + "test_an_established_connection_keeps_working_while_its_backend_terminates"},
     ["*terminating backends (established connection): the established connection to term-a went silent for 3000 ms while it "
      "terminated (bound 1000 ms)*"]),
    ("terminating-never-used", ("terminating",), "faults=Faults(terminating_never_used=True)",
     {TERM + "test_when_only_terminating_backends_remain_new_connections_follow_the_rule"},
     ["*terminating backends (only terminating): with only terminating backends: 20 of 20 new connections failed although term-a, "
      "term-b are there to serve them*"]),
    # -- hostPort ----------------------------------------------------------------------------------------
    # -- headless ------------------------------------------------------------------------------------------------
    ("headless-label-ignored", ("headless",), "faults=Faults(headless_label_ignored=True)",
     {HL + "test_a_clusterip_service_labelled_headless_gets_no_frontend", HL + "test_a_nodeport_service_labelled_headless_gets_no_nodeport"},
     ["*headless (ClusterIP): fake-* lists 1 frontend for kpr-suite-headless-*/hl-clusterip, a ClusterIP Service labelled "
      "service.kubernetes.io/headless: 10.96.*:80/TCP ClusterIP*",
      "*headless (NodePort): fake-* lists * frontends for kpr-suite-headless-*/hl-nodeport, a NodePort Service labelled "
      "service.kubernetes.io/headless: *"]),
    ("headless-nodeport-programmed", ("headless",), "faults=Faults(headless_nodeport_programmed=True)",
     {HL + "test_a_nodeport_service_labelled_headless_gets_no_nodeport"},
     ["*headless (NodePort): fake-* lists 2 frontends for kpr-suite-headless-*/hl-nodeport, a NodePort Service labelled "
      "service.kubernetes.io/headless: 0.0.0.0:3*/TCP NodePort*"]),
    ("hostport-unserved", ("hostport",), "faults=Faults(hostport_unserved=True)",
     {HP + "test_the_host_port_answers_on_the_nodes_address", HP + "test_the_agent_lists_a_host_port_frontend"},
     ["*hostPort: 172.18.0.3:18780 from the node: connect refused, HTTP 0 (curl exit 7)*",
      "*hostPort: on fake-worker: the agent lists no IPv4 HostPort frontend on port 18780*"]),
    ("hostport-portmap", ("hostport",), "faults=Faults(hostport_portmap=True)", {HP + "test_no_rule_names_the_host_port"},
     ["*hostPort: rules name the port, so portmap (not BPF) serves it: fake-worker (iptables-nft): 2 lines name the hostPort 18780*CNI-HOSTPORT-DNAT*"]),
    ("hostport-listener", ("hostport",), "faults=Faults(hostport_listener=True)", {HP + "test_nobody_listens_on_the_host_port"},
     ["*hostPort: 1 sockets listen on :18780 on the node ([[]'0.0.0.0:18780'[]]); the answer must come from BPF, not a process*"]),
    ("hostport-double-admit", ("hostport",), "faults=Faults(hostport_double_admit=True)", {HP + "test_a_second_pod_is_not_admitted_on_the_same_host_port"},
     ["*hostPort: a second pod asking for the same hostPort was admitted on fake-worker (Running): two pods hold one port*"]),
    # -- NodePort forwarding mode -------------------------------------------------------------------------
    ("snat-reported-client-seen", ("dsr",), "faults=Faults(nodeport_mode_mismatch=True)", {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw 172.18.0.1 (the client's address), expected "
      "10.244.1.118 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*"]),
    ("dsr-reported-node-seen", ("dsr",), "nodeport_mode='DSR', routing_mode='Native', faults=Faults(nodeport_mode_mismatch=True)",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode DSR, routing Native): the backend saw 172.18.0.3 (the receiving node's InternalIP), "
      "expected 172.18.0.1 (the client: DSR*"]),
    # the SNAT source address (bpf/lib/nodeport.h tail_nodeport_nat_egress_ipv4): IPV4_GATEWAY in tunnel routing, the node's
    # direct-routing address in native routing
    ("snat-internal-ip-in-tunnel-mode", ("dsr",), "faults=Faults(snat_address_swapped=True)",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw 172.18.0.3 (the receiving node's InternalIP), "
      "expected 10.244.1.118 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*"]),
    ("snat-cilium-internal-ip-in-native-mode", ("dsr",), "routing_mode='Native', faults=Faults(snat_address_swapped=True)",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Native): the backend saw 10.244.1.118 (the receiving node's "
      "CiliumInternalIP), expected 172.18.0.3 (the receiving node's InternalIP: SNAT mode in native routing*"]),
    # -- Maglev (the agent reports Maglev) ------------------------------------------------------------------
    ("maglev-ignored", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_ignored=True)",
     {MAG + "test_a_flow_reaches_the_same_backend_through_every_node", MAG + "test_removing_a_backend_moves_only_its_flows"},
     ["*Maglev (the same IPv4 flow through different nodes): * of 24 flows did not reach one backend through fake-control-plane and fake-worker*",
      "*Maglev (after deleting mag-*, IPv4 flows sent through fake-worker2): * of * flows on the surviving backends moved (*; allowed 1)*"]),
    ("maglev-seed-per-node", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_seed_per_node=True)",
     {MAG + "test_every_agent_uses_the_same_hash_seed", MAG + "test_a_flow_reaches_the_same_backend_through_every_node",
      MAG + "test_removing_a_backend_moves_only_its_flows"},
     ["*Maglev (/tmp/cilium/config-map/bpf-lb-maglev-hash-seed): the agents use 3 different hash seeds: *"]),
    ("maglev-no-table", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_no_table=True)",
     {MAG + "test_every_agent_has_a_balanced_table_over_the_backends", MAG + "test_a_flow_reaches_the_same_backend_through_every_node",
      MAG + "test_removing_a_backend_moves_only_its_flows"},
     ["*Maglev (lb/maps-dump tables, IPv4): fake-control-plane has no Maglev table for its NodePort frontend*"]),
    ("maglev-cluster-ip", ("maglev",), "lb_algorithm='Maglev', faults=Faults(maglev_cluster_ip=True)", {MAG + "test_cluster_ip_traffic_is_not_maglevd"},
     ["*Maglev (ClusterIP, IPv4): the ClusterIP frontend has a Maglev table on fake-control-plane, fake-worker, fake-worker2*"]),
    # -- map pressure ------------------------------------------------------------------------------------------
    # each suite's Services are gone when the next one runs (plugin.fixtures.lab), so the map-pressure suite meets its own: its
    # 20 Services take 40 service entries (a master and, 1.19+, a wildcard entry: datapath.SRC_WILDCARD) and 20 reverse-NAT
    # entries; a service map of 30 and a reverse-NAT map of 15 leave some of them out
    ("service-map-full-unexpectedly", ("maps",), "faults=Faults(service_map_capacity=90)", {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps"},
     ["*map pressure (IPv4 maps): service map full (90 of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the BPF maps (mp-*"]),
    # the reverse-NAT entry is written before the master (bpf_reconciler.go updateFrontend): that map can fill first
    ("rev-nat-map-full-unexpectedly", ("maps",), "faults=Faults(rev_nat_map_capacity=40)", {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps"},
     ["*map pressure (IPv4 maps): reverse-NAT map full (* of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the BPF maps*"]),
    ("rev-nat-map-full-silent", ("maps",), "lb_map_max=512, lb_rev_nat_map_max=200, faults=Faults(map_full_silent=True)", {MAPS + "test_a_full_map_is_not_silent"},
     ["*map pressure (how the agent shows a full IPv4 map): * of * Services missing from the map show no error for it (e.g. mp-*: status Done, "
      "error None; expected Error with 'Unable to update element for LB bpf map' (service map full) or 'Unable to update reverse NAT' "
      "(reverse-NAT map full))*the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled*"]),
    ("map-larger-than-reported", ("maps",), "lb_map_max=512, faults=Faults(rev_nat_map_capacity=100000, service_map_capacity=100000)",
     {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps"},
     ["*map pressure (IPv4 maps): 528 Services for a service map of 512 entries (/tmp/cilium/config-map/bpf-lb-map-max), yet none is missing*"]),
    ("no-wildcard-entries", ("maps",), "faults=Faults(no_wildcard_entries=True)", {MAPS + "test_each_address_has_its_wildcard_entry_as_the_rule_says"},
     ["*map pressure (wildcard entries, IPv4 maps): 50 of 50 Services in the map have no wildcard entry for their address (<address>:0/ANY) "
      "although Cilium 1.20, default-lb-service-ipam lbipam (no file), bpf-lb-enable-wildcard-entries true (no file): the rule says one*"]),
    ("map-full-silent", ("maps",), "lb_map_max=512, faults=Faults(map_full_silent=True)", {MAPS + "test_a_full_map_is_not_silent"},
     ["*map pressure (how the agent shows a full IPv4 map): * of * Services missing from the map show no error for it (e.g. mp-*: status Done*"
      "the loadbalancer-reconciler's health was never Degraded with a full map's error while the map filled (* readings: no row)*"]),
    # a leaked frontend also outlives the shared-VIP suite's deletions, which its model comparisons see
    ("map-entries-leak", ("maps", "shared_vip"), "lb_map_max=512, faults=Faults(map_entries_leak=True)",
     {MAPS + "test_cleanup_removes_every_service_and_its_entries", SV + "test_claim_before_release_in_one_window_ends_as_the_model_predicts",
      SV + "test_generated_upserts_and_deletes_end_as_the_model_predicts", SV + "test_the_release_first_handoff_recovers_a_port_swap"},
     ["*map pressure (cleanup, IPv4 maps): 0 of the suite's Services still in Kubernetes, * frontends still in the service map (10.96.*"]),
    # -- kube-proxy --------------------------------------------------------------------------------------
    ("kube-proxy-daemonset", ("kube_proxy", "kube_proxy_installed"), "faults=Faults(kube_proxy_daemonset=True)", {KP + "test_no_kube_proxy_daemonset_runs_beside_the_replacement"},
     ["*kube-proxy: a second authority for Services: DaemonSet kube-system/kube-proxy runs kube-proxy (3/3 pods ready)*"
      "kubectl -n kube-system delete ds kube-proxy*(refusing kube-proxy beside the replacement is pytest-kpr's policy, not Cilium's: "
      "Cilium documents co-existence (\"When deploying the eBPF kube-proxy replacement under co-existence with kube-proxy*"
      "to accept it on purpose, run with --kpr-allow-kube-proxy)*"]),
    ("kube-proxy-daemonset-unlabelled", ("kube_proxy", "kube_proxy_installed"), "faults=Faults(kube_proxy_daemonset_as='kube-network/proxy')",
     {KP + "test_no_kube_proxy_daemonset_runs_beside_the_replacement"},
     ["*kube-proxy: a second authority for Services: DaemonSet kube-network/proxy runs kube-proxy (3/3 pods ready)*"]),
    ("ipvs-services", ("kube_proxy",), "faults=Faults(ipvs_services=True)", {KP + "test_no_node_has_ipvs_services"},
     ["*kube-proxy: a second authority for Services, IPVS virtual services on the nodes*fake-worker: * IPVS virtual services (TCP 0A600001:01BB*"]),
    ("installed-kube-proxy-programs-nothing", ("kube_proxy_installed",), "faults=Faults(kube_proxy_no_rules=True)", {KPI + "test_the_rule_check_finds_its_chains_on_every_node"},
     ["*kube-proxy installed: its chains never showed on fake-control-plane, fake-worker, fake-worker2, so the iptables check was not exercised*"]),
    ("kube-proxy-cleanup-fails", ("kube_proxy_installed",), "faults=Faults(kube_proxy_cleanup_fails=True)", {KPI + "test_kube_proxy_cleanup_leaves_no_chains"},
     ["*kube-proxy installed: after deleting the DaemonSet and kube-proxy --cleanup on every node (*), rules remain: fake-control-plane "
      "(iptables-nft): kube-proxy chains {'KUBE-SERVICES': *"]),
    ("unreadable-rule-view", ("hostport", "iptables", "nodeport"), "faults=Faults(unreadable_rule_view='iptables-legacy')",
     {IPT + "test_every_node_can_be_read_in_each_rule_view", NP + "test_no_rule_names_the_nodeport", HP + "test_no_rule_names_the_host_port"},
     ["*iptables: the rule views are not all readable*fake-worker: the iptables-legacy view could not be read*",
      "*NodePort: rules name the port*the iptables-legacy view could not be read*"]),
    # -- backend slots -------------------------------------------------------------------------------
    ("slots-capped", ("backend_slots",), "faults=Faults(slots_cap=3)",
     {BS + "test_slots_converge_to_the_endpointslice_after_scaling_to_four"},
     ["*backend slots did not converge after scaling web to 4 (IPv4, waited *s): fake-control-plane: slots lack [[]*"]),
    ("stale-slots-after-scale-down", ("backend_slots",), "faults=Faults(stale_slots=True)",
     {BS + "test_slots_follow_a_scale_down"},
     ["*backend slots did not follow web scaling down to 2*: fake-control-plane: slots still hold [[]*which the EndpointSlice no longer has*"]),
    ("backend-missing-on-one-agent", ("backend_slots",), "faults=Faults(backend_missing_on='fake-worker2')",
     {BS + "test_slots_converge_to_the_endpointslice_after_scaling_to_four"},
     ["*backend slots did not converge after scaling web to 4*: fake-worker2: slots lack [[]*"]),
    # -- socket LB -----------------------------------------------------------------------------------
    ("pods-per-packet-while-full", ("affinity", "hairpin", "itp", "no_backend", "socket_lb", "terminating", "udp"), "faults=Faults(socket_lb_broken=True)",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend", SL + "test_conntrack_out_entry_names_the_socket_peer",
      HP_ + "test_the_backend_sees_the_source_its_plane_gives", UDP + "test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on",
      NB + "test_connect_from_a_pod_fails_as_its_plane_says", AFF + "test_a_client_stays_on_one_backend_with_session_affinity",
      AFF + "test_without_affinity_connections_spread_over_the_backends", AFF + "test_the_affinity_expires_after_its_timeout",
      ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node", ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer",
      TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists",
      TERM + "test_when_only_terminating_backends_remain_new_connections_follow_the_rule"},
     ["*socket LB (agent reports coverage Full): the socket's peer is the service address*not rewritten at connect()*service translation entries exist*",
      "*affinity (sessionAffinity ClientIP): connections reached [[]'10.96.*:80'[]], which are not the Service's backends*",
      "*iTP=Local (local backends only): 12 of 12 connections from a pod on fake-worker have their socket on 10.96.*:80, no backend of the "
      "Service (the socket plane did not translate them to a backend)*",
      "*terminating backends (new connections): while term-a terminates: 20 of 20 new connections reached 10.96.*:7000, no backend of the Service*",
      "*hairpin: hairpin saw its own request to 10.96.*:80 come from 169.254.42.1, expected 10.244.* (socket plane*",
      # per packet a connected UDP socket has no socket-level backend for the agent to terminate
      "*UDP (socket termination): the connected socket to the deleted backend udpterm-a (10.244.*:5353) was not terminated (no ECONNABORTED)*"]),
    ("pods-on-socket-lb-while-hostns-only", ("hairpin", "no_backend", "socket_lb"), "socket_lb_hostns_only=True, faults=Faults(socket_lb_reverse=True)",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend", HP_ + "test_the_backend_sees_the_source_its_plane_gives",
      NB + "test_connect_from_a_pod_fails_as_its_plane_says", NB + "test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it"},
     ["*socket LB (agent reports coverage Hostns-only): socket LB is hostns-only, yet the pod's socket peer is 10.244.*, not the service*",
      "*no backend (pod connect() to ClusterIP *; per-packet plane, ServiceNoBackendResponse=reject): connect() gave unreachable (EHOSTUNREACH)*",
      "*hairpin: hairpin saw its own request to 10.96.*:80 come from 10.244.*, expected 169.254.42.1 (per-packet plane*"]),
    ("getpeername-returns-the-backend", ("socket_lb", "udp"), "faults=Faults(getpeername_backend=True)",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend",
      UDP + "test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip"},
     ["*getpeername() returned 10.244.*:8080, not the service address 10.96.*:80: the reverse translation is missing*",
      "*UDP (connected client to 10.96.*:53): getpeername() returned 10.244.*:5353, not 10.96.*:53: the getpeername4 reverse translation is missing*"]),
    ("snat-at-the-backend", ("socket_lb",), "faults=Faults(snat_at_backend=True)",
     {SL + "test_backend_sees_the_holder_pod_address"},
     ["*socket LB: the backend web-* sees [[]'172.18.0.3:61234'[]], not the holder's pod address 10.244.*:40404 (a node IP would mean SNAT)*"]),
    # -- NodePort ------------------------------------------------------------------------------------
    ("listener-on-the-nodeport", ("nodeport",), "faults=Faults(nodeport_listener=True)",
     {NP + "test_nobody_listens_on_the_nodeport"},
     ["*NodePort: 1 sockets listen on :30780 on the node ([[]'0.0.0.0:30780'[]]); the answer must come from BPF, not a process*"]),
    ("nodeport-frontend-on-the-wrong-port", ("dsr", "etp", "no_backend", "nodeport"), "faults=Faults(nodeport_wrong_port=True)",
     {NP + "test_nodeport_answers_http_200_on_the_node", NP + "test_nodeport_answers_from_outside_the_cluster",
      NP + "test_agent_lists_the_wildcard_nodeport_frontend",
      NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer",
      ETP + "test_only_the_node_with_a_local_backend_serves_it_from_outside", ETP + "test_the_backend_sees_the_clients_own_address",
      DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises"},
     ["*NodePort: the agent lists no 0.0.0.0:30780 NodePort frontend (NodePort frontends: [[]*0.0.0.0:30781/TCP*",
      "*NodePort: 172.18.0.3:30780 answered 0 (curl exit 7)*"]),
    # -- no backend ----------------------------------------------------------------------------------
    ("silent-drop-while-reject", ("no_backend",), "faults=Faults(no_backend_silent_drop=True)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort *; per-packet plane, ServiceNoBackendResponse=reject): "
      "a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 3/3*"]),
    ("reject-icmp-host-unreachable", ("no_backend",), "faults=Faults(reject_icmp_code=1)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*the reject answer is ICMP 3/1, expected ICMP 3/3 (destination unreachable, port unreachable)*"]),
    ("reject-icmp-admin-prohibited", ("no_backend",), "faults=Faults(reject_icmp_code=13)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*the reject answer is ICMP 3/13, expected ICMP 3/3*"]),
    ("slow-reject", ("no_backend",), "faults=Faults(slow_reject_ms=2000)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*raw failed as expected (icmp-unreachable) but took 2.00s; the per-packet plane answers at once (bound 1s)*"]),
    ("socket-plane-follows-drop", ("itp", "no_backend", "udp"), "no_backend_response='drop', faults=Faults(socket_lb_honours_drop=True)",
     {NB + "test_curl_from_a_pod_fails_as_its_plane_says", NB + "test_connect_from_a_pod_fails_as_its_plane_says",
      UDP + "test_a_backendless_udp_service_fails_the_datagram_at_once",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*no backend (pod curl to ClusterIP *; socket plane, ServiceNoBackendResponse=drop): curl exited 28 after 5.00s (it timed out: "
      "the traffic was dropped); expected exit 7 at once*whatever ServiceNoBackendResponse says*",
      "*no backend (pod sendto() to UDP ClusterIP 10.96.*:53; socket plane, ServiceNoBackendResponse=drop): sendto() gave timeout after 2.00s*",
      "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to 10.96.*:80, whose only backend is on fake-worker2; socket "
      "plane, ServiceNoBackendResponse=drop): connect() gave timeout after 2.00s*"]),
    # the socket plane's errno: EHOSTUNREACH from kernel 6.1 (clusters/kernels.yaml sock_addr_set_retval)
    ("eperm-on-a-6.1-kernel", ("itp", "no_backend", "udp"), "faults=Faults(eperm_on_new_kernel=True)",
     {NB + "test_connect_from_a_pod_fails_as_its_plane_says", UDP + "test_a_backendless_udp_service_fails_the_datagram_at_once",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer"},
     ["*no backend (pod connect() to ClusterIP *; socket plane, ServiceNoBackendResponse=reject): connect() failed with EPERM, expected "
      "EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression of cilium/cilium#45184 (reported for Cilium 1.19.2 up to 1.20.0*",
      "*UDP (no backend)*sendto() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression*",
      "*iTP=Local (no local backend)*connect() failed with EPERM, expected EHOSTUNREACH (EPERM on a 6.1+ kernel is the regression*"]),
    ("udp-reply-from-the-backend", ("udp",), "faults=Faults(udp_reply_from_backend=True)",
     {UDP + "test_an_unconnected_client_reads_the_reply_from_the_cluster_ip",
      UDP + "test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip"},
     ["*UDP (unconnected client to 10.96.*:53): the reply came from 10.244.*:5353, not from 10.96.*:53 (the backend's own address: the "
      "socket LB's recvmsg4 reverse translation is missing); a resolver that sent to 10.96.*:53 drops it*",
      "*UDP (connected client to 10.96.*:53): the reply came from 10.244.*:5353*"]),
    # -- hairpin: a backend reaching its own Service (datapath.hairpin_source) ------------------------------------
    ("hairpin-socket-snat", ("hairpin",), "faults=Faults(hairpin_socket_snat=True)",
     {HP_ + "test_the_backend_sees_the_source_its_plane_gives"},
     ["*hairpin: hairpin saw its own request to 10.96.*:80 come from 169.254.42.1, expected 10.244.* (socket plane: socket LB "
      "connects the pod straight to itself (no NAT))*"]),
    ("hairpin-not-nated-per-packet", ("hairpin",), "socket_lb_hostns_only=True, faults=Faults(hairpin_no_loopback_nat=True)",
     {HP_ + "test_a_backend_reaches_its_own_service", HP_ + "test_the_backend_sees_the_source_its_plane_gives"},
     ["*hairpin: hairpin could not reach its own Service 10.96.*:80 (per-packet plane): connect timeout, HTTP nothing; per packet a "
      "packet from a pod to itself must be source-NATed to the loopback address*",
      "*hairpin: hairpin logged no request from itself to 10.96.*:80, so the source it saw is unknown*"]),
    # a connected client's socket to a deleted backend is terminated by the agent (datapath.SRC_UDP_SOCK_TERMINATION)
    ("udp-socket-not-terminated", ("udp",), "faults=Faults(udp_sockets_not_terminated=True)",
     {UDP + "test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on"},
     ["*UDP (socket termination): the connected socket to the deleted backend udpterm-a (10.244.*:5353) was not terminated (no "
      "ECONNABORTED): * datagrams lost, and it was never answered again*"]),
    ("udp-backendless-datagram-passes", ("udp",), "faults=Faults(udp_no_backend_passes=True)",
     {UDP + "test_a_backendless_udp_service_fails_the_datagram_at_once"},
     ["*no backend (pod sendto() to UDP ClusterIP 10.96.*:53; socket plane, ServiceNoBackendResponse=reject): sendto() gave timeout after "
      "2.00s; expected unreachable at once (under 1s)*"]),
    # -- one family broken on a dual-stack cluster: only that family's tests fail (issue 29) ---------------------------
    ("ipv6-pods-per-packet-while-full", ("affinity", "hairpin", "itp", "no_backend", "socket_lb", "terminating", "udp"), "ip_families=('IPv4', 'IPv6'), faults=Faults(socket_lb_v6_broken=True)",
     {SL + "test_application_sees_the_service_while_its_socket_points_at_a_backend[IPv6]", HP_ + "test_the_backend_sees_the_source_its_plane_gives[IPv6]",
      UDP + "test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on[IPv6]",
      SL + "test_conntrack_out_entry_names_the_socket_peer[IPv6]", NB + "test_connect_from_a_pod_fails_as_its_plane_says[IPv6]",
      # the suites that read the backend from the socket see the ClusterIP instead (no connect6 translation)
      AFF + "test_a_client_stays_on_one_backend_with_session_affinity[IPv6]", AFF + "test_without_affinity_connections_spread_over_the_backends[IPv6]",
      AFF + "test_the_affinity_expires_after_its_timeout[IPv6]", ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node[IPv6]",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer[IPv6]",
      TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists[IPv6]",
      TERM + "test_when_only_terminating_backends_remain_new_connections_follow_the_rule[IPv6]"},
     ["*socket LB (agent reports coverage Full): the socket's peer is the service address [[]fd00:10:96::*]:80: the destination was not "
      "rewritten at connect()*",
      "*no backend (pod connect() to ClusterIP [[]fd00:10:96::*]:80; socket plane, ServiceNoBackendResponse=reject): connect() gave "
      "refused (ECONNREFUSED)*"]),
    ("ipv6-udp-reply-from-the-backend", ("udp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(recvmsg6_missing=True)",
     {UDP + "test_an_unconnected_client_reads_the_reply_from_the_cluster_ip[IPv6]",
      UDP + "test_a_connected_client_reaches_a_backend_and_reads_from_the_cluster_ip[IPv6]"},
     ["*UDP (unconnected client to [[]fd00:10:96::*]:53): the reply came from [[]fd00:10:244:*]:5353, not from [[]fd00:10:96::*]:53 (the "
      "backend's own address: the socket LB's recvmsg6 reverse translation is missing)*"]),
    ("ipv6-silent-drop-while-reject", ("no_backend",), "ip_families=('IPv4', 'IPv6'), faults=Faults(no_backend_v6_drops=True)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer[IPv6]",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer[IPv6]"},
     ["*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort [[]fc00:f853:ccd:e793::4]:*; per-packet plane, "
      "ServiceNoBackendResponse=reject): a raw SYN got timeout after 3.00s; expected icmp-unreachable ICMP 1/4*"]),
    ("ipv6-nodeport-not-programmed", ("dsr", "etp", "itp", "no_backend", "nodeport"), "ip_families=('IPv4', 'IPv6'), faults=Faults(nodeport_v6_missing=True)",
     {NP + "test_nodeport_answers_http_200_on_the_node[IPv6]", NP + "test_nodeport_answers_from_outside_the_cluster[IPv6]",
      NP + "test_agent_lists_the_wildcard_nodeport_frontend[IPv6]",
      # ghost's IPv6 NodePort is not programmed either: the node's stack answers the raw SYN with a reset
      NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer[IPv6]",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer[IPv6]",
      # nor eTP's and DSR's: nothing serves them over IPv6 from outside
      ETP + "test_only_the_node_with_a_local_backend_serves_it_from_outside[IPv6]", ETP + "test_the_backend_sees_the_clients_own_address[IPv6]",
      DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises[IPv6]", ITP + "test_traffic_from_outside_is_unaffected[IPv6]"},
     ["*NodePort: [[]fc00:f853:ccd:e793::3]:30780 answered 0 (curl exit 7)*",
      "*NodePort from outside: http http://[[]fc00:f853:ccd:e793::3]:30780/: refused*",
      "*NodePort: the agent lists no [[]::]:30780 NodePort frontend (NodePort frontends: [[]'0.0.0.0:*/TCP'*",
      "*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort [[]fc00:f853:ccd:e793::4]:*; per-packet plane, "
      "ServiceNoBackendResponse=reject): a raw SYN got reset after *; expected icmp-unreachable ICMP 1/4*"]),
    ("ipv6-snat-to-the-other-address", ("dsr",), "ip_families=('IPv4', 'IPv6'), faults=Faults(snat6_address_swapped=True)",
     {DSR + "test_the_backend_sees_the_address_the_nodeport_mode_promises[IPv6]"},
     ["*DSR/SNAT (the agent reports NodePort mode SNAT, routing Tunnel): the backend saw fc00:f853:ccd:e793::3 (the receiving node's "
      "InternalIP), expected fd00:10:244:1::76 (the receiving node's CiliumInternalIP: SNAT mode in tunnel routing*ROUTER_IP for IPv6*"]),
    ("ipv6-health-server-not-listening", ("etp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(healthserver_v4_only=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]"},
     ["*eTP=Local (health-check NodePort *): fake-control-plane answered HTTP nothing with localEndpoints None, expected 503 with 0*"
      "fake-worker2 answered HTTP nothing with localEndpoints None, expected 200 with 2 (its own backends' addresses and ports)*"]),
    # a dual-stack pod is one backend per address: the health server counts both (datapath.SRC_HEALTHSERVER)
    ("health-count-one-family", ("etp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(healthcheck_one_family=True)",
     {ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv4]",
      ETP + "test_the_health_check_node_port_reports_each_nodes_local_endpoints[IPv6]"},
     ["*eTP=Local (health-check NodePort *): fake-worker2 answered HTTP 200 with localEndpoints 1, expected 200 with 2 "
      "(its own backends' addresses and ports)*"]),
    ("ipv6-affinity-ignored", ("affinity",), "ip_families=('IPv4', 'IPv6'), faults=Faults(affinity6_ignored=True)",
     {AFF + "test_a_client_stays_on_one_backend_with_session_affinity[IPv6]"},
     ["*affinity (sessionAffinity ClientIP): 20 connections from one client reached * backends [[]'[[]fd00:10:244:*]:8080'*despite sessionAffinity ClientIP*"]),
    ("ipv6-itp-local-ignored", ("itp",), "ip_families=('IPv4', 'IPv6'), faults=Faults(itp6_local_ignored=True)",
     {ITP + "test_a_pod_reaches_only_the_backends_on_its_own_node[IPv6]",
      ITP + "test_a_pod_on_a_node_without_a_local_backend_gets_the_no_backend_answer[IPv6]"},
     ["*iTP=Local (local backends only): * of 12 connections from a pod on fake-worker* were served by itp-* (on fake-worker*): another node's "
      "backend, as if internalTrafficPolicy were Cluster*",
      "*iTP=Local (no local backend): no backend (pod connect() on fake-worker to [[]fd00:10:96::*]:80, whose only backend is on fake-worker2*"
      "connect() gave connected*"]),
    ("ipv6-host-port-not-served", ("hostport",), "ip_families=('IPv4', 'IPv6'), faults=Faults(hostport_v6_unserved=True)",
     {HP + "test_the_host_port_answers_on_the_nodes_address[IPv6]", HP + "test_the_agent_lists_a_host_port_frontend[IPv6]"},
     ["*hostPort: [[]fc00:f853:ccd:e793::3]:18780 from the node: connect refused, HTTP 0 (curl exit 7)*",
      "*hostPort: on fake-worker: the agent lists no IPv6 HostPort frontend on port 18780 (only [[]'HostPort 0.0.0.0:18780/TCP'*"]),
    ("ipv6-terminating-backend-picked", ("terminating",), "ip_families=('IPv4', 'IPv6'), faults=Faults(terminating6_selected=True)",
     {TERM + "test_new_connections_never_pick_a_terminating_backend_while_an_active_one_exists[IPv6]"},
     ["*terminating backends (new connections): while term-a terminates: * of 20 new connections reached term-a, which should not be picked*"]),
    ("ipv6-maglev-no-table", ("maglev",), "ip_families=('IPv4', 'IPv6'), lb_algorithm='Maglev', faults=Faults(maglev6_no_table=True)",
     {MAG + "test_every_agent_has_a_balanced_table_over_the_backends[IPv6]", MAG + "test_a_flow_reaches_the_same_backend_through_every_node[IPv6]",
      MAG + "test_removing_a_backend_moves_only_its_flows[IPv6]"},
     ["*Maglev (lb/maps-dump tables, IPv6): fake-control-plane has no Maglev table for its NodePort frontend*",
      "*Maglev (the same IPv6 flow through different nodes): * of 24 flows did not reach one backend through fake-control-plane and fake-worker*"]),
    # the lb6 service map alone holds fewer entries than the agent reports: only the IPv6 inventory misses Services (the 50
    # map-pressure Services take 100 IPv6 entries with their wildcard entries, datapath.SRC_WILDCARD; as above)
    ("ipv6-service-map-full-unexpectedly", ("maps",), "ip_families=('IPv4', 'IPv6'), faults=Faults(service6_map_capacity=90)",
     {MAPS + "test_every_service_of_the_run_is_in_the_bpf_maps[IPv6]"},
     ["*map pressure (IPv6 maps): service map full (90 of 65536 service entries): * of the run's 50 Services are in Kubernetes but not in the "
      "BPF maps (mp-*"]),
    ("ipv6-slots-lack-a-backend", ("backend_slots",), "ip_families=('IPv4', 'IPv6'), faults=Faults(backend6_missing=True)",
     {BS + "test_slots_converge_to_the_endpointslice_after_scaling_to_four[IPv6]"},
     ["*backend slots did not converge after scaling web to 4 (IPv6, waited *s): fake-control-plane: slots lack [[]'[[]fd00:10:244:*"]),
    # enable-no-service-endpoints-routable is true (the default), yet the per-packet plane lets the SYN through to the stack
    ("no-backend-not-routable", ("no_backend",), "faults=Faults(no_backend_not_routable=True)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*no backend (raw SYN from fake-worker's host network to fake-worker2's NodePort *; per-packet plane, ServiceNoBackendResponse=reject): "
      "a raw SYN got reset after *; expected icmp-unreachable ICMP 3/3*"]),
    ("icmp-while-not-routable", ("no_backend",), "no_service_endpoints_routable=False, faults=Faults(not_routable_ignored=True)",
     {NB + "test_raw_syn_to_the_nodeport_from_another_node_gets_the_configured_answer",
      NB + "test_raw_syn_to_the_nodeport_from_the_runner_gets_the_configured_answer"},
     ["*no backend (raw SYN from fake-worker's host network *; per-packet plane, ServiceNoBackendResponse=reject, "
      "enable-no-service-endpoints-routable=false): a raw SYN got icmp-unreachable ICMP 3/3 after *; expected reset: "
      "enable-no-service-endpoints-routable is false*"]),
    # ... but a pod's SYN to the ClusterIP (per packet, hostns-only) continues as addressed, and nothing owns that address
    ("not-routable-resets-a-cluster-ip", ("no_backend",),
     "no_service_endpoints_routable=False, socket_lb_hostns_only=True, faults=Faults(not_routable_resets_anywhere=True)",
     {NB + "test_curl_from_a_pod_fails_as_its_plane_says", NB + "test_connect_from_a_pod_fails_as_its_plane_says",
      NB + "test_raw_syn_from_a_pod_to_the_cluster_ip_where_a_plane_handles_it"},
     ["*no backend (pod curl to ClusterIP *; per-packet plane, *enable-no-service-endpoints-routable=false): curl exited 7 after *; "
      "expected exit 28 at its limit: *bpf_lxc lets the pod's packet continue untranslated to the ClusterIP, which nothing on the node owns*",
      "*no backend (pod connect() to ClusterIP *): connect() gave refused (ECONNREFUSED) after *; expected timeout at its limit*",
      "*no backend (pod raw SYN to ClusterIP *): a raw SYN got reset after *; expected timeout*"]),
    # -- shared VIP ----------------------------------------------------------------------------------
    ("degraded-without-the-error-text", ("shared_vip",), "faults=Faults(health_without_error=True)",
     {SV + "test_the_conflict_is_visible_in_the_agents_health[external-ips]", SV + "test_the_conflict_is_visible_in_the_agents_health[lb-ipam]",
      SV + "test_a_port_swap_ends_as_the_model_predicts", SV + "test_the_release_first_handoff_recovers_a_port_swap"},
     ["*shared VIP (external-ips): the rejected claim is not visible in the agent's health: `db/show health` has no Degraded "
      "loadbalancer-reflectors row whose Error says 'frontend already owned by another service'*",
      "*shared VIP port swap (cilium-1.18, VIP 198.18.10.80): after the swap, as the model predicts: the model says*'errors': [[]'frontend already*"]),
    ("error-without-degraded-count", ("shared_vip",), "faults=Faults(error_without_degraded=True)",
     {SV + "test_the_conflict_is_visible_in_the_agents_health[external-ips]", SV + "test_the_conflict_is_visible_in_the_agents_health[lb-ipam]"},
     ["*shared VIP (lb-ipam): the rejected claim is not visible in the agent's health: plain `cilium-dbg status` shows no degraded module "
      "(Modules Health {'stopped': 0, 'degraded': 0, 'ok': 1})*"]),
]


def _settings(config: str) -> dict[str, str]:
    """A row's configuration as setting -> value text (the Faults(...) ones prefixed ``faults.``)."""
    call = ast.parse(f"f({config})", mode="eval").body
    assert isinstance(call, ast.Call)
    out: dict[str, str] = {}
    for kw in call.keywords:
        if kw.arg == "faults" and isinstance(kw.value, ast.Call):
            out.update({f"faults.{k.arg}": ast.unparse(k.value) for k in kw.value.keywords})
        else:
            out[str(kw.arg)] = ast.unparse(kw.value)
    return out


def _config(settings: dict[str, str]) -> str:
    top = [f"{k}={v}" for k, v in sorted(settings.items()) if not k.startswith("faults.")]
    faults = [f"{k.removeprefix('faults.')}={v}" for k, v in sorted(settings.items()) if k.startswith("faults.")]
    return ", ".join(top + [f"faults=Faults({', '.join(faults)})"])


def suite_of(test: str) -> str:
    """``test_iptables.py::test_x[IPv6]`` -> ``iptables``"""
    return test.split("::", 1)[0].removeprefix("test_").removesuffix(".py")


@dataclass(frozen=True)
class Row:
    name: str
    suites: tuple[str, ...]
    config: str
    failing: frozenset[str]
    messages: tuple[str, ...]


@dataclass
class Group:
    """Rows that share one run of the suites they declare: the same configuration but for their faults, no fault flag in
    common, and no declared suite in common -- so each failure belongs to exactly one row (the row that declares its
    suite), and a failure in a suite no row of the group declares is a fault reaching outside its declared suites."""
    base: dict[str, str]
    rows: list[Row] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def suites(self) -> set[str]:
        return {s for r in self.rows for s in r.suites}

    @property
    def runs(self) -> tuple[str, ...]:
        """The suites the group's run runs: those its rows declare."""
        return tuple(sorted(self.suites))

    def admits(self, row: Row, settings: dict[str, str]) -> bool:
        base = {k: v for k, v in settings.items() if not k.startswith("faults.")}
        return base == self.base and not (set(settings) - set(base)) & set(self.settings) and not set(row.suites) & self.suites

    @property
    def config(self) -> str:
        return _config(self.settings)


ROWS = [Row(name, suites, config, frozenset(failing), tuple(messages)) for name, suites, config, failing, messages in FAULTS]


def fault_groups(rows: list[Row] = ROWS) -> list[Group]:
    """The table's rows in shared runs: each row joins the first group that admits it (table order), else starts one."""
    groups: list[Group] = []
    for row in rows:
        settings = _settings(row.config)
        group = next((g for g in groups if g.admits(row, settings)), None)
        if group is None:
            group = Group(base={k: v for k, v in settings.items() if not k.startswith("faults.")})
            groups.append(group)
        group.rows.append(row)
        group.settings.update(settings)
    return groups


GROUPS = fault_groups()
GROUP_OF = {row.name: i for i, g in enumerate(GROUPS) for row in g.rows}


def failed_tests(result: pytest.RunResult) -> set[str]:
    return {line.split(" ")[1].split("/")[-1] for line in result.stdout.lines if line.startswith("FAILED ")}


def _group_run(pytester: pytest.Pytester, index: int) -> pytest.RunResult:
    """The run the rows of a group share: the suites they declare (Group.runs), once (test_suites_vs_fake.shared_run)."""
    group = GROUPS[index]
    return shared_run(pytester, group.config, *group.runs, args=("-rf",))[0]


def _who_reached(pytester: pytest.Pytester, group: Group, outside: set[str]) -> str:
    """Only when a failure lies outside the group's declared suites: each row of the group alone, on those suites."""
    suites = sorted({suite_of(t) for t in outside})
    culprits = []
    for row in group.rows:
        alone = run_suites(pytester, row.config, *suites, args=("-rf",))
        if failed_tests(alone):
            culprits.append(f"{row.name} fails {sorted(failed_tests(alone))}")
    return "; ".join(culprits) or "no row alone: the group's faults together (split the group)"


ROW_TEST = "test_each_fault_fails_exactly_the_tests_that_check_it"


@pytest.mark.parametrize("row", [pytest.param(r, id=r.name) for r in ROWS])
def test_each_fault_fails_exactly_the_tests_that_check_it(pytester: pytest.Pytester, row: Row) -> None:
    """The row's fault, in one run of the suites its group declares, with the other faults of its group: exactly the
    row's tests fail in the suites it declares, each with words that name the property."""
    index = GROUP_OF[row.name]
    judge_row(_group_run(pytester, index), row)


def judge_row(result: pytest.RunResult, row: Row) -> None:
    failed = failed_tests(result)
    assert result.parseoutcomes().get("errors", 0) == 0, f"a fault must fail tests, not break their setup\n{result.stdout.str()[-4000:]}"
    mine = {t for t in failed if suite_of(t) in row.suites}
    assert mine == row.failing, (f"{row.name} (suites {', '.join(row.suites)}): failed {sorted(mine)}, the table says "
                                 f"{sorted(row.failing)}\n{result.stdout.str()[-4000:]}")
    sections = failure_blocks(result.stdout.str())
    text = [line for t in sorted(row.failing) for line in sections.get(t.split("::", 1)[1], [])]
    assert text, f"no failure report for {sorted(row.failing)} in the run's output"
    pytest.LineMatcher(text).fnmatch_lines_random(list(row.messages))


def judge_reach(pytester: pytest.Pytester, result: pytest.RunResult, group: Group) -> None:
    """A run of suites no row of the group declares, under the group's faults: any failure or error outside the declared
    suites is a fault reaching outside them (the table would hide what it breaks), named with the row that reaches it;
    the run passed, or found nothing to judge (the suites left do not apply to the group's configuration)."""
    who = ", ".join(r.name for r in group.rows)
    assert result.parseoutcomes().get("errors", 0) == 0, f"{who}: errors outside the declared suites\n{result.stdout.str()[-4000:]}"
    outside = {t for t in failed_tests(result) if suite_of(t) not in group.suites}
    assert not outside, f"tests failed outside the suites declared by {who}: {sorted(outside)}; alone: {_who_reached(pytester, group, outside)}"
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), \
        f"{who}: the run outside the declared suites ended {result.ret}\n{result.stdout.str()[-4000:]}"


def _group_id(group: Group) -> str:
    return group.rows[0].name + (f"+{len(group.rows) - 1}" if len(group.rows) > 1 else "")


ALL_SUITES = {p.name.removeprefix("test_").removesuffix(".py") for p in SUITES.glob("test_*.py")}


@pytest.mark.reach
@pytest.mark.parametrize("index", [pytest.param(i, id=_group_id(g)) for i, g in enumerate(GROUPS) if ALL_SUITES - g.suites])
def test_no_fault_reaches_outside_its_declared_suites(pytester: pytest.Pytester, index: int) -> None:
    """The table's honesty (make test-reach): the group's faults, under every suite none of its rows declares, fail
    nothing."""
    group = GROUPS[index]
    judge_reach(pytester, run_suites(pytester, group.config, *sorted(ALL_SUITES - group.suites), args=("-rf",)), group)


def test_the_table_declares_each_rows_suites() -> None:
    """A row's failing tests lie in the suites it declares, each declared suite exists, and the groups hold every row
    once with disjoint suites and one configuration each."""
    for row in ROWS:
        assert set(row.suites) <= ALL_SUITES, (row.name, set(row.suites) - ALL_SUITES)
        assert {suite_of(t) for t in row.failing} <= set(row.suites), row.name
    assert sorted(r.name for g in GROUPS for r in g.rows) == sorted(r.name for r in ROWS)
    for g in GROUPS:
        assert sum(len(r.suites) for r in g.rows) == len(g.suites), "disjoint declared suites"
        assert all({k: v for k, v in _settings(r.config).items() if not k.startswith("faults.")} == g.base for r in g.rows)


def test_a_fault_outside_its_declared_suites_is_an_error(pytester: pytest.Pytester) -> None:
    """The table cannot hide what a fault breaks: a row whose fault also fails a suite it does not declare fails, naming
    the test and the row that reached it (here: NodePort's wrong port, declared as if it lived in the iptables suite)."""
    row = Row("wrong-port-declared-narrowly", ("iptables",), "faults=Faults(nodeport_wrong_port=True)", frozenset(), ())
    (group,) = fault_groups([row])
    result = run_suites(pytester, group.config, "nodeport", args=("-rf",))
    with pytest.raises(AssertionError) as e:
        judge_reach(pytester, result, group)
    assert str(e.value).startswith("tests failed outside the suites declared by wrong-port-declared-narrowly: [")
    assert f"'{NP}test_nodeport_answers_http_200_on_the_node'" in str(e.value)
    assert f"alone: wrong-port-declared-narrowly fails ['{NP}test_agent_lists_the_wildcard_nodeport_frontend'" in str(e.value)


def test_a_row_that_claims_too_little_or_the_wrong_words_fails(pytester: pytest.Pytester) -> None:
    """Within its declared suites a row's failing set is exact and its words must be in those tests' own reports."""
    config = "faults=Faults(nodeport_listener=True)"
    result = run_suites(pytester, config, "nodeport", args=("-rf",))
    right = Row("listener", ("nodeport",), config, frozenset({NP + "test_nobody_listens_on_the_nodeport"}), ("*NodePort: 1 sockets listen on :30780*",))
    judge_row(result, right)
    for wrong, says in [(Row(right.name, right.suites, config, frozenset(), right.messages), "listener (suites nodeport): failed ["),
                        (Row(right.name, right.suites, config, right.failing, ("*iptables: *",)), "line '*iptables: *' not found in output")]:
        with pytest.raises((AssertionError, pytest.fail.Exception)) as e:
            judge_row(result, wrong)
        assert says in str(e.value)


def test_a_failure_saves_and_attaches_the_datapath_bundle(pytester: pytest.Pytester) -> None:
    result = run_suites(pytester, "faults=Faults(nodeport_listener=True)", "nodeport")
    assert result.parseoutcomes().get("failed") == 1
    result.stdout.fnmatch_lines(["FAIL  NodePort *"])
    failures = list((pytester.path / "artifacts" / "fake" / "failures").iterdir())
    files = {p.name for p in failures[0].iterdir()}
    assert {"pods.txt", "fake-worker-service-list.txt", "fake-worker-bpf-lb-list.txt", "fake-worker-lb-maps-dump.txt",
            "fake-worker-bpf-ct-list-global.txt",
            "fake-worker-bpf-metrics-list.txt"} <= files
    # the terminal says where the bundle is; the dumps themselves stay in its files (test_suites_vs_fake: at most 40 lines)
    result.stdout.fnmatch_lines(["*kpr: evidence*", f"saved under {failures[0]}: * files (*)"])
    assert "kpr: fake-worker: bpf lb list" not in result.stdout.str()


def test_a_node_without_an_agent_stops_the_run_before_any_suite(pytester: pytest.Pytester) -> None:
    """Every node runs a cilium-agent: readiness waits for one per node and refuses the cluster otherwise,
    so no suite runs on a cluster where a node would serve its Services from nowhere."""
    result = run_suites(pytester, "faults=Faults(missing_agent_on='fake-control-plane')")
    assert result.ret != 0 and result.parseoutcomes().get("passed") is None
    result.stdout.fnmatch_lines(["*waiting for every cilium-agent to report Ok with KubeProxyReplacement True; last observed: 2/3 agents*"])


def test_a_missing_service_no_backend_response_stops_the_run_naming_the_field(pytester: pytest.Pytester) -> None:
    """The no-backend expectations depend on ServiceNoBackendResponse: an agent that reports it nowhere is an error that
    names the field, the version and where it looked -- never a silent 'reject'."""
    result = run_suites(pytester, "cilium_version='1.20.5', faults=Faults(no_backend_response_unreported=True)")
    assert result.ret == 3 and result.parseoutcomes().get("passed") is None
    result.stdout.fnmatch_lines(["*pytest-kpr: Cilium 1.20.5 reports no ServiceNoBackendResponse (reject|drop): neither `cilium-dbg config -a` "
                                 "(field ServiceNoBackendResponse) nor /tmp/cilium/config-map/service-no-backend-response has it; the "
                                 "no-backend expectations depend on it, so pytest-kpr will not assume 'reject'*"])


def test_kube_proxy_accepted_on_purpose_is_skipped_naming_what_was_found(pytester: pytest.Pytester) -> None:
    """--kpr-allow-kube-proxy: co-existence is Cilium-documented, so a user may accept it; the checks then skip, naming it."""
    result = run_suites(pytester, "faults=Faults(kube_proxy_daemonset=True, ipvs_services=True)", "kube_proxy", args=("--kpr-allow-kube-proxy", "-rs"))
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*kube-proxy beside the replacement, accepted on purpose (--kpr-allow-kube-proxy): DaemonSet kube-system/kube-proxy "
                                 "runs kube-proxy (3/3 pods ready)*"])


def test_every_fault_flag_has_a_row() -> None:
    """A fault the table does not exercise proves nothing; a new one must get its row."""
    from dataclasses import fields

    from pytest_kpr.testing import Faults

    used = {name for _, _, config, _, _ in FAULTS for name in (f.name for f in fields(Faults)) if f"{name}=" in config}
    # tested elsewhere: the two readiness refusals (they stop the run), and the late re-queue, which needs the
    # real settle window (test_suites_vs_fake.py::test_a_claimant_that_appears_late_is_still_seen_to_appear)
    # and the slow agent, which converges late but converges: its lag is measured, not failed
    # (test_suites_vs_fake.py::test_the_slowest_agent_is_timed_within_the_poll_resolution); the upgrade faults act
    # only in an upgrade run (test_upgrade_vs_fake.py::test_each_upgrade_fault_fails_the_verdict_that_names_it, and the
    # two of one family: test_a_fault_in_one_family_fails_only_that_familys_verdict)
    # (and the missing ServiceNoBackendResponse, which stops the run: test_a_missing_service_no_backend_response_stops_the_run_naming_the_field)
    # (and the two setup failures, which stop the run in a phase: test_run_record.py::test_a_failed_setup_leaves_its_phase_*)
    # (and the dropping agent, whose proof is the drop line of the failure: test_suites_vs_fake.py::test_a_probe_dropped_*)
    assert {f.name for f in fields(Faults)} - used == {"kpr_disabled", "helm_install_fails", "agents_never_ready", "per_packet_drop_on", "missing_agent_on", "no_backend_response_unreported", "late_requeue_s", "slow_agent_on", "slow_agent_s",
                                                       "upgrade_renumbers_ids", "upgrade_flushes_ct", "upgrade_resets_flow",
                                                       "upgrade_flushes_ct6", "upgrade_renumbers_ids6",
                                                       "upgrade_blackhole_flow", "upgrade_regresses_no_backend"}


def test_the_iptables_evidence_counts_kube_sep_lines(pytester: pytest.Pytester) -> None:
    """The figures in iptables.json are counted, not assumed: with only KUBE-SEP chains on the nodes they are not zero."""
    from test_suites_vs_fake import evidence

    run_suites(pytester, "faults=Faults(kube_proxy_rules='sep-only')", "iptables")
    ipt = evidence(pytester, "iptables.json")
    per_view = [c["kube_sep"] for views in ipt["nodes"].values() for c in views.values() if isinstance(c, dict)]
    assert ipt["kube_sep_lines"] == sum(per_view) > 0 and ipt["kube_svc_lines"] == 0 and ipt["kube_proxy_lines"] == ipt["kube_sep_lines"]


def test_the_nodeport_evidence_counts_lines_in_every_view(pytester: pytest.Pytester) -> None:
    from test_suites_vs_fake import evidence

    run_suites(pytester, "faults=Faults(kube_proxy_rules='nodeports')", "nodeport")
    np_ = evidence(pytester, "nodeport.json")
    assert np_["rule_lines"]["iptables-nft"] == 1 and np_["iptables_lines"] == sum(v for v in np_["rule_lines"].values() if isinstance(v, int)) == 2
