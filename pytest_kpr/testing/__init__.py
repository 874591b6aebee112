"""Test support shipped with the plugin: an in-memory fake cluster and renderers of Cilium's formats.

Users can run their own suites against :class:`FakeCluster` through the ``pytest_kpr_provider`` hook
(see :class:`FakeProvider`).
"""

from .config import FakeConfig, Faults, check_faults
from .fake import FakeCluster
from .provider import FakeProvider

__all__ = ["FakeCluster", "FakeConfig", "FakeProvider", "Faults", "PROFILE_CONFIG", "fake_provider"]

#: what each cluster profile (clusters/profiles/*.yaml) sets, as the fake's configuration
PROFILE_CONFIG: dict[str, dict[str, object]] = {
    "default": {},
    "hostns-only": {"socket_lb_hostns_only": True},
    "drop": {"no_backend_response": "drop"},
    "maglev": {"lb_algorithm": "Maglev", "maglev_seed": "a3ByLW1hZ2xldnNk"},
    "dsr": {"nodeport_mode": "DSR", "routing_mode": "Native", "lb_mode_annotation": True},
    "small-maps": {"lb_map_max": 512},
    # dual-stack: nodes, pods and Services of both families (FakeCluster.dual_stack); ipv6: of IPv6 only, the agents
    # reporting IPv6 alone (FakeCluster.has_ipv4 is false)
    "dual-stack": {"ip_families": ("IPv4", "IPv6")},
    "ipv6": {"ip_families": ("IPv6",)},
    "netkit": {"datapath_mode": "netkit", "routing_mode": "Native"},
    "xdp": {"acceleration": "Native", "routing_mode": "Native"},
    "topology": {"service_topology": True},
    "lrp": {"local_redirect_policy": True},
}


def fake_provider(settings: object) -> FakeProvider:
    """``--kpr-provider=fake``: the in-memory cluster at the requested Cilium version and profile, with the faults of
    ``--kpr-fake-faults``."""

    s = settings  # a pytest_kpr.run.settings.Settings (not imported: this package stays below the plugin)
    faults = Faults(**dict(check_faults(tuple(getattr(s, "fake_faults", ())))))
    cfg = FakeConfig(cilium_version=str(getattr(s, "cilium_version", "") or FakeConfig.cilium_version), faults=faults,
                     **PROFILE_CONFIG.get(str(getattr(s, "profile", "default")), {}))  # type: ignore[arg-type]
    return FakeProvider(FakeCluster(cfg))
