"""The cilium-agent on a node: finds its pod, knows its CLI's name, runs commands, returns typed results.

Commands go through the kubernetes exec stream. Transport errors (:class:`InfraError`) are retried
within a bound; a command's own exit code is a result and is never retried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from . import batch
from ..cluster import agents as _where
from ..cluster.agents import AGENT_CONTAINER, NoAgent, agent_pods, locate_agents
from ..core.errors import CommandError, InfraError
from ..k8s.api import ExecResult, KubeAPI
from ..parse import (
    BpfAttachment,
    CtEntry,
    EndpointInfo,
    Frontend,
    HealthStatus,
    LbEntry,
    MapInfo,
    Service,
    StatusJSON,
    StatusText,
    TcFilter,
    VersionInfo,
    parse_bpftool_net,
    parse_ct_list,
    parse_db_health,
    parse_endpoint_json,
    parse_frontends_table,
    parse_lb_list,
    parse_map_list,
    parse_service_list,
    parse_service_list_json,
    parse_status_json,
    parse_status_text,
    parse_tc_filter,
    parse_version,
)
from ..parse.bpftool_map import AffinityEntry, affinity_entries, parse_map_dump_json
from ..parse.metrics import parse_bpf_metrics_list
from ..parse.config import AgentConfig, parse_config
from ..parse.statedb import parse_lb_maps_dump
from ..core.wait import retrying
from ..rules.datapath import AFFINITY_MAP_PATH

STATUS = ("status",)
STATUS_VERBOSE = ("status", "--verbose")
DB_HEALTH = ("shell", "--", "db/show", "health")
FRONTENDS = ("shell", "--", "db/show", "frontends")
BATCH_MARK = batch.BATCH_MARK
#: ``cilium`` was renamed ``cilium-dbg`` in 1.15; images kept a ``cilium`` alias for a while.
BINARIES = ("cilium-dbg", "cilium")


@dataclass
class Agent:
    """One node's agent. ``binary`` is detected on first use (``cilium-dbg``, else ``cilium``)."""

    kube: KubeAPI
    node: str
    pod: str
    exec_timeout: float = 60.0
    retry_timeout: float = 30.0
    binary: str | None = None
    _binary_checked: bool = field(default=False, repr=False)

    @classmethod
    def on_node(cls, kube: KubeAPI, node: str, **kw: float) -> "Agent":
        for p in agent_pods(kube):
            if p.get("spec", {}).get("nodeName") == node and p.get("status", {}).get("phase") == "Running":
                return cls(kube, node, p["metadata"]["name"], **kw)  # type: ignore[arg-type]
        raise NoAgent(f"no running cilium-agent pod on node {node} ({_where.CILIUM_NAMESPACE}, {_where.AGENT_SELECTOR})")

    def exec(self, argv: Sequence[str], timeout: float | None = None) -> ExecResult:
        """Run ``argv`` in the agent container, retrying only transport failures."""
        for attempt in retrying(self.retry_timeout, assertions=False):
            with attempt:
                return self.kube.exec(
                    _where.CILIUM_NAMESPACE, self.pod, list(argv), container=AGENT_CONTAINER, timeout=timeout or self.exec_timeout
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def detect_binary(self) -> str:
        if self.binary is None:
            for name in BINARIES:
                r = self.exec([name, "version"])
                if r.returncode != 127:
                    self.binary = name
                    break
            else:
                raise self._no_binary()
        return self.binary

    def _no_binary(self) -> NoAgent:
        return NoAgent(f"neither cilium-dbg nor cilium runs in pod {_where.CILIUM_NAMESPACE}/{self.pod}")

    def run(self, *args: str, timeout: float | None = None) -> ExecResult:
        """``cilium-dbg <args>`` (or ``cilium``); raises :class:`CommandError` on a non-zero exit. The binary's
        name is learnt from the first command itself (exit 127: try the old name), not from an extra exec."""
        if self.binary is not None:
            return self.exec([self.binary, *args], timeout=timeout).check()
        for name in BINARIES:
            r = self.exec([name, *args], timeout=timeout)
            if r.returncode != 127:
                self.binary = name
                return r.check()
        raise self._no_binary()

    def run_many(self, *commands: Sequence[str], timeout: float | None = None) -> list[ExecResult]:
        """Several ``cilium-dbg`` commands in one exec (one ``sh -c``: the agent image's rootfs is Ubuntu,
        cilium/cilium images/runtime/Dockerfile), each with its own stdout, stderr and exit status, split at
        a marker line; an exec stream costs 0.1-0.5 s, a command inside it almost nothing. A command that
        did not run (the shell died) comes back with exit status -1 and says so. The binary's name is learnt
        as in :meth:`run`."""
        for name in ([self.binary] if self.binary is not None else list(BINARIES)):
            results = self._run_many(name, commands, timeout)
            if self.binary is not None or results[0].returncode != 127:
                self.binary = name
                return results
        raise self._no_binary()

    def _run_many(self, binary: str, commands: Sequence[Sequence[str]], timeout: float | None) -> list[ExecResult]:
        return self.exec_many(*[(binary, *args) for args in commands], timeout=timeout)

    def exec_many(self, *argvs: Sequence[str], timeout: float | None = None) -> list[ExecResult]:
        """Any commands of the agent container (bpftool, tc, ...) in one exec (:mod:`pytest_kpr.observe.batch`)."""
        return batch.split(argvs, self.exec(["sh", "-c", batch.script(argvs)], timeout=timeout))

    # -- typed commands -----------------------------------------------------------------------------

    def status(self) -> StatusJSON:
        return parse_status_json(self.run("status", "-o", "json").stdout)

    def version(self) -> VersionInfo:
        return parse_version(self.run("version").stdout)

    def config(self) -> AgentConfig:
        return parse_config(self.run("config", "-a").stdout)

    def status_text(self, verbose: bool = True) -> StatusText:
        """``status --verbose``: the KPR details (Socket LB Coverage, ...) as the agent prints them."""
        return parse_status_text(self.run(*(STATUS_VERBOSE if verbose else STATUS)).stdout)

    def services(self) -> list[Service]:
        """``service list -o json``: every frontend with its backends (the stable form to read)."""
        return parse_service_list_json(self.run("service", "list", "-o", "json").stdout)

    def services_text(self) -> list[Service]:
        return parse_service_list(self.run("service", "list").stdout, strict=True)

    def lb_entries(self) -> list[LbEntry]:
        """``bpf lb list``: the BPF service map, one entry per (frontend, slot)."""
        return parse_lb_list(self.run("bpf", "lb", "list").stdout)

    def conntrack(self, version: tuple[int, int] | None = None) -> list[CtEntry]:
        """``bpf ct list global``, straight from the tool: a cut-off line is an error. With the agent's
        Cilium minor, every line must carry that version's tail (IfIndex / NatPort)."""
        return parse_ct_list(self.run("bpf", "ct", "list", "global").stdout, strict=True, version=version)

    def maps(self) -> list[MapInfo]:
        return parse_map_list(self.run("map", "list").stdout)

    def endpoint(self, endpoint_id: int) -> EndpointInfo:
        (ep,) = parse_endpoint_json(self.run("endpoint", "get", str(endpoint_id), "-o", "json").stdout)
        return ep

    # The agent container ships bpftool and tc and runs in the host network namespace, which kind
    # nodes (no bpftool) and minimal node images lack: BPF attachments are read from here.

    def device_view(self, device: str) -> tuple[list[BpfAttachment], list[TcFilter], list[MapInfo]]:
        """A host-side device's BPF attachments (bpftool), its tc ingress filters and the agent's BPF maps,
        read in one exec."""
        net, tc, maps = self.exec_many(["bpftool", "net", "show", "dev", device], ["tc", "filter", "show", "dev", device, "ingress"],
                                       [self.detect_binary(), "map", "list"])
        return (parse_bpftool_net(net.check().stdout), parse_tc_filter(tc.check().stdout), parse_map_list(maps.check().stdout))

    def bpf_attachments(self, device: str) -> list[BpfAttachment]:
        return parse_bpftool_net(self.exec(["bpftool", "net", "show", "dev", device]).check().stdout)

    def tc_filters(self, device: str, direction: str = "ingress") -> list[TcFilter]:
        return parse_tc_filter(self.exec(["tc", "filter", "show", "dev", device, direction]).check().stdout)

    def affinity_map(self, family: str) -> list[AffinityEntry]:
        """The node's per-packet session-affinity map of ``family`` (``bpftool map dump pinned <tc/globals>/cilium_lb4_affinity``:
        rules.datapath.SRC_AFFINITY_MAP), decoded."""
        out = self.exec(["bpftool", "map", "dump", "pinned", AFFINITY_MAP_PATH[family], "-j"]).check().stdout
        return affinity_entries(parse_map_dump_json(out), family)

    def health(self) -> list[HealthStatus]:
        """``shell -- db/show health``: every module's health with its Error text (the conflict error lives here)."""
        return parse_db_health(self.run(*DB_HEALTH).stdout)

    def config_file(self, path: str) -> str | None:
        """One key of the agent's resolved configuration (``cat /tmp/cilium/config-map/<key>``), stripped; None when the
        config map does not hold it (Cilium's default then applies)."""
        r = self.exec(["cat", path])
        return r.stdout.strip() if r.ok else None

    def read(self, *views: str) -> list[Any]:
        """Several views (names in :data:`VIEWS`) read in one exec (:meth:`run_many`), each parsed by its own
        parser, in the order asked. A command that failed raises :class:`CommandError` naming it."""
        results = self.run_many(*(VIEWS[v][0] for v in views))
        return [VIEWS[v][1](r.check().stdout) for v, r in zip(views, results, strict=True)]

    def health_snapshot(self) -> tuple[StatusText, list[HealthStatus], StatusText]:
        """Plain ``status``, ``db/show health`` and ``status --verbose`` read together, in one exec."""
        plain, db, verbose = self.read("status_text", "db_health", "status_verbose")
        return plain, db, verbose

    def frontends(self) -> list[Frontend]:
        """``shell -- db/show frontends`` (new LB control plane, 1.18+): Status/Since/Error per frontend."""
        return parse_frontends_table(self.run(*FRONTENDS).stdout)


#: what :meth:`Agent.read` can read in one exec: name -> (cilium-dbg arguments, parser)
#: the datapath's forward and drop counters (parse.metrics)
METRICS = ("bpf", "metrics", "list")

VIEWS: dict[str, tuple[tuple[str, ...], Callable[[str], Any]]] = {
    "status_text": (STATUS, parse_status_text),
    "status_verbose": (STATUS_VERBOSE, parse_status_text),
    "status_json": (("status", "-o", "json"), parse_status_json),
    "db_health": (DB_HEALTH, parse_db_health),
    "frontends": (FRONTENDS, parse_frontends_table),
    "services": (("service", "list", "-o", "json"), parse_service_list_json),
    "lb": (("bpf", "lb", "list"), parse_lb_list),
    "version": (("version",), parse_version),
    "maps_dump": (("shell", "--", "lb/maps-dump"), parse_lb_maps_dump),
    "config": (("config", "-a"), parse_config),
    "metrics": (METRICS, parse_bpf_metrics_list),
}


def agents(kube: KubeAPI, **kw: float) -> list[Agent]:
    """An :class:`Agent` for every agent pod that runs on a node."""
    out = []
    for p in agent_pods(kube):
        node = p.get("spec", {}).get("nodeName")
        if node:
            out.append(Agent(kube, node, p["metadata"]["name"], **kw))  # type: ignore[arg-type]
    return out


__all__ = ["Agent", "CommandError", "InfraError", "NoAgent", "agent_pods", "agents", "locate_agents"]
