"""The fault rows of the kube-proxy property: each of its faults (pytest_kpr.testing, property='kube-proxy') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

KP = "test_kube_proxy.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
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
]
