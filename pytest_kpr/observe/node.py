"""A node's host namespace: iptables, nft, sockets, BPF attachments, curl. Typed results only.

Commands run through the cluster's :class:`~pytest_kpr.cluster.provider.NodeRunner` (``docker exec``
on kind, a privileged host-network pod elsewhere). Transport failures are retried within a bound;
a command's exit status is a result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from . import batch
from ..cluster.provider import NodeRunner
from ..core.errors import InfraError
from ..k8s.api import ExecResult
from ..parse import (
    BpfAttachment,
    RuleDump,
    Socket,
    TcFilter,
    parse_bpftool_net,
    parse_iptables_save,
    parse_nft_ruleset,
    parse_ss,
    parse_tc_filter,
)
from ..parse.node import CURL_WRITE_OUT, ConntrackEntry, HttpResult, parse_conntrack, parse_curl
from ..core.wait import retrying

#: iptables-save variants: the default one (whatever /usr/sbin/iptables-save points at), and each backend.
IPTABLES_SAVE = {"default": "iptables-save", "nft": "iptables-nft-save", "legacy": "iptables-legacy-save"}
#: their IPv6 twins (kube-proxy writes an IPv6 Service's rules there)
IP6TABLES_SAVE = {"nft": "ip6tables-nft-save", "legacy": "ip6tables-legacy-save"}


@dataclass
class Node:
    runner: NodeRunner
    name: str
    exec_timeout: float = 60.0
    retry_timeout: float = 30.0

    def run(self, *argv: str, timeout: float | None = None) -> ExecResult:
        for attempt in retrying(self.retry_timeout, on=(InfraError,), assertions=False):
            with attempt:
                return self.runner.run(self.name, list(argv), timeout=timeout or self.exec_timeout)
        raise AssertionError("unreachable")  # pragma: no cover

    def run_many(self, *commands: Sequence[str], timeout: float | None = None) -> list[ExecResult]:
        """Several commands in one exec (:mod:`pytest_kpr.observe.batch`), one result each."""
        return batch.split(commands, self.run("sh", "-c", batch.script(commands), timeout=timeout))

    def iptables(self, backend: str = "default") -> RuleDump | None:
        """``iptables-save`` of a backend (``default``, ``nft``, ``legacy``); None if that tool is not installed."""
        r = self.run(IPTABLES_SAVE[backend])
        if r.returncode == 127:
            return None
        return parse_iptables_save(r.check().stdout)

    def nft(self) -> RuleDump | None:
        r = self.run("nft", "list", "ruleset")
        if r.returncode == 127:
            return None
        return parse_nft_ruleset(r.check().stdout)

    def rule_dumps(self) -> dict[str, RuleDump | None]:
        """Every view of the node's rules (each can hide the others'): ``iptables-nft``, ``iptables-legacy``, their IPv6
        twins ``ip6tables-nft`` and ``ip6tables-legacy``, and ``nft`` (every family); None for a view whose tool is
        missing, so a check can say it was not read. One exec."""
        return self.rules_and_listeners(None)[0]

    def rules_and_listeners(self, port: int | None) -> tuple[dict[str, RuleDump | None], list[Socket]]:
        """:meth:`rule_dumps`, and with ``port`` the TCP listeners on it (``ss -Htln``), read in one exec."""
        extra = [["ss", "-Htln", f"sport = :{port}"]] if port is not None else []
        dumps, ss = self._rules_and(extra)
        return dumps, (parse_ss(ss[0].check().stdout) if ss else [])

    def rules_and_ipvs(self) -> "NodeRules":
        """:meth:`rule_dumps` and :meth:`ipvs_services`, read in one exec: what a node shows of kube-proxy."""
        dumps, (ipvs,) = self._rules_and([["cat", "/proc/net/ip_vs"]])
        return NodeRules(dumps, _ipvs(ipvs))

    def _rules_and(self, extra: list[list[str]]) -> tuple[dict[str, RuleDump | None], list[ExecResult]]:
        commands: list[list[str]] = [[IPTABLES_SAVE["nft"]], [IPTABLES_SAVE["legacy"]], [IP6TABLES_SAVE["nft"]], [IP6TABLES_SAVE["legacy"]],
                                     ["nft", "list", "ruleset"], *extra]
        nft_save, legacy_save, nft6_save, legacy6_save, nft, *rest = self.run_many(*commands)

        def dump(r: ExecResult, parse: Callable[[str], RuleDump]) -> RuleDump | None:
            return None if r.returncode == 127 else parse(r.check().stdout)

        dumps = {"iptables-nft": dump(nft_save, parse_iptables_save), "iptables-legacy": dump(legacy_save, parse_iptables_save),
                 "ip6tables-nft": dump(nft6_save, parse_iptables_save), "ip6tables-legacy": dump(legacy6_save, parse_iptables_save),
                 "nft": dump(nft, parse_nft_ruleset)}
        return dumps, rest

    def listening(self, port: int | None = None) -> list[Socket]:
        """TCP listeners (``ss -Htln``), on one port if given."""
        args = ["ss", "-Htln"] + ([f"sport = :{port}"] if port is not None else [])
        return parse_ss(self.run(*args).check().stdout)

    def connections(self, port: int | None = None) -> list[Socket]:
        """Established TCP sockets (``ss -Htn``), with local port ``port`` if given."""
        args = ["ss", "-Htn"] + ([f"sport = :{port}"] if port is not None else [])
        return parse_ss(self.run(*args).check().stdout)

    def conntrack(self) -> list[ConntrackEntry]:
        """The kernel's conntrack table (``conntrack -L``)."""
        return parse_conntrack(self.run("conntrack", "-L").check().stdout)

    def bpf_attachments(self, device: str) -> list[BpfAttachment]:
        return parse_bpftool_net(self.run("bpftool", "net", "show", "dev", device).check().stdout)

    def tc_filters(self, device: str, direction: str = "ingress") -> list[TcFilter]:
        return parse_tc_filter(self.run("tc", "filter", "show", "dev", device, direction).check().stdout)

    def http_get(self, url: str, max_time: float = 5.0) -> HttpResult:
        """``curl`` from the node: exit code, HTTP status and time, even when it fails."""
        r = self.run("curl", *globoff(url), "-s", "-o", "/dev/null", "-w", CURL_WRITE_OUT, "--max-time", f"{max_time:g}", url, timeout=max_time + 30)
        return parse_curl(r.returncode, r.stdout, r.stderr)

    def ipvs_services(self) -> list[str] | None:
        """IPVS virtual services on the node (``cat /proc/net/ip_vs``); [] when the IPVS module is not loaded (no file),
        None when the file could not be read for another reason."""
        return _ipvs(self.run("cat", "/proc/net/ip_vs"))

    def kernel(self) -> str:
        return self.run("uname", "-r").check().stdout.strip()


def globoff(url: str) -> tuple[str, ...]:
    """curl's ``-g`` for a URL with an IPv6 literal: its brackets are an address, not a curl glob range."""
    return ("-g",) if "[" in url else ()


def nodes(runner: NodeRunner, names: Sequence[str], **kw: float) -> list[Node]:
    return [Node(runner, n, **kw) for n in names]


@dataclass(frozen=True)
class NodeRules:
    """What one node shows of kube-proxy, read in one exec: every rule view (None: its tool is missing) and the IPVS
    virtual services (None: /proc/net/ip_vs unreadable)."""

    dumps: dict[str, RuleDump | None]
    ipvs: list[str] | None


def _ipvs(r: ExecResult) -> list[str] | None:
    """``cat /proc/net/ip_vs``: [] when the IPVS module is not loaded (no file), None when unreadable otherwise."""
    from ..parse.node import parse_ip_vs

    if r.returncode != 0:
        return [] if "No such file" in r.stderr else None
    return parse_ip_vs(r.stdout)
