"""The fault rows of the headless property: each of its faults (pytest_kpr.testing, property='headless') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

HL = "test_headless.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("headless-label-ignored", ("headless",), "faults=Faults(headless_label_ignored=True)",
     {HL + "test_a_clusterip_service_labelled_headless_gets_no_frontend", HL + "test_a_nodeport_service_labelled_headless_gets_no_nodeport"},
     ["*headless (ClusterIP): fake-* lists 1 frontend for kpr-suite-headless-*/hl-clusterip, a ClusterIP Service labelled "
      "service.kubernetes.io/headless: 10.96.*:80/TCP ClusterIP*",
      "*headless (NodePort): fake-* lists * frontends for kpr-suite-headless-*/hl-nodeport, a NodePort Service labelled "
      "service.kubernetes.io/headless: *"]),
    ("headless-nodeport-programmed", ("headless",), "faults=Faults(headless_nodeport_programmed=True)",
     {HL + "test_a_nodeport_service_labelled_headless_gets_no_nodeport"},
     ["*headless (NodePort): fake-* lists 1 frontend for kpr-suite-headless-*/hl-nodeport, a NodePort Service labelled "
      "service.kubernetes.io/headless: 0.0.0.0:3*/TCP NodePort*"]),
]
