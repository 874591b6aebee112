"""The fault rows of the ICMP-errors property: each of its faults (pytest_kpr.testing, property='ICMP errors') and what it
must fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

IE = "test_icmp_errors.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
    ("icmp-error-not-revnatted", ("icmp_errors",), "faults=Faults(icmp_error_not_revnatted=True)",
     {IE + "test_a_fragmentation_needed_error_reaches_the_client_reverse_translated"},
     ["*ICMP errors (fragmentation needed through a SNATed NodePort): no ICMP error came back to 172.18.0.1:* for its datagram to "
      "172.18.0.3:* (timeout), though ie-backend on fake-worker2 answered it with fragmentation needed*"]),
    ("icmp-error-inner-untranslated", ("icmp_errors",), "faults=Faults(icmp_error_inner_untranslated=True)",
     {IE + "test_a_fragmentation_needed_error_reaches_the_client_reverse_translated"},
     ["*ICMP errors (fragmentation needed through a SNATed NodePort): the error carries 10.244.1.*:32768 -> 10.244.2.*:7000, not the "
      "datagram as sent, 172.18.0.1:* -> 172.18.0.3:*: its inner header was not reverse-translated*"]),
]
