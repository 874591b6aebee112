"""The evidence files' schemas: what ``cluster.json``, ``results.json`` and ``upgrade.json`` hold.

Written in the JSON Schema subset :func:`pytest_kpr.evidence.artifacts.check` enforces (``type``, ``enum``, ``minimum``,
``required``, ``properties``, ``additionalProperties``, ``items``) plus ``title``/``description``; ``kpr matrix`` holds
the files it reads against them, the documentation publishes them as JSON Schema (draft 2020-12,
``scripts/gen_docs.py``), and the self-tests hold every file a run against the fake writes against both.
"""

from __future__ import annotations

from typing import Any

from .runrecord import PHASES

_STR = {"type": "string"}
_OPT_STR = {"type": ["string", "null"]}
_NUM = {"type": "number"}
_INT0 = {"type": "integer", "minimum": 0}
_STRS = {"type": "array", "items": _STR}

#: cluster.json: the facts of the cluster (when they were read) and the run record (always)
CLUSTER_SCHEMA: dict[str, Any] = {
    "title": "cluster.json",
    "description": "The cluster a kpr run used (its facts, once read) and the run record, written from the run's first moment, "
                   "phase by phase; a run that failed before its suites leaves this file and setup-failure/.",
    "type": "object",
    "required": ["cilium_version"],
    "properties": {
        "cluster": {"type": "string", "description": "the cluster's name (kind) or kubeconfig context"},
        "provider": {"type": "string", "description": "kind, existing or fake"},
        "cilium_version": {"type": "string", "description": "as the agents report it; the requested version until they do"},
        "profile": {"type": "string", "description": "the cluster profile (--kpr-profile)"},
        "clock": {"enum": ["real", "virtual"], "description": "virtual when the fake cluster was the cluster: its durations are not wall time"},
        "nodes": {"type": "array", "items": {"type": "object", "properties": {"name": _STR, "kernel": _STR, "internal_ip": _STR}}},
        "run": {"type": "object", "description": "who ran what", "properties": {
            "id": _STR, "plugin_version": _STR, "git_sha": _OPT_STR, "provider": _STR}},
        "phases": {"type": "array", "description": "preflight, provision, install, readiness, facts, suites, teardown: each with its outcome",
                   "items": {"type": "object", "required": ["phase", "outcome"],
                             "properties": {"phase": {"enum": list(PHASES)}, "outcome": {"enum": ["running", "ok", "failed"]},
                                            "error": _OPT_STR, "duration_s": {"type": ["number", "null"]}, "started": _STR}}},
    },
}

#: results.json: the run it is about, each property's verdict, and every test's outcome
RESULTS_SCHEMA: dict[str, Any] = {
    "title": "results.json",
    "description": "Each property's verdict and key figure, every test's outcome, and the run they belong to: what kpr matrix "
                   "and its regression gate (kpr matrix --compare) read.",
    "type": "object",
    "required": ["properties"],
    "properties": {
        "run": {"type": "object", "properties": {
            "complete": {"type": "boolean", "description": "false when the run stopped early (setup failure, interrupt)"},
            "exit_status": {"type": ["integer", "null"]}, "interrupted_by": _OPT_STR,
            "cilium_version": _STR, "profile": _STR, "kernels": _STRS, "finished": _STR,
            "ip_families": {"type": "array", "items": {"enum": ["IPv4", "IPv6"]},
                            "description": "the families the family-dependent suites ran for (--kpr-ip-families)"},
            "clock": {"enum": ["real", "virtual"]}}},
        "properties": {"type": "object", "description": "property name (the suite contract's property=) -> its verdict",
                       "additionalProperties": {
                           "type": "object", "required": ["verdict"],
                           "properties": {"verdict": {"enum": ["pass", "fail", "skip", "xfail"]}, "figure": _STR,
                                          "counts": {"type": "object", "additionalProperties": _INT0},
                                          "families": {"type": "object", "description": "a property tested per address family: "
                                                       "family -> the verdict of its tests",
                                                       "additionalProperties": {"enum": ["pass", "fail", "skip", "xfail"]}}}}},
        "tests": {"type": "array", "items": {"type": "object", "properties": {
            "test": _STR, "property": _STR, "outcome": {"enum": ["passed", "failed", "skipped", "xfailed"]}, "family": _STR,
            "message": {"type": "string", "description": "why it did not pass, in one line: a failure's first line, a skip's or an "
                                                         "expected failure's reason (at most 300 characters)"},
            "evidence": {"type": "string", "description": "a failure's bundle, relative to the run's evidence directory"}}}},
    },
}

_FLOW_REPORT = {
    "type": "object", "description": "kpr probe flow's summary",
    "properties": {"proto": _STR, "target": _STR, "sent": _INT0, "answered": _INT0, "lost": _INT0, "resets": _INT0, "closed": _INT0,
                   "stalls": _INT0, "aborted": _INT0, "reconnects": _INT0, "max_gap_ms": _NUM,
                   "gaps": {"type": "array", "items": {"type": "object", "properties": {"start": _NUM, "ms": _NUM}}}},
}

_SNAPSHOT = {
    "type": "object", "description": "the datapath read on every agent before or after the roll",
    "required": ["services", "backends", "properties"],
    "properties": {
        "services": {"type": "object", "description": "node -> frontend -> service ID",
                     "additionalProperties": {"type": "object", "additionalProperties": _INT0}},
        "backends": {"type": "object", "description": "node -> backend address -> backend ID",
                     "additionalProperties": {"type": "object", "additionalProperties": _INT0}},
        "flow_ct": {"type": "object", "description": "pod flow -> its conntrack entry was found", "additionalProperties": {"type": "boolean"}},
        "properties": {"type": "object", "description": "KubeProxyReplacement, attach mode, socket-LB coverage, ServiceNoBackendResponse, "
                                                        "kube-proxy rule lines, the echo service's slots matching its EndpointSlice "
                                                        "(backend_slots_match: family -> bool)"},
    },
}

#: upgrade.json: upgrade gating's record (--kpr-upgrade-to), one entry per transition
UPGRADE_SCHEMA: dict[str, Any] = {
    "title": "upgrade.json",
    "description": "Cilium upgraded (and with --kpr-downgrade rolled back) under live flows: per transition the roll's timeline, "
                   "every flow's gaps and losses tied to the restart they fell in, and the datapath before and after.",
    "type": "object",
    "required": ["from", "to", "max_gap_s", "transitions"],
    "properties": {
        "from": _STR, "to": _STR,
        "max_gap_s": {"type": "number", "description": "--kpr-upgrade-max-gap: pytest-kpr's policy, not a bound Cilium promises"},
        "max_gap_policy": _STR,
        "planes": {"type": "object", "description": "flow -> the plane the sourced rules say it takes", "additionalProperties": _OPT_STR},
        "notices": {**_STRS, "description": "options the saved values set that the target minor no longer reads, where only their "
                                             "deprecation is cited (clusters/removed-options.yaml kind: notice): told, not refused"},
        "transitions": {"type": "array", "items": {
            "type": "object", "required": ["kind", "from", "to", "flows", "diff", "before", "after", "summary"],
            "properties": {
                "kind": {"enum": ["upgrade", "downgrade"]}, "from": _STR, "to": _STR, "started": _NUM, "agents_ready": _INT0,
                "timeline": {"type": "array", "description": "per node: when its old agent went and its new one was Ready",
                             "items": {"type": "object"}},
                "flows": {"type": "object", "additionalProperties": {
                    "type": "object", "required": ["path", "report", "problems"],
                    "properties": {"path": {"type": "object", "properties": {"client": _STR, "target": _STR, "proto": _STR,
                                                                             "host_network": {"type": "boolean"}, "nodes": _STRS,
                                                                             "plane": _OPT_STR, "family": {"enum": ["IPv4", "IPv6"]}}},
                                   "report": _FLOW_REPORT,
                                   "gaps": {"type": "array", "items": {"type": "object"}},
                                   "longest_gap_during": _OPT_STR,
                                   "problems": {"type": "object", "properties": {"broken": _STRS, "gap": _STRS}},
                                   "ct_survived": {"type": ["boolean", "null"]}}}},
                "diff": {"type": "object", "required": ["families", "regressions"], "properties": {
                    "families": {"type": "object", "description": "per address family: its frontends' and backends' ID changes, its "
                                                                  "flows whose conntrack entry was gone after the roll",
                                 "propertyNames": {"enum": ["IPv4", "IPv6"]},
                                 "additionalProperties": {"type": "object", "required": ["service_ids", "backend_ids", "ct_lost"],
                                                          "properties": {"service_ids": _STRS, "backend_ids": _STRS, "ct_lost": _STRS}}},
                    "regressions": _STRS}},
                "before": _SNAPSHOT, "after": _SNAPSHOT,
                "summary": {"type": "string", "description": "the line the terminal summary prints"}}}},
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {"cluster.json": CLUSTER_SCHEMA, "results.json": RESULTS_SCHEMA, "upgrade.json": UPGRADE_SCHEMA}
