"""The fault rows of the hostPort property: each of its faults (pytest_kpr.testing, property='hostPort') and what it must
fail (tests/test_faults.py runs them; its docstring says what a row is)."""

from __future__ import annotations

HP = "test_hostport.py::"

ROWS: list[tuple[str, tuple[str, ...], str, set[str], list[str]]] = [
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
    ("ipv6-host-port-not-served", ("hostport",), "ip_families=('IPv4', 'IPv6'), faults=Faults(hostport_unserved='IPv6')",
     {HP + "test_the_host_port_answers_on_the_nodes_address[IPv6]", HP + "test_the_agent_lists_a_host_port_frontend[IPv6]"},
     ["*hostPort: [[]fc00:f853:ccd:e793::3]:18780 from the node: connect refused, HTTP 0 (curl exit 7)*",
      "*hostPort: on fake-worker: the agent lists no IPv6 HostPort frontend on port 18780 (only [[]'HostPort 0.0.0.0:18780/TCP'*"]),
]
