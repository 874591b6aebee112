"""The fault rows of the iptables property: each of its faults (pytest_kpr.testing, property='iptables') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

IPT = "test_iptables.py::"
NP = "test_nodeport.py::"
HP = "test_hostport.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
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
    ("unreadable-rule-view", ("hostport", "iptables", "nodeport"), "faults=Faults(unreadable_rule_view='iptables-legacy')",
     {IPT + "test_every_node_can_be_read_in_each_rule_view", NP + "test_no_rule_names_the_nodeport", HP + "test_no_rule_names_the_host_port"},
     ["*iptables: the rule views are not all readable*fake-worker: the iptables-legacy view could not be read*",
      "*NodePort: rules name the port*the iptables-legacy view could not be read*"]),
]
