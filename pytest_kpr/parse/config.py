"""``cilium-dbg config -a``: read-only (DaemonConfig fields) and read-write options."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from .common import numbered
from .errors import ParseError

_HEADER = re.compile(r"^#{4,} Read-(only|write) configurations #{4,}$")
_KV = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)\s*: ?(.*)$")
_NESTED_KV = re.compile(r"^\t([^\t:]+?)\s*: ?(.*)$")
_NESTED_HEAD = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)$")


@dataclass(frozen=True)
class AgentConfig:
    read_only: Mapping[str, str]
    read_write: Mapping[str, str]
    nested: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def get(self, key: str, default: str | None = None) -> str | None:
        """Look a key up the way ``cilium-dbg config get`` does: case-insensitive, ignoring non-word characters."""
        want = re.sub(r"\W", "", key).lower()
        for table in (self.read_only, self.read_write):
            for k, v in table.items():
                if re.sub(r"\W", "", k).lower() == want:
                    return v
        return default

    @property
    def service_no_backend_response(self) -> str | None:
        return self.get("ServiceNoBackendResponse")

    @property
    def external_ip_mitigation(self) -> bool | None:
        """Whether the CVE-2020-8554 ExternalIP mitigation is on (``DisableExternalIPMitigation`` false);
        None when the agent does not print the option (cilium/cilium pkg/option/config.go)."""
        v = self.get("DisableExternalIPMitigation")
        if v is None:
            return None
        return v.strip().lower() not in ("true", "enabled")


def parse_config(text: str) -> AgentConfig:
    ro: dict[str, str] = {}
    rw: dict[str, str] = {}
    nested: dict[str, dict[str, str]] = {}
    section: dict[str, str] | None = None
    current_nested: dict[str, str] | None = None
    for lineno, raw in numbered(text, "config"):
        line = raw.rstrip(" \r")
        if not line.strip():
            continue
        m = _HEADER.match(line.strip())
        if m:
            section = ro if m.group(1) == "only" else rw
            current_nested = None
            continue
        if section is None:
            raise ParseError("config", lineno, raw, "option before the 'Read-only configurations' header")
        m = _NESTED_KV.match(line)
        if m:
            if current_nested is None:
                raise ParseError("config", lineno, raw, "indented value without a parent key")
            current_nested[m.group(1).strip()] = m.group(2).strip()
            continue
        m = _KV.match(line)
        if m:
            section[m.group(1)] = m.group(2).strip()
            current_nested = None
            continue
        m = _NESTED_HEAD.match(line)
        if m:
            section[m.group(1)] = ""
            current_nested = nested.setdefault(m.group(1), {})
            continue
        raise ParseError("config", lineno, raw)
    if section is None:
        raise ParseError("config", 1, text.splitlines()[0] if text.strip() else "", "no configuration header")
    return AgentConfig(read_only=ro, read_write=rw, nested=nested)
