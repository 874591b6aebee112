"""The the profile judgement (pytest_kpr.judge.profiles), branch by branch, on hand-made observations: no root, no pytester, no cluster."""

from __future__ import annotations

import pytest



@pytest.mark.parametrize(("profile", "facts", "want"), [
    ("default", {"socket_lb_coverage": "Hostns-only"}, []),
    ("hostns-only", {"socket_lb_coverage": "Hostns-only"}, []),
    ("hostns-only", {"socket_lb_coverage": "Full"},
     ["the profile 'hostns-only' promises socket_lb_coverage 'Hostns-only', but the agents report 'Full'"]),
    ("dsr", {"nodeport_mode": "SNAT", "routing_mode": "Native"},
     ["the profile 'dsr' promises nodeport_mode 'DSR', but the agents report 'SNAT'"]),
    ("dsr", {"nodeport_mode": "Hybrid", "routing_mode": "Tunnel"},
     ["the profile 'dsr' promises nodeport_mode 'DSR', but the agents report 'Hybrid'",
      "the profile 'dsr' promises routing_mode 'Native', but the agents report 'Tunnel'"]),
    ("small-maps", {"lb_map_max": 65536}, ["the profile 'small-maps' promises lb_map_max 512, but the agents report 65536"]),
    ("netkit", {"datapath_mode": "netkit", "routing_mode": "Native"}, []),
    ("netkit", {"datapath_mode": "veth", "routing_mode": "Native"},
     ["the profile 'netkit' promises datapath_mode 'netkit', but the agents report 'veth'"]),
    ("netkit", {"datapath_mode": "", "routing_mode": "Native"},  # an agent that reports no datapath mode has not shown it
     ["the profile 'netkit' promises datapath_mode 'netkit', but the agents report ''"]),
    ("xdp", {"xdp_acceleration": "Native", "routing_mode": "Native"}, []),
    ("xdp", {"xdp_acceleration": "Disabled", "routing_mode": "Tunnel"},
     ["the profile 'xdp' promises xdp_acceleration 'Native', but the agents report 'Disabled'",
      "the profile 'xdp' promises routing_mode 'Native', but the agents report 'Tunnel'"]),
    ("xdp", {"xdp_acceleration": "Best-Effort", "routing_mode": "Native"},  # best-effort is another setting, not native
     ["the profile 'xdp' promises xdp_acceleration 'Native', but the agents report 'Best-Effort'"]),
    ("no-such-profile", {}, []),
])
def test_a_profile_is_judged_by_what_the_agents_report(profile: str, facts: dict, want: list[str]) -> None:
    from types import SimpleNamespace

    from pytest_kpr.judge.profiles import profile_problems

    assert profile_problems(profile, SimpleNamespace(**facts)) == want  # type: ignore[arg-type]
