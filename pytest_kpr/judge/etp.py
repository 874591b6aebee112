"""externalTrafficPolicy=Local and the client's address: local backends only, the health-check NodePort, who the backend sees.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import Any, Mapping


def etp_reach_problems(local: "Mapping[str, str]", cluster: "Mapping[str, str]", with_backend: str) -> list[str]:
    """From outside (a raw SYN that arrives on each node's native device): the eTP=Local Service is served by the node
    with its backend and by no other (datapath.SRC_ETP_SCOPES: the external scope holds local backends only), while the
    eTP=Cluster Service on the same backend is served by every node. ``local``/``cluster``: node -> the probe's verdict
    (``accepted`` = a SYN-ACK came back)."""
    out = []
    if local.get(with_backend) != "accepted":
        out.append(f"the node with the backend ({with_backend}) did not serve it from outside: {local.get(with_backend)}")
    out += [f"{node}, which has no local backend, served it from outside ({v}): traffic was forwarded to another node's backend"
            for node, v in sorted(local.items()) if node != with_backend and v == "accepted"]
    out += [f"externalTrafficPolicy=Cluster on the same backend was not served by {node} ({v})"
            for node, v in sorted(cluster.items()) if v != "accepted"]
    return out


def health_check_problems(answers: "Mapping[str, tuple[int, Any]]", local_backends: "Mapping[str, int]", service: tuple[str, str]) -> list[str]:
    """The health-check NodePort (datapath.SRC_HEALTHSERVER): every node answers with its own count of local endpoints
    (``local_backends``: datapath.local_endpoint_count, one per active backend address and port on the node), 200 when
    it has one, 503 when not, naming the Service. ``answers``: node -> (HTTP code, parsed JSON body or None)."""
    out = []
    for node, (code, body) in sorted(answers.items()):
        want = local_backends.get(node, 0)
        want_code = 200 if want else 503
        got = body.get("localEndpoints") if isinstance(body, dict) else None
        if code != want_code or got != want:
            out.append(f"{node} answered HTTP {code or 'nothing'} with localEndpoints {got}, expected {want_code} with {want} "
                       f"(its own backends' addresses and ports)")
        elif (body.get("service") or {}) != {"namespace": service[0], "name": service[1]}:
            out.append(f"{node} answered for {body.get('service')}, not {service[0]}/{service[1]}")
    return out


def client_address_problems(seen: str | None, client: str, node_ip: str, expect: str, why: str, internal_ip: str = "") -> list[str]:
    """The address a backend logged for a request from outside, against the sourced rule (datapath.backend_sees):
    ``expect`` is ``client`` (the runner's own address), ``node`` (the receiving node's InternalIP, SNAT in native
    routing) or ``cilium-internal-ip`` (the receiving node's cilium_host address ``internal_ip``, SNAT in tunnel routing)."""
    names = {"client": "the client", "node": "the receiving node's InternalIP", "cilium-internal-ip": "the receiving node's CiliumInternalIP"}
    want = {"client": client, "node": node_ip, "cilium-internal-ip": internal_ip}[expect]
    if seen is None:
        return ["no backend logged the request, so what it saw is unknown"]
    if not want:
        return [f"the backend saw {seen}, but {names[expect]} is unknown (CiliumNode not readable), so the SNAT rule cannot be checked"]
    if seen != want:
        by_addr = {a: n for n, a in ((names["cilium-internal-ip"], internal_ip), (names["node"], node_ip), ("the client's address", client)) if a}
        name = by_addr.get(seen, "neither the client's nor the node's address")
        return [f"the backend saw {seen} ({name}), expected {want} ({names[expect]}: {why})"]
    return []


def cluster_ip_problems(verdict: str) -> list[str]:
    """A pod on a node without a local backend reaches the Local Service's ClusterIP: externalTrafficPolicy does not
    apply to in-cluster traffic (datapath.SRC_ETP_SCOPES: the ClusterIP keeps every backend)."""
    return [] if verdict == "connected" else [f"{verdict}; externalTrafficPolicy must not apply to in-cluster traffic"]


def outside_answer_problems(http_code: int | None, node_ip: str) -> list[str]:
    """The node with the backend answers the runner's request to the Local Service's NodePort with HTTP 200."""
    return [] if http_code == 200 else [f"{node_ip} (with the backend) answered {http_code}"]
