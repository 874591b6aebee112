"""The hairpin judgement (pytest_kpr.judge.hairpin) as a table: no root, no cluster."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_kpr.judge.hairpin import hairpin_reach_problems, hairpin_source_problems
from pytest_kpr.judge.hairpin import HairpinObservation

OK = HairpinObservation("IPv4", "10.96.0.18:80", "hairpin", "10.244.1.13", "socket", "Full", "connected", "10.244.1.13:8080", 200,
                        "hairpin", "10.244.1.13", "10.244.1.13", "socket LB connects the pod straight to itself (no NAT)",
                        "cilium/cilium bpf/bpf_sock.c; more")
PP = replace(OK, plane="per-packet", coverage="Hostns-only", seen="169.254.42.1", expected_source="169.254.42.1",
             why="bpf_lxc source-NATs a packet whose backend is its own sender to the service loopback address")


@pytest.mark.parametrize(("h", "want"), [
    (OK, []),
    (PP, []),
    (replace(OK, verdict="timeout", http_code=None),
     ["hairpin could not reach its own Service 10.96.0.18:80 (socket plane): connect timeout, HTTP nothing"]),
    (replace(PP, verdict="timeout", http_code=None),
     ["hairpin could not reach its own Service 10.96.0.18:80 (per-packet plane): connect timeout, HTTP nothing; per packet a "
      "packet from a pod to itself must be source-NATed to the loopback address, else the kernel drops it as a martian"]),
    (replace(OK, http_code=503), ["hairpin could not reach its own Service 10.96.0.18:80 (socket plane): connect connected, HTTP 503"]),
    (replace(OK, served_by=None), ["the request to 10.96.0.18:80 was not served by hairpin (served by None)"]),
])
def test_hairpin_reach_problems(h: HairpinObservation, want: list[str]) -> None:
    assert hairpin_reach_problems(h) == want


@pytest.mark.parametrize(("h", "want"), [
    (OK, []),
    (PP, []),
    (replace(OK, seen=None), ["hairpin logged no request from itself to 10.96.0.18:80, so the source it saw is unknown"]),
    (replace(OK, seen="169.254.42.1"),
     ["hairpin saw its own request to 10.96.0.18:80 come from 169.254.42.1, expected 10.244.1.13 (socket plane: socket LB "
      "connects the pod straight to itself (no NAT)) [cilium/cilium bpf/bpf_sock.c]"]),
    (replace(PP, seen="10.244.1.13"),
     ["hairpin saw its own request to 10.96.0.18:80 come from 10.244.1.13, expected 169.254.42.1 (per-packet plane: bpf_lxc "
      "source-NATs a packet whose backend is its own sender to the service loopback address) [cilium/cilium bpf/bpf_sock.c]"]),
])
def test_hairpin_source_problems(h: HairpinObservation, want: list[str]) -> None:
    assert hairpin_source_problems(h) == want
