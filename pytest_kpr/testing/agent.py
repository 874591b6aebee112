"""The fake cluster's cilium-agent: answers CLI commands from the cluster's state, in the real formats."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from ..rules.datapath import (SERVICE_TOPOLOGY_FILE, DEFAULT_LB_IPAM_FILE, FAMILY_FILES, ITP_FILE, LB_MAP_FILES, MAGLEV_DEFAULT_SEED, MAGLEV_SEED_FILE, NO_BACKEND_RESPONSE_FILE, REV_NAT_MAP_FILE,
                              LRP_FILE, MODE_ANNOTATION_FILE, NODEPORT_WILDCARD, ROUTABLE_FILE, SOCKET_TERMINATION_FILE, SOURCE_RANGE_ALL_TYPES_FILE, TERMINATING_FILE,
                              WILDCARD_ENTRIES_FILE)
from ..parse.addr import family_of
from . import maglev, render
from .lbcp.addr import SCOPE_EXTERNAL, SCOPE_INTERNAL, L3n4, ip_of
from .lbcp.bpf import F_AFFINITY, flags_string, maglev_line, svc_flags
from .view import ClusterView, FakeFrontend
from .faults import Fails, Fault, declare


FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("kpr_disabled", "setup", "agents report KubeProxyReplacement False",
          proven_by="tests/plugin/test_plugin_session.py::test_cilium_without_kpr_is_refused_clearly"),
    Fault("agents_never_ready", "setup", "the agents never report Ok (the run stops in its readiness phase)",
          proven_by="tests/evidence/test_run_record.py::test_a_failed_setup_leaves_its_phase_error_and_diagnostics_exits_3_and_shows_red_in_the_matrix"),
    Fault("no_backend_response_unreported", "setup",
          doc="the agent's `config -a` lacks ServiceNoBackendResponse and its config-map has no service-no-backend-response",
          proven_by="tests/test_faults.py::test_a_missing_service_no_backend_response_stops_the_run_naming_the_field"),
    Fault("health_without_error", "shared VIP", "db/show health shows the reflector Degraded, but without the conflict error",
          fails=Fails(name="degraded-without-the-error-text",
                      tests=("test_a_port_swap_ends_as_the_model_predicts",
                             "test_the_conflict_is_visible_in_the_agents_health[external-ips]",
                             "test_the_conflict_is_visible_in_the_agents_health[lb-ipam]",
                             "test_the_release_first_handoff_recovers_a_port_swap"),
                      says=("*shared VIP (external-ips): the rejected claim is not visible in the agent's health: `db/show health` has no Degraded loadbalancer-reflectors row whose Error says 'frontend already owned by another service'*",
                            "*shared VIP port swap (cilium-1.18, VIP 198.18.10.80): after the swap, as the model predicts: the model says*'errors': [[]'frontend already*"))),
    Fault("error_without_degraded", "shared VIP", "db/show health carries the error, but status counts no degraded module",
          fails=Fails(name="error-without-degraded-count",
                      tests=("test_the_conflict_is_visible_in_the_agents_health[external-ips]",
                             "test_the_conflict_is_visible_in_the_agents_health[lb-ipam]"),
                      says="*shared VIP (lb-ipam): the rejected claim is not visible in the agent's health: plain `cilium-dbg status` shows no degraded module (Modules Health {'stopped': 0, 'degraded': 0, 'ok': 1})*")),
    Fault("maglev_seed_per_node", "Maglev", "every agent resolves its own Maglev hash seed (a CiliumNodeConfig override per node)",
          fails=Fails(fake="lb_algorithm='Maglev'",
                      tests=("test_a_flow_reaches_the_same_backend_through_every_node", "test_every_agent_uses_the_same_hash_seed",
                             "test_removing_a_backend_moves_only_its_flows"),
                      says="*Maglev (/tmp/cilium/config-map/bpf-lb-maglev-hash-seed): the agents use 3 different hash seeds: *")),
    Fault("maglev_no_table", "Maglev", per_family=True,
          doc="the agents report Maglev but program no lookup table for the family's frontends (selection falls back to random)",
          fails=(
              Fails(fake="lb_algorithm='Maglev'",
                    tests=("test_a_flow_reaches_the_same_backend_through_every_node",
                           "test_every_agent_has_a_balanced_table_over_the_backends",
                           "test_removing_a_backend_moves_only_its_flows"),
                    says="*Maglev (lb/maps-dump tables, IPv4): fake-control-plane has no Maglev table for its NodePort frontend*"),
              Fails(name="ipv6-maglev-no-table", value="IPv6", fake="ip_families=('IPv4', 'IPv6'), lb_algorithm='Maglev'",
                    tests=("test_a_flow_reaches_the_same_backend_through_every_node[IPv6]",
                           "test_every_agent_has_a_balanced_table_over_the_backends[IPv6]",
                           "test_removing_a_backend_moves_only_its_flows[IPv6]"),
                    says=("*Maglev (lb/maps-dump tables, IPv6): fake-control-plane has no Maglev table for its NodePort frontend*",
                          "*Maglev (the same IPv6 flow through different nodes): * of 24 flows did not reach one backend through fake-control-plane and fake-worker*")),
          )),
    Fault("maglev_cluster_ip", "Maglev", "ClusterIP frontends get a Maglev table too (as with bpf-lb-external-clusterip)",
          fails=Fails(fake="lb_algorithm='Maglev'", tests="test_cluster_ip_traffic_is_not_maglevd",
                      says="*Maglev (ClusterIP, IPv4): the ClusterIP frontend has a Maglev table on fake-control-plane, fake-worker, fake-worker2*")),
    Fault("rev_nat_id_mismatch", "backend slots",
          doc="a ClusterIP frontend's slot 0 in the BPF map carries another RevNAT ID than the agent's service ID",
          fails=(
              # the agent's own tables against its BPF slots
              Fails(tests="test_web_slots_hold_exactly_its_ready_endpoints",
                    says="*backend slots (IPv4): slot 0 carries RevNAT 10*, service list ID *"),
          )),
)

NOT_READY = (
    'Error: Unable to reach agent: Get "http://localhost/v1/healthz": dial unix /var/run/cilium/cilium.sock: '
    "connect: no such file or directory\n"
)


class FakeAgent:
    def __init__(self, cluster: ClusterView, node: str):
        self.cluster = cluster
        self.node = node
        self.status_polls = 0
        #: the load-balancer reflector's health report: None until it first reports (reflectorHealth.report
        #: reports only on a change of its errors), then (level, message, error, count)
        self._reflector: tuple[str, str, str, int] | None = None
        self._reconciler_reported: set[tuple[str, int, str]] = set()  # failed frontends the reconciler row has reported
        self._reconciler_rounds = 0
        #: the BPF metrics map: (reason, direction, line, file) -> packets (bpf metrics list)
        self.metrics: dict[tuple[str, str, int, str], int] = {}
        #: this node's per-packet affinity map (LB4/LB6_AFFINITY_MAP keyed by the client's address): (client address,
        #: service, frontend ip, port) -> (the remembered backend "ip:port", last used: whole seconds)
        self.affinity_by_addr: dict[tuple[str, str, str, int], tuple[str, int]] = {}

    def count(self, reason: str, direction: str, line: int, file: str) -> None:
        key = (reason, direction, line, file)
        self.metrics[key] = self.metrics.get(key, 0) + 1

    def _metrics_list(self) -> tuple[int, str, str]:
        rows = [(r, d.upper(), n, n * 74, line, f) for (r, d, line, f), n in self.metrics.items()]
        return (0, render.bpf_metrics_list(rows), "") if rows else (0, "", "No entries found.\n")

    @property
    def ready(self) -> bool:
        return not self.cluster.cfg.faults.agents_never_ready and self.status_polls >= self.cluster.cfg.agent_ready_after

    def _batch(self, script: str) -> tuple[int, str, str]:
        """``sh -c`` as :meth:`pytest_kpr.observe.agent.Agent.run_many` writes it (the only shell the fake speaks)."""
        from ..observe.batch import interpret

        return interpret(script, self.handle)

    @property
    def minor(self) -> tuple[int, int]:
        v = self.cluster.version
        return (v.major, v.minor)

    def _proto(self, proto: str) -> str | None:
        return proto if self.minor >= (1, 17) else None

    def handle(self, argv: list[str]) -> tuple[int, str, str]:
        cfg = self.cluster.cfg
        if argv[:2] == ["sh", "-c"] and len(argv) == 3:
            return self._batch(argv[2])
        if argv and argv[0] in ("bpftool", "tc"):  # the agent image ships them; it runs in the host netns
            return self.cluster.node_tools.handle(self.node, argv)
        if argv[:1] == ["cat"] and len(argv) == 2:  # the agent's resolved configuration (/tmp/cilium/config-map/<key>)
            routable = cfg.no_service_endpoints_routable
            value = {MAGLEV_SEED_FILE: self.seed_setting(), LB_MAP_FILES[1]: str(cfg.lb_map_max) if cfg.lb_map_max else None,
                     REV_NAT_MAP_FILE: str(cfg.lb_rev_nat_map_max) if cfg.lb_rev_nat_map_max else None,
                     # the chart writes both into cilium-config (enable-no-service-endpoints-routable: "true" by default)
                     NO_BACKEND_RESPONSE_FILE: None if cfg.faults.no_backend_response_unreported else cfg.no_backend_response,
                     ROUTABLE_FILE: None if routable is None else str(routable).lower(),
                     ITP_FILE: cfg.enable_internal_traffic_policy, TERMINATING_FILE: cfg.k8s_terminating_endpoint,
                     SOCKET_TERMINATION_FILE: cfg.socket_lb_pod_connection_termination,
                     DEFAULT_LB_IPAM_FILE: cfg.default_lb_service_ipam, WILDCARD_ENTRIES_FILE: cfg.lb_wildcard_entries,
                     SERVICE_TOPOLOGY_FILE: "true" if cfg.service_topology else None,
                     SOURCE_RANGE_ALL_TYPES_FILE: "true" if cfg.lb_source_range_all_types else None,
                     # the chart writes it, "false" by default
                     MODE_ANNOTATION_FILE: str(cfg.lb_mode_annotation).lower(),
                     LRP_FILE: "true" if cfg.local_redirect_policy else None,
                     **{path: str(fam in cfg.ip_families).lower() for fam, path in FAMILY_FILES.items()}}.get(argv[1])
            return (0, value, "") if value is not None else (1, "", f"cat: {argv[1]}: No such file or directory\n")
        if not argv or argv[0] != cfg.agent_binary:
            name = argv[0] if argv else ""
            return 127, "", f'exec: "{name}": executable file not found in $PATH'
        args = argv[1:]
        if args == ["version"]:
            return 0, render.version_text(cfg.cilium_version), ""
        if args[:1] == ["status"]:
            ready = self.ready
            self.status_polls += 1
            if not ready:
                return 1, "", NOT_READY
            if args[1:] == ["-o", "json"]:
                return 0, self._status_json(), ""
            if args[1:] in ([], ["--verbose"]):
                return self._status_text(verbose=args[1:] == ["--verbose"])
            return 2, "", f"Error: unknown flag: {' '.join(args[1:])}\n"
        if not self.ready:
            return 1, "", NOT_READY
        handlers = {
            ("config", "-a"): self._config,
            ("service", "list"): self._service_list,
            ("service", "list", "-o", "json"): self._service_list_json,
            ("bpf", "lb", "list"): self._lb_list,
            ("bpf", "ct", "list", "global"): self._ct_list,
            ("bpf", "metrics", "list"): self._metrics_list,
            ("map", "list"): self._map_list,
            ("shell", "--", "db/show", "frontends"): self._frontends,
            ("shell", "--", "db/show", "health"): self._health_table,
            ("shell", "--", "lb/maps-dump"): self._maps_dump,
        }
        h = handlers.get(tuple(args))
        if h is not None:
            return h()
        if args[:2] == ["endpoint", "get"] and len(args) >= 3:
            return self._endpoint(args[2])
        return 1, "", f'Error: unknown command "{" ".join(args)}" for "{cfg.agent_binary}"\n'

    # -- status and config -------------------------------------------------------------------------

    def _status_json(self) -> str:
        cfg = self.cluster.cfg
        return render.status_json(
            version=cfg.cilium_version,
            kpr=not cfg.faults.kpr_disabled,
            socket_lb=cfg.socket_lb,
            hostns_only=cfg.socket_lb_hostns_only,
            nodeport_mode=cfg.nodeport_mode,
            algorithm=cfg.lb_algorithm,
            attach_mode=cfg.attach_mode,
            devices=(("eth0", self.cluster.node_ip(self.node)),),
            routing_mode=cfg.routing_mode,
            datapath_mode=cfg.datapath_mode,
            acceleration=cfg.acceleration,
        )

    def _status_text(self, verbose: bool) -> tuple[int, str, str]:
        cfg = self.cluster.cfg
        return 0, render.status_text(
            kpr=not cfg.faults.kpr_disabled, socket_lb=cfg.socket_lb, hostns_only=cfg.socket_lb_hostns_only,
            nodeport_mode=cfg.nodeport_mode, algorithm=cfg.lb_algorithm, devices=f"eth0   {self.cluster.node_ip(self.node)}",
            version=self.minor, attach_mode=cfg.attach_mode, health=self.health_rows(), verbose=verbose,
        ), ""

    def health_rows(self) -> list[dict[str, Any]]:
        """The agent's module health (datapath.FORMAT_RULES db-health, reflector-degraded): one OK row that
        Cilium's own PR #46739 shows, and the load-balancer reflector's row once it has reported."""
        rows: list[dict[str, Any]] = [{"module": "agent.controlplane.cilium-agent-dynamic-config",
                 "component": "job-k8s-reflector-cilium-configs-cm-cilium-config-kube-system",
                 "level": "OK", "message": "168 upserted, 0 deleted, 168 total objects", "error": ""}]
        model = self.cluster.lb.model
        model.advance(self.cluster.lb.now_ms())
        errors = "\n".join(rej.error for _, (_, rej) in sorted(model.rejected.items()))  # errors.Join
        prev = self._reflector
        if errors and (prev is None or prev[2] != errors):
            self._reflector = ("Degraded", "Failure processing services", errors, (prev[3] if prev else 0) + 1)
        elif not errors and prev is not None and prev[0] == "Degraded":
            self._reflector = ("OK", "Running", "", prev[3] + 1)
        if self._reflector is not None:
            level, message, error, count = self._reflector
            if self.cluster.cfg.faults.health_without_error and level == "Degraded":
                error = ""  # fault: degraded, but the conflict error is not shown
            rows.append({"module": "agent.controlplane.loadbalancer-reflectors", "component": "job-reflect-services-endpoints",
                         "level": level, "message": message, "error": error, "count": count,
                         # fault: status counts no degraded module although the health table has one
                         "hidden_from_tally": self.cluster.cfg.faults.error_without_degraded,
                         "last_ok": render.NEVER if level == "Degraded" else render.HEALTH_TIME})
        # datapath.SRC_MAP_HEALTH: a round with errors reports Degraded, the next clean one OK again. Here a reading right
        # after frontends failed is that round; the failed ones are retried with backoff, so the readings after it see
        # clean rounds (other objects' changes) and OK
        failed = {fe.key: fe.error for fe in self.frontends() if not fe.in_map and fe.error}
        new = {k: e for k, e in failed.items() if k not in self._reconciler_reported}
        self._reconciler_reported = set(failed)
        if new or self._reconciler_rounds:
            self._reconciler_rounds += 1
            level = "Degraded" if new else "OK"
            rows.append({"module": "agent.controlplane.loadbalancer-reconciler", "component": "job-reconcile", "level": level,
                         "message": "Reconciliation failed" if new else f"OK, {len(self.frontends())} objects",
                         "error": "incremental: " + "\n".join(new.values()) if new else "", "count": self._reconciler_rounds,
                         "last_ok": render.HEALTH_TIME})
        return rows

    def _health_table(self) -> tuple[int, str, str]:
        return 0, render.health_table(self.health_rows()), ""

    def _config(self) -> tuple[int, str, str]:
        cfg = self.cluster.cfg
        ro = {
            "BPFSocketLBHostnsOnly": str(cfg.socket_lb_hostns_only).lower(),
            "CGroupRoot": "/run/cilium/cgroupv2",
            "ConfigDir": "/tmp/cilium/config-map",
            "DatapathMode": "veth",
            "DisableExternalIPMitigation": str(not cfg.external_ip_mitigation).lower(),
            "Devices": "[eth0]",
            "EnableHealthCheckLoadBalancerIP": str(cfg.health_check_lb_ip).lower(),
            "EnableTCX": str(cfg.attach_mode == "tcx").lower(),
            **({} if cfg.faults.no_backend_response_unreported else {"ServiceNoBackendResponse": cfg.no_backend_response}),
            "k8s-configuration": "",
            "k8s-endpoint": "",
        }
        rw = {"Debug": "Disabled", "MonitorNumPages": "64", "PolicyEnforcement": "default"}
        return 0, render.config_all(ro, rw), ""

    # -- load balancing ----------------------------------------------------------------------------

    def frontends(self) -> list[FakeFrontend]:
        return self.cluster.lb.frontends(self.node)

    def _addr(self, ip: str, port: int, proto: str) -> str:
        return render.addr(ip, port, self._proto(proto))

    def _service_list(self) -> tuple[int, str, str]:
        rows = [
            (fe.id, self._addr(fe.ip, fe.port, fe.proto), fe.type, [(self._addr(b.ip, b.port, fe.proto), b.state) for b in fe.backends])
            for fe in self.frontends()
        ]
        return 0, render.service_list(rows), ""

    def _service_list_json(self) -> tuple[int, str, str]:
        entries = []
        for fe in self.frontends():
            ns, name = fe.service.split("/", 1)
            entries.append({
                "id": fe.id, "ip": fe.ip, "port": fe.port, "protocol": self._proto(fe.proto), "type": fe.type,
                "name": name, "namespace": ns,
                # the selected backends only (v1.18 Frontend.ToModel): the active ones, or the terminating ones when no active remains
                "backends": [{"ip": b.ip, "port": b.port, "protocol": self._proto(fe.proto), "node": b.node, "state": b.state}
                             for b in fe.backends],
            })
        return 0, render.service_list_json(entries), ""

    def _lb_list(self) -> tuple[int, str, str]:
        rows = []
        for fe in self.frontends():
            key = self._addr(fe.ip, fe.port, fe.proto)
            flags = flags_string(fe.flags).split("+")  # `bpf lb list` joins them with ", ", lb/maps-dump with "+"
            rows.append((f"{key} (0)", render.lb_master_value(fe.id, flags)))
            for slot, b in enumerate(fe.backends + fe.draining, 1):  # terminating backends keep their slots after the count
                rows.append((f"{key} ({slot})", f"{self._addr(b.ip, b.port, fe.proto)} ({fe.id}) ({slot})"))
        return 0, render.lb_list(rows), ""

    def _ct_list(self) -> tuple[int, str, str]:
        tcp = [e for e in self.cluster.ct_entries(self.node) if e["proto"] == "TCP"]
        other = [e for e in self.cluster.ct_entries(self.node) if e["proto"] != "TCP"]
        return 0, render.ct_list([tcp, other], self.minor), ""

    def _map_list(self) -> tuple[int, str, str]:
        rows = [("cilium_lb4_services_v2", 0), ("cilium_lb4_backends_v3", 0), ("cilium_lb4_reverse_nat", 0), ("cilium_ct4_global", 0)]
        prefix = "cilium_policy_v2_" if self.minor >= (1, 17) else "cilium_policy_"
        for ep in self.cluster.endpoints_on(self.node):
            rows.append((f"{prefix}{ep['id']:05d}", 0))
        return 0, render.map_list(rows), ""

    def _endpoint(self, ident: str) -> tuple[int, str, str]:
        for ep in self.cluster.endpoints_on(self.node):
            if str(ep["id"]) == ident:
                return 0, render.endpoint_json(ep), ""
        return 1, "", f"Error: Cannot get endpoint {ident}: [GET /endpoint/{{id}}][404] getEndpointIdNotFound\n"

    def seed_setting(self) -> str | None:
        """bpf-lb-maglev-hash-seed as this agent resolved it (the maglev_seed_per_node fault: a different one per node)."""
        cfg = self.cluster.cfg
        if cfg.faults.maglev_seed_per_node:  # a valid seed (12 bytes, base64), another on every node
            return base64.b64encode(hashlib.sha256(f"{cfg.maglev_seed or MAGLEV_DEFAULT_SEED}-{self.node}".encode()).digest()[:12]).decode()
        return cfg.maglev_seed

    def seed(self) -> str:
        return self.seed_setting() or MAGLEV_DEFAULT_SEED

    def has_maglev_table(self, fe: Any) -> bool:
        """datapath.SRC_MAGLEV_SCOPE: with Maglev selected, frontends reachable from outside that have an address (not the
        0.0.0.0 or :: wildcard); SRC_MAGLEV_FAMILY: IPv6 frontends too (the maglev_no_table fault: not the family's it is set for)."""
        cfg = self.cluster.cfg
        if cfg.lb_algorithm != "Maglev" or fe.ip in NODEPORT_WILDCARD.values() or not fe.backends \
                or cfg.faults.on("maglev_no_table", family_of(fe.ip)):
            return False
        return fe.type != "ClusterIP" or cfg.faults.maglev_cluster_ip

    def _maps_dump(self) -> tuple[int, str, str]:
        """``shell -- lb/maps-dump`` (v1.18+): BE, REV and SVC lines as in tests/data/cilium/statedb-lb/
        v1.18-lb-maps-dump-from-clusterip-txtar.txt (docs/cilium-formats.md: "documented as not stable")."""
        if self.minor < (1, 18):
            return 1, "", 'Error: unknown command "lb/maps-dump"\n'
        lb = self.cluster.lb
        lines: set[str] = set()
        for fe in self.frontends():
            flags = flags_string(fe.flags)
            addr = render.addr(fe.ip, fe.port, fe.proto)  # an IPv6 address in brackets (datapath.SRC_MAGLEV_DUMP)
            if fe.rev_in_map:  # written before the master, so it stays when the master did not fit (datapath.SRC_MAP_FULL)
                lines.add(f"REV: ID={fe.id} ADDR={render.addr(fe.ip, fe.port, None)}")
            if not fe.in_map:
                continue
            # the master's count is the selectable backends, QCOUNT the rest (datapath.SRC_TERMINATING_SLOTS)
            master = fe.id + 1000 if self.cluster.cfg.faults.rev_nat_id_mismatch and fe.type == "ClusterIP" else fe.id  # fault
            lines.add(f"SVC: ID={master} ADDR={addr} SLOT=0 LBALG=undef AFFTimeout={fe.affinity_timeout} COUNT={len(fe.backends)} QCOUNT={len(fe.draining)} "
                      f"FLAGS={flags}")
            for be in fe.maintenance:  # kept in the backends map, no slot
                lines.add(f"BE: ID={lb.backend_id(be.ip, be.port, fe.proto)} ADDR={render.addr(be.ip, be.port, fe.proto)} STATE={be.state}")
            for slot, be in enumerate(fe.backends + fe.draining, 1):
                beid = lb.backend_id(be.ip, be.port, fe.proto)
                shown = "terminating" if be.state == "terminating-not-serving" else be.state  # DumpLBMaps prints it so
                lines.add(f"BE: ID={beid} ADDR={render.addr(be.ip, be.port, fe.proto)} STATE={shown}")
                lines.add(f"SVC: ID={fe.id} ADDR={addr} SLOT={slot} BEID={beid} COUNT=0 QCOUNT=0 FLAGS={flags}")
                if fe.flags & F_AFFINITY and be.state == "active":  # the affinity-match entry of an active backend
                    lines.add(f"AFF: ID={fe.id} BEID={beid}")
            for rid in (fe.id, fe.internal_id):  # the Service's ranges of the frontend's family, for each scope's ID
                for cidr in fe.source_ranges if rid else ():
                    if (":" in cidr) == (":" in fe.ip):
                        lines.add(f"SRCRANGE: ID={rid} CIDR={cidr}")
            if fe.internal_id:  # the internal scope's twin: its own ID, reverse-NAT entry and slots (the internal backends)
                addr_i = f"{addr}/i"
                lines.add(f"REV: ID={fe.internal_id} ADDR={render.addr(fe.ip, fe.port, None)}")
                lines.add(f"SVC: ID={fe.internal_id} ADDR={addr_i} SLOT=0 LBALG=undef AFFTimeout={fe.affinity_timeout} COUNT={len(fe.internal or [])} "
                          f"QCOUNT={len(fe.internal_draining)} FLAGS={flags}")
                for slot, be in enumerate((fe.internal or []) + fe.internal_draining, 1):
                    beid = lb.backend_id(be.ip, be.port, fe.proto)
                    shown = "terminating" if be.state == "terminating-not-serving" else be.state
                    lines.add(f"BE: ID={beid} ADDR={render.addr(be.ip, be.port, fe.proto)} STATE={shown}")
                    lines.add(f"SVC: ID={fe.internal_id} ADDR={addr_i} SLOT={slot} BEID={beid} COUNT=0 QCOUNT=0 FLAGS={flags}")
                    if fe.flags & F_AFFINITY and be.state == "active":
                        lines.add(f"AFF: ID={fe.internal_id} BEID={beid}")
                if fe.internal and self.has_maglev_table(fe):
                    counts = maglev.slot_counts(self.seed(), tuple((b.ip, b.port) for b in fe.internal), fe.proto)
                    lines.add(maglev_line(fe.internal_id, {lb.backend_id(ip, port, fe.proto): n for (ip, port), n in counts.items()}))
            if self.has_maglev_table(fe):
                counts = maglev.slot_counts(self.seed(), tuple((b.ip, b.port) for b in fe.backends), fe.proto)
                lines.add(maglev_line(fe.id, {lb.backend_id(ip, port, fe.proto): n for (ip, port), n in counts.items()}))
            if fe.wildcard_in_map:  # ID 0, port 0, proto ANY (datapath.SRC_WILDCARD)
                wild = f"[{fe.ip}]:0" if ":" in fe.ip else f"{fe.ip}:0"
                lines.add(f"SVC: ID=0 ADDR={wild}/ANY SLOT=0 LBALG=undef AFFTimeout=0 COUNT=0 QCOUNT=0 FLAGS={flags_string(svc_flags(fe.type))}")
        order = {"AFF": 0, "BE": 1, "MAGLEV": 2, "REV": 3, "SRCRANGE": 4, "SVC": 5}  # DumpLBMaps sorts the lines
        return 0, "".join(x + "\n" for x in sorted(lines, key=lambda x: (order[x.split(":")[0]], x))), ""

    def _frontends(self) -> tuple[int, str, str]:
        if self.minor < (1, 18):
            return 1, "", 'Error: table "frontends" not found\n'
        # the table holds a NodePort (and HostPort) frontend once, on the zero address: its node addresses are the BPF
        # reconciler's expansion (lbcp.bpf); a frontend with two scopes is two rows (`<addr>/i`); rows in key order
        rows = []
        for fe in self.frontends():
            if fe.type in ("NodePort", "HostPort") and fe.ip not in NODEPORT_WILDCARD.values():
                continue
            for scope, bes in ((SCOPE_EXTERNAL, fe.backends), (SCOPE_INTERNAL, fe.internal)):
                if bes is None:
                    continue
                rows.append((L3n4(ip_of(fe.ip), fe.port, fe.proto, scope).key, {
                    "address": render.addr(fe.ip, fe.port, fe.proto) + ("/i" if scope == SCOPE_INTERNAL else ""), "type": fe.type,
                    "service": fe.service, "port_name": fe.port_name, "backends": [render.addr(b.ip, b.port, fe.proto) for b in bes],
                    "status": fe.status, "error": fe.error}))
        return 0, render.frontends_table([r for _, r in sorted(rows, key=lambda kr: kr[0])]), ""

