"""The agent flags the control plane models, parsed as the agent parses them (pflag: ``--name``, ``--name=value``).

Each flag is the agent option of that name in cilium/cilium pkg/loadbalancer/config.go (``bpf-lb-*``, ``lb-*``) or
the daemon's (``kube-proxy-replacement``, ``enable-service-topology``). A flag the fake does not model is refused
(:class:`ConfigError`), never ignored: a script that sets it expects a behaviour the fake does not have.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .maglev import DEFAULT_SEED, SUPPORTED_TABLE_SIZES


class ConfigError(ValueError):
    """An agent flag or value the fake does not model: one line."""


@dataclass
class AgentConfig:
    node_name: str = "testnode"
    kube_proxy_replacement: bool = True
    enable_ipv4: bool = True
    enable_ipv6: bool = True
    enable_external_ips: bool = True
    enable_host_port: bool = True
    external_clusterip: bool = False  # --bpf-lb-external-clusterip
    lb_algorithm: str = "random"  # --bpf-lb-algorithm (old name --node-port-algorithm)
    algorithm_annotation: bool = False  # --bpf-lb-algorithm-annotation
    lb_mode: str = "snat"  # --bpf-lb-mode: snat, dsr, hybrid
    mode_annotation: bool = False  # --bpf-lb-mode-annotation
    source_range_all_types: bool = False  # --bpf-lb-source-range-all-types
    wildcard_entries: bool = True  # --bpf-lb-enable-wildcard-entries
    default_lb_service_ipam: str = "lbipam"  # --default-lb-service-ipam
    service_topology: bool = False  # --enable-service-topology
    node_port_min: int = 30000
    node_port_max: int = 32767
    lb_map_max: int = 65536
    maglev_table_size: int = 16381
    maglev_seed: str = DEFAULT_SEED
    #: the pod reflector reads the pods of this node only (the agent's LocalPod table; Cilium's script harness's fake
    #: clientset ignores the field selector, so there every pod counts)
    local_pods_only: bool = True
    #: the Cilium minor whose behaviour to follow where releases differ: wildcard entries from 1.19 (cilium/cilium#40684);
    #: before 1.19 every frontend of a Service with loadBalancerSourceRanges checks them (no bpf-lb-source-range-all-types:
    #: pkg/loadbalancer/tests/testdata/source-ranges.txtar@062e4cdb checks the ClusterIP too)
    cilium_minor: tuple[int, int] = (1, 20)


def _bool(name: str, value: str | None) -> bool:
    if value is None:
        return True
    v = value.strip().lower()
    if v in ("true", "1", "t"):
        return True
    if v in ("false", "0", "f"):
        return False
    raise ConfigError(f"--{name}={value}: not a boolean")


#: flags accepted and without effect on what the tables and maps hold (fault injection off or on only changes how often
#: an operation is retried; metrics and their intervals; debug)
_INERT = {"lb-test-fault-probability", "lb-pressure-metrics-interval", "metrics-sampling-interval", "lb-retry-backoff-min",
          "lb-retry-backoff-max", "debug"}


#: boolean flags and the AgentConfig field each sets
_BOOLS = {"bpf-lb-external-clusterip": "external_clusterip", "bpf-lb-algorithm-annotation": "algorithm_annotation",
          "bpf-lb-mode-annotation": "mode_annotation", "bpf-lb-source-range-all-types": "source_range_all_types",
          "bpf-lb-enable-wildcard-entries": "wildcard_entries", "enable-external-ips": "enable_external_ips",
          "enable-service-topology": "service_topology", "kube-proxy-replacement": "kube_proxy_replacement"}


def parse_flags(args: list[str], cfg: AgentConfig | None = None) -> AgentConfig:
    """``args`` (the ``#!`` line's words) applied to ``cfg`` (default: the test harness's: maglev table 1021)."""
    cfg = cfg or AgentConfig(maglev_table_size=1021, local_pods_only=False)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("--"):
            raise ConfigError(f"{arg}: not a flag")
        name, eq, value = arg[2:].partition("=")
        val: str | None = value if eq else None
        if name in _INERT:
            continue
        if name in _BOOLS:
            setattr(cfg, _BOOLS[name], _bool(name, val))
        elif name == "enable-experimental-lb":  # the new control plane before 1.18 made it the only one
            if _bool(name, val):
                cfg.cilium_minor = min(cfg.cilium_minor, (1, 17))
        elif name in ("bpf-lb-algorithm", "node-port-algorithm"):
            if val not in ("random", "maglev"):
                raise ConfigError(f"--{name}={val}: expected random or maglev")
            cfg.lb_algorithm = val
        elif name in ("bpf-lb-mode", "node-port-mode"):
            if val not in ("snat", "dsr", "hybrid"):
                raise ConfigError(f"--{name}={val}: expected snat, dsr or hybrid")
            cfg.lb_mode = val
        elif name == "bpf-lb-map-max":
            cfg.lb_map_max = _int(name, val)
        elif name == "bpf-lb-maglev-table-size":
            size = _int(name, val)
            if size not in SUPPORTED_TABLE_SIZES:
                raise ConfigError(f"--{name}={size}: not one of {SUPPORTED_TABLE_SIZES}")
            cfg.maglev_table_size = size
        elif name == "bpf-lb-maglev-hash-seed":
            cfg.maglev_seed = val or ""
        elif name == "default-lb-service-ipam":
            cfg.default_lb_service_ipam = val or ""
        else:
            raise ConfigError(f"--{name}: an agent flag the fake does not model")
    return cfg


def _int(name: str, value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise ConfigError(f"--{name}={value}: not a number") from None


FLAG_NAMES = tuple(f.name for f in fields(AgentConfig))
