"""The fault rows of the forwarding-mode property: each of its faults (pytest_kpr.testing, property='forwarding mode') and
what it must fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

FM = "test_forwarding_mode.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    # the dsr profile (the agents' own mode DSR): fm-snat is forwarded in DSR too
    ("mode-annotation-ignored", ("forwarding_mode",), "nodeport_mode='DSR', routing_mode='Native', lb_mode_annotation=True, "
     "faults=Faults(mode_annotation_ignored=True)",
     {FM + "test_a_service_annotated_snat_is_source_natted"},
     ["*forwarding mode (service.cilium.io/forwarding-mode: snat): fm-snat (forwarding-mode snat): the backend saw 172.18.0.1 (the "
      "client's address), expected 172.18.0.3 (the receiving node's InternalIP: SNAT mode in native routing*"]),
    # the agents' own mode SNAT, annotations on: fm-dsr is SNATed
    ("mode-annotation-ignored-under-snat", ("forwarding_mode",), "routing_mode='Native', lb_mode_annotation=True, "
     "faults=Faults(mode_annotation_ignored=True)",
     {FM + "test_a_service_annotated_dsr_keeps_the_clients_address"},
     ["*forwarding mode (service.cilium.io/forwarding-mode: dsr): fm-dsr (forwarding-mode dsr): the backend saw 172.18.0.3 (the "
      "receiving node's InternalIP), expected 172.18.0.1 (the client: DSR mode*"]),
]
