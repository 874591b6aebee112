"""Pure parsers: raw tool output in, frozen dataclasses out. The only place that reads tool output.

Every parser raises :class:`ParseError` (naming the line number and the text) on anything it does
not recognise; headers and blank lines are known, nothing else is skipped silently.
"""

from .addr import L3n4, parse_l3n4
from .agent_misc import EndpointInfo, MapInfo, parse_endpoint_json, parse_map_list, policy_map_name
from .config import AgentConfig, parse_config
from .ct import CtEntry, parse_ct_list
from .errors import ParseError
from .health import HealthLeaf, HealthStatus, ModulesHealth, parse_db_health
from .lb import LbEntry, parse_lb_list, parse_lb_list_json
from .node import (
    BpfAttachment,
    CgroupProgram,
    RuleDump,
    Socket,
    TcFilter,
    parse_bpftool_cgroup_tree,
    parse_bpftool_net,
    parse_iptables_save,
    parse_netstat,
    parse_nft_ruleset,
    parse_ss,
    parse_tc_filter,
)
from .services import Backend, Service, parse_service_list, parse_service_list_json
from .statedb import Frontend, parse_frontends_json, parse_frontends_table, parse_lb_maps_dump
from .status import KprFeatures, StatusJSON, VersionInfo, parse_status_json, parse_version
from .status_text import KprDetails, StatusText, parse_status_text

__all__ = [
    "AgentConfig", "Backend", "BpfAttachment", "CgroupProgram", "CtEntry", "EndpointInfo", "Frontend", "HealthLeaf", "HealthStatus",
    "KprDetails", "KprFeatures", "L3n4", "LbEntry", "MapInfo", "ModulesHealth", "ParseError", "RuleDump", "Service", "Socket",
    "StatusJSON", "StatusText", "TcFilter", "VersionInfo", "parse_bpftool_cgroup_tree", "parse_bpftool_net",
    "parse_config", "parse_ct_list", "parse_db_health", "parse_endpoint_json", "parse_frontends_json", "parse_frontends_table",
    "parse_iptables_save", "parse_l3n4", "parse_lb_list", "parse_lb_list_json", "parse_lb_maps_dump",
    "parse_map_list", "parse_netstat", "parse_nft_ruleset", "parse_service_list", "parse_service_list_json",
    "parse_ss", "parse_status_json", "parse_status_text", "parse_tc_filter", "parse_version", "policy_map_name",
]
