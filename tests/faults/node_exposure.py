"""The fault rows of the node-exposure property: each of its faults (pytest_kpr.testing, property='node exposure') and what
it must fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

NX = "test_node_exposure.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("node-exposure-ignored", ("node_exposure",), "faults=Faults(node_exposure_ignored=True)",
     {NX + "test_a_node_selector_annotation_installs_the_service_only_on_the_nodes_it_selects",
      NX + "test_a_node_annotation_no_node_carries_installs_the_service_nowhere"},
     ["*node exposure (service.cilium.io/node-selector): kpr-suite-node-exposure-*/nx-here (service.cilium.io/node-selector: "
      "kubernetes.io/hostname=fake-worker) selects fake-worker, yet fake-control-plane, fake-worker2 list its frontends*",
      "*node exposure (service.cilium.io/node): kpr-suite-node-exposure-*/nx-nowhere (service.cilium.io/node: kpr-*) selects no node, "
      "yet fake-control-plane, fake-worker, fake-worker2 list its frontends*"]),
    # installed where it is not exposed and not where it is: the selected node does not serve it either
    ("node-exposure-inverted", ("node_exposure",), "faults=Faults(node_exposure_inverted=True)",
     {NX + "test_a_node_selector_annotation_installs_the_service_only_on_the_nodes_it_selects",
      NX + "test_a_node_annotation_no_node_carries_installs_the_service_nowhere"},
     ["*node exposure (service.cilium.io/node-selector): * is exposed on fake-worker, yet the agent there lists no frontend of it*"
      "a pod on the selected node could not reach nx-here: timeout*"]),
]
