"""``cilium-dbg map list`` and ``cilium-dbg endpoint get <id> [-o json]``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .common import load_json, row_matches
from .errors import ParseError

_MAP_HEADER = re.compile(r"Name\s+Num entries\s+Num errors\s+Cache enabled\s*")
_MAP_ROW = re.compile(r"(\S+)\s+(\d+)\s+(\d+)\s+(true|false)\s*")


@dataclass(frozen=True)
class MapInfo:
    name: str
    entries: int
    errors: int
    cache_enabled: bool


def parse_map_list(text: str) -> list[MapInfo]:
    return [MapInfo(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) == "true")
            for _, _, m in row_matches(text, "map-list", _MAP_ROW, skip=_MAP_HEADER.fullmatch)]


def policy_map_name(endpoint_id: int, cilium_minor: tuple[int, int]) -> str:
    """The per-endpoint policy map: ``cilium_policy_00123`` (1.16), ``cilium_policy_v2_00123`` (1.17+)."""
    return f"cilium_policy_v2_{endpoint_id:05d}" if cilium_minor >= (1, 17) else f"cilium_policy_{endpoint_id:05d}"


@dataclass(frozen=True)
class EndpointInfo:
    id: int
    interface_name: str | None
    interface_index: int | None
    container_interface: str | None
    identity: int | None
    state: str | None
    pod_name: str | None
    namespace: str | None
    ipv4: str | None
    ipv6: str | None


def parse_endpoint_json(text: str) -> list[EndpointInfo]:
    """``endpoint get`` always prints a JSON array of ``models.Endpoint``."""
    data = load_json(text, "endpoint-json")
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ParseError("endpoint-json", 1, str(data)[:80], "expected a JSON array of endpoints")
    out = []
    for i, ep in enumerate(data):
        if not isinstance(ep, dict) or "id" not in ep:
            raise ParseError("endpoint-json", 1, json.dumps(ep)[:120], f"endpoint {i} has no id")
        st = ep.get("status") or {}
        net = st.get("networking") or {}
        ext = st.get("external-identifiers") or {}
        addressing = (net.get("addressing") or [{}])[0]
        pod = ext.get("k8s-pod-name") or ext.get("pod-name")
        if pod and "/" in pod and not ext.get("k8s-namespace"):
            ns, pod = pod.split("/", 1)
        else:
            ns = ext.get("k8s-namespace")
        out.append(
            EndpointInfo(
                id=int(ep["id"]),
                interface_name=net.get("interface-name"),
                interface_index=net.get("interface-index"),
                container_interface=net.get("container-interface-name"),
                identity=(st.get("identity") or {}).get("id"),
                state=st.get("state"),
                pod_name=pod,
                namespace=ns,
                ipv4=addressing.get("ipv4"),
                ipv6=addressing.get("ipv6"),
            )
        )
    return out
