"""Cluster profiles: what each promises, read back from the agents.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..cluster.facts import ClusterFacts


#: what each cluster profile (clusters/profiles/<name>.yaml) promises, as the facts read back from the agents show it.
#: A profile whose Helm values did not take effect (a mistyped key is ignored by the chart, not refused) fails the run
#: before the suites, instead of the suites judging the wrong configuration.
PROFILE_PROMISES: dict[str, dict[str, Any]] = {
    "default": {},
    "hostns-only": {"socket_lb_coverage": "Hostns-only"},
    "drop": {"no_backend_response": "drop"},
    "maglev": {"lb_algorithm": "Maglev"},
    "dsr": {"nodeport_mode": "DSR", "routing_mode": "Native"},
    "small-maps": {"lb_map_max": 512},
    "dual-stack": {"ip_families": ("IPv4", "IPv6")},
    "ipv6": {"ip_families": ("IPv6",)},
    # status -o json datapath-mode: cilium/cilium daemon/cmd/status.go@36b8c224 getDatapathModeStatus, `case
    # datapathOption.DatapathModeNetkit: mode = models.DatapathModeNetkit` (pkg/client/client.go prints it "netkit")
    "netkit": {"datapath_mode": "netkit", "routing_mode": "Native"},
    # nodePort.acceleration: daemon/cmd/status.go@36b8c224 `features.NodePort.Acceleration =
    # strings.Title(option.Config.NodePortAcceleration)`, so Helm's native reads "Native"
    "xdp": {"xdp_acceleration": "Native", "routing_mode": "Native"},
    # loadBalancer.serviceTopology -> enable-service-topology in the agents' config map (rules.datapath.SRC_TOPOLOGY_ENABLE)
    "topology": {"service_topology": True},
    # localRedirectPolicy / localRedirectPolicies.enabled -> enable-local-redirect-policy in the agents' config map
    # (rules.datapath.SRC_LRP)
    "lrp": {"local_redirect_policy": True},
}


def profile_problems(profile: str, facts: "ClusterFacts") -> list[str]:
    """Each promised setting of ``profile`` that the agents do not show, one line each (an unknown profile promises
    nothing checkable here)."""
    return [f"the profile {profile!r} promises {key} {want!r}, but the agents report {getattr(facts, key)!r}"
            for key, want in PROFILE_PROMISES.get(profile, {}).items() if getattr(facts, key) != want]
