"""The fake cluster's upgrades: agents replaced node by node in wall time, and the flows that live through it.

``FakeCluster.start_roll(version)`` replaces each node's agent pod in turn (``agent_restart_s`` each: the old
pod goes, a new one is NotReady, then Ready) and switches the cluster's Cilium version when the last is
Ready. What a flow sees follows Cilium's documented upgrade impact: "Networking connectivity, policy
enforcement and load balancing will remain functional in general" (cilium/cilium
Documentation/operations/upgrade.rst, "Upgrade Impact"): the BPF programs and maps stay while an agent
restarts, so a conforming flow sees no gap beyond its cadence. The faults (pytest_kpr.testing.config) break that.

A flow pod runs ``kpr probe flow TARGET --json ...`` (restartPolicy Never); ``kill -TERM 1`` in it ends the
flow, and its log then holds what the real command prints: a line per gap over 100 ms and the summary.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field, replace
from typing import Any

from ..parse.addr import family_of, split_host_port
from ..rules.datapath import SOCKET_TERMINATION_BATCH_S, pod_udp_sockets_terminated
from .view import Obj, pod_ip
from .faults import Fails, Fault, declare


FAULTS = declare(  # what this module can be told to get wrong (pytest_kpr.testing.faults)
    Fault("terminating_cuts_connections", "terminating backends",
          doc="a backend's established connections are reset the moment it starts terminating (its datapath state dropped at once)",
          fails=Fails(tests="test_an_established_connection_keeps_working_while_its_backend_terminates",
                      says="*terminating backends (established connection): the established connection to term-a was interrupted while it terminated: 1 resets, 1 reconnects*")),
    Fault("terminating_stalls_connections", "terminating backends",
          doc="a terminating backend's established connections go silent for 3 s when it starts terminating (no reset)",
          fails=Fails(tests="test_an_established_connection_keeps_working_while_its_backend_terminates",
                      says="*terminating backends (established connection): the established connection to term-a went silent for 3000 ms while it terminated (bound 1000 ms)*")),
    Fault("udp_sockets_not_terminated", "UDP",
          doc="a pod's connected UDP socket to a deleted backend is not terminated: it keeps sending into the deleted pod",
          fails=(
              # a connected client's socket to a deleted backend is terminated by the agent (datapath.SRC_UDP_SOCK_TERMINATION)
              Fails(name="udp-socket-not-terminated", tests="test_a_connected_client_of_a_deleted_backend_is_terminated_and_moves_on",
                    says="*UDP (socket termination): the connected socket to the deleted backend udpterm-a (10.244.*:5353) was not terminated (no ECONNABORTED): * datagrams lost, and it was never answered again*"),
          )),
    Fault("upgrade_renumbers_ids", "upgrade", per_family=True,
          doc="the new agents give the family's services and backends new IDs (not restored: PR #18119)",
          fails=(
              Fails(name="ids-renumbered", tests="test_no_service_or_backend_id_changed_or_was_reused[upgrade]", says="*IDs changed*"),
              Fails(name="ids6-renumbered", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_no_service_or_backend_id_changed_or_was_reused[upgrade-IPv6]",
                    says="*upgrade 1.19.8 -> 1.20.2 (IPv6): IDs changed (connections can end up at the wrong backend, cf. PR #18119)*"),
          )),
    Fault("upgrade_flushes_ct", "upgrade", per_family=True,
          doc="the new agents start with empty conntrack maps of the family (cilium_ct4_global / cilium_ct6_global; cf. #29667)",
          fails=(
              Fails(name="ct-flushed", tests="test_the_flows_conntrack_entries_survive[upgrade]",
                    says="*the conntrack entries of these flows were gone after the roll*"),
              Fails(name="ct6-flushed", value="IPv6", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_the_flows_conntrack_entries_survive[upgrade-IPv6]",
                    says="*upgrade 1.19.8 -> 1.20.2 (IPv6): the conntrack entries of these flows were gone after the roll (cf. #29667): pod->ClusterIP (IPv6)*"),
          )),
    Fault("upgrade_resets_flow", "upgrade", "this flow pod's connection is reset when its node's agent restarts", default=None,
          fails=(
              Fails(name="flow-reset", value="flow-pod-clusterip-upgr", tests="test_no_flow_was_reset_closed_or_stalled[upgrade]",
                    says="*flows broke: pod->ClusterIP: 1 resets*"),
              Fails(name="ipv6-flow-reset", value="flow-pod-clusterip-ipv6-upgr", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_no_flow_was_reset_closed_or_stalled[upgrade-IPv6]",
                    says="*upgrade 1.19.8 -> 1.20.2 (IPv6): flows broke: pod->ClusterIP (IPv6): 1 resets*"),
          )),
    Fault("upgrade_blackhole_flow", "upgrade", "this flow pod's path drops everything for 3 s from its node's restart", default=None,
          fails=(
              Fails(name="3s-blackhole", value="flow-pod-nodeport-upgr", tests="test_no_flow_saw_a_gap_longer_than_allowed[upgrade]",
                    says="*pod->NodePort: longest gap 3.00 s > 1 s (pytest-kpr policy (--kpr-upgrade-max-gap), not a Cilium promise) (during cilium-*"),
              Fails(name="ipv6-blackhole", value="flow-pod-nodeport-ipv6-upgr", fake="ip_families=('IPv4', 'IPv6')",
                    tests="test_no_flow_saw_a_gap_longer_than_allowed[upgrade-IPv6]",
                    says="*pod->NodePort (IPv6): longest gap 3.00 s > 1 s*"),
          )),
    Fault("upgrade_regresses_no_backend", "upgrade", "the new agents answer a backendless service with drop, not reject",
          fails=Fails(name="no-backend-regressed", tests="test_no_datapath_property_regressed[upgrade]",
                      says="*held before and not after: no_backend_response was 'reject', now 'drop'*")),
)

BLACKHOLE_S = 3.0


@dataclass
class RollState:
    to_version: str
    start: float
    nodes: list[str]
    restart_s: float
    #: node -> (down_at, ready_at, old pod, new pod)
    steps: dict[str, tuple[float, float, str, str]] = field(default_factory=dict)
    done: bool = False


@dataclass
class FlowPod:
    pod: str
    namespace: str
    node: str
    udp: bool
    interval_ms: float
    target: str
    started: float
    ended: float | None = None
    #: (namespace, pod) of the backend its TCP connection, or its connected UDP socket through socket LB, reached (a pod's
    #: flow to a Service)
    backend: tuple[str, str] | None = None


def flow_args(pod: Obj) -> dict[str, Any] | None:
    cmd = (pod.get("spec", {}).get("containers") or [{}])[0].get("command") or []
    if cmd[:3] != ["kpr", "probe", "flow"]:
        return None
    interval = float(cmd[cmd.index("--interval-ms") + 1]) if "--interval-ms" in cmd else 10.0
    return {"target": cmd[3], "udp": "--udp" in cmd, "interval_ms": interval}


class FakeUpgrades:
    def __init__(self, cluster: Any):
        self.c = cluster
        self.roll: RollState | None = None
        self.history: list[RollState] = []
        self.flows: dict[tuple[str, str], FlowPod] = {}

    # -- the roll ----------------------------------------------------------------------------------------

    def start(self, to_version: str) -> None:
        nodes = sorted(self.c.agents)
        self.roll = RollState(to_version, self.c.clock.time(), nodes, self.c.cfg.agent_restart_s)

    def window(self, node: str) -> tuple[float, float] | None:
        """When ``node``'s agent was (or will be) down in the current or last roll."""
        for roll in ([self.roll] if self.roll else []) + self.history[::-1]:
            if node in roll.nodes:
                i = roll.nodes.index(node)
                down = roll.start + i * (roll.restart_s + 0.1)
                return down, down + roll.restart_s
        return None

    def reconcile(self) -> None:
        roll = self.roll
        if roll is None:
            return
        now = self.c.clock.time()
        pods = self.c._objects["Pod"]
        for node in roll.nodes:
            down, up = self.window(node) or (0.0, 0.0)
            if now < down:
                continue
            if node not in roll.steps:
                old = next(k[1] for k, p in pods.items() if p["metadata"].get("labels", {}).get("k8s-app") == "cilium"
                           and p["spec"]["nodeName"] == node)
                template = pods.pop(("kube-system", old))
                new = f"cilium-{secrets.token_hex(3)[:5]}"
                pods[("kube-system", new)] = {**template, "metadata": {**template["metadata"], "name": new, "uid": f"uid-roll-{new}"},
                                              "status": {**template["status"], "conditions": [{"type": "Ready", "status": "False"}]}}
                roll.steps[node] = (down, up, old, new)
                if "upgrade_flushes_ct" in self.c.cfg.faults.given():  # fault: the new agent starts with (the family's) CT maps
                    flushed = self.c.cfg.faults.on  # empty (datapath.SRC_CT_FAMILY: a map per family)
                    self.c.ct[node] = [e for e in self.c.ct.get(node, []) if not flushed("upgrade_flushes_ct", family_of(e["src_ip"]))]
            if now >= up:
                pods[("kube-system", roll.steps[node][3])]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        if all(n in roll.steps and now >= roll.steps[n][1] for n in roll.nodes):
            self.c.cfg = replace(self.c.cfg, cilium_version=roll.to_version)
            if self.c.cfg.faults.upgrade_regresses_no_backend:  # fault: a setting lost across the upgrade
                self.c.cfg = replace(self.c.cfg, no_backend_response="drop")
            renumbered = self.c.cfg.faults.given().get("upgrade_renumbers_ids")  # fault: (the family's) IDs not restored
            if renumbered:
                self.c.lb.renumber(None if renumbered is True else renumbered)
            roll.done = True
            self.history.append(roll)
            self.roll = None

    # -- flows ----------------------------------------------------------------------------------------------

    def track(self, pod: Obj) -> None:
        """A flow pod that just started: remember when, and (TCP from a pod to a service) the connection's
        conntrack entry on its node, as for the holder (pytest_kpr.testing.pods)."""
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        args = flow_args(pod)
        if args is None or key in self.flows or pod["status"].get("phase") != "Running":
            return
        node = pod["spec"]["nodeName"]
        self.flows[key] = FlowPod(key[1], key[0], node, args["udp"], args["interval_ms"], args["target"], self.c.clock.time())
        ip, port = split_host_port(args["target"]) or ("", 0)  # [v6]:port too
        fe = self.c.lb.find(node, ip, int(port), "UDP" if args["udp"] else "TCP")
        if pod["spec"].get("hostNetwork") or fe is None or not fe.backends:
            return
        be = fe.backends[len(self.flows) % len(fe.backends)]
        if args["udp"]:  # a connected UDP socket: socket LB picks its backend once, at connect() (datapath.SRC_SOCK_FWD);
            # per packet (Hostns-only, or the socket-LB faults) there is no socket-level backend to terminate
            if not self.c.workloads.per_packet(family_of(ip)):
                self.flows[key].backend = (key[0], be.pod)
            return
        self.flows[key].backend = (key[0], be.pod)
        self.c.ct.setdefault(node, []).append({
            "proto": "TCP", "dir": "OUT", "src_ip": pod_ip(pod, family_of(ip)) or pod["status"]["podIP"], "src_port": 50000 + len(self.flows), "dst_ip": be.ip,
            "dst_port": be.port, "rx_flags_seen": 0x1A, "tx_flags_seen": 0x1A, "flags": 0x10, "flag_names": ("SeenNonSyn",),
            "expires": 21600, "source_security_id": 4242, "rev_nat": 0})

    def stop(self, pod: Obj) -> None:
        f = self.flows.get((pod["metadata"]["namespace"], pod["metadata"]["name"]))
        if f is not None and f.ended is None:
            f.ended = self.c.clock.time()
            pod["status"]["phase"] = "Succeeded"

    def log(self, namespace: str, pod: str) -> str:
        f = self.flows.get((namespace, pod))
        if f is None or f.ended is None:
            return ""
        faults = self.c.cfg.faults
        sent = int((f.ended - f.started) * 1000.0 / f.interval_ms)
        report: dict[str, Any] = {"kind": "flow", "proto": "udp" if f.udp else "tcp", "target": f.target, "interval_ms": f.interval_ms,
                                  "duration_s": round(f.ended - f.started, 3), "started": round(f.started, 3), "ended": round(f.ended, 3),
                                  "sent": sent, "answered": sent, "lost": 0, "resets": 0, "closed": 0, "stalls": 0, "aborted": 0, "reconnects": 0,
                                  "connect_failures": 0, "max_gap_ms": f.interval_ms, "gaps": [],
                                  "events": [{"at": round(f.started, 3), "event": "connected"}], "rtt_ms": None, "send_late_ms": None}
        lines = []
        window = self.window(f.node)
        if window is not None and f.started <= window[0] <= f.ended:
            if faults.upgrade_blackhole_flow == pod:
                gap = {"start": round(window[0], 3), "ms": BLACKHOLE_S * 1000.0}
                lost = int(BLACKHOLE_S * 1000 / f.interval_ms) if f.udp else 0
                report.update(max_gap_ms=gap["ms"], gaps=[gap], lost=lost, answered=sent - lost)
                lines.append({"kind": "gap", **gap})
            if faults.upgrade_resets_flow == pod and not f.udp:
                gap = {"start": round(window[0], 3), "ms": round((window[1] - window[0]) * 1000.0, 1)}
                report.update(resets=1, reconnects=1, max_gap_ms=max(report["max_gap_ms"], gap["ms"]), gaps=report["gaps"] + [gap],
                              lost=report["lost"] + 3, answered=report["answered"] - 3)
                report["events"] += [{"at": gap["start"], "event": "reset"}, {"at": round(window[1], 3), "event": "reconnected"}]
                lines.append({"kind": "gap", **gap})
        self._backend_went(f, report, lines)
        return "".join(json.dumps(x) + "\n" for x in lines + [report])

    def _backend_went(self, f: FlowPod, report: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        """The backend of a TCP flow was deleted while the flow ran. Its established connection keeps working while the
        pod terminates (datapath.SRC_TERMINATING_DRAIN): the server closes it when its process exits, and the flow
        reconnects through the Service. Faults: terminating_cuts_connections (a reset the moment the termination starts),
        terminating_stalls_connections (3 s of silence from then, no reset)."""
        if f.backend is None or f.ended is None or f.backend not in self.c.terminations:
            return
        start, exit_at = self.c.terminations[f.backend]
        if f.udp:
            self._udp_backend_went(f, exit_at, report, lines)
            return
        if self.c.cfg.faults.terminating_cuts_connections and f.started <= start <= f.ended:
            gap = {"start": round(start, 3), "ms": 200.0}
            report.update(resets=report["resets"] + 1, reconnects=report["reconnects"] + 1, max_gap_ms=max(report["max_gap_ms"], gap["ms"]),
                          gaps=report["gaps"] + [gap], lost=report["lost"] + 1, answered=report["answered"] - 1)
            report["events"] += [{"at": gap["start"], "event": "reset"}, {"at": round(start + 0.2, 3), "event": "reconnected"}]
            lines.append({"kind": "gap", **gap})
        elif self.c.cfg.faults.terminating_stalls_connections and f.started <= start <= f.ended:
            gap = {"start": round(start, 3), "ms": 3000.0}
            report.update(max_gap_ms=max(report["max_gap_ms"], gap["ms"]), gaps=report["gaps"] + [gap])
            lines.append({"kind": "gap", **gap})
        elif f.started <= exit_at <= f.ended:
            report.update(closed=report["closed"] + 1, reconnects=report["reconnects"] + 1)
            report["events"] += [{"at": round(exit_at, 3), "event": "closed"}, {"at": round(exit_at + 0.01, 3), "event": "reconnected"}]

    def _udp_backend_went(self, f: FlowPod, gone_at: float, report: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        """The backend of a pod's connected UDP socket was deleted (gone from the EndpointSlice at ``gone_at``) while the
        flow ran: the agent terminates the socket within its batch (datapath.SRC_UDP_SOCK_TERMINATION), the flow's next
        call fails with ECONNABORTED and it reconnects through the Service. Where the agent does not (the option off) or
        the fault udp_sockets_not_terminated, the socket keeps sending into the deleted pod: nothing answers it again."""
        if not f.started <= gone_at <= f.ended:
            return
        cfg = self.c.cfg
        step = f.interval_ms / 1000.0
        if cfg.faults.udp_sockets_not_terminated or not pod_udp_sockets_terminated(cfg.socket_lb_pod_connection_termination, "Full"):
            silent = f.ended - gone_at
            lost = int(silent / step)
            gap = {"start": round(gone_at, 3), "ms": round(silent * 1000.0, 1), "open": True}
        else:
            aborted_at = gone_at + SOCKET_TERMINATION_BATCH_S
            lost = max(1, int(SOCKET_TERMINATION_BATCH_S / step))
            gap = {"start": round(gone_at, 3), "ms": round((SOCKET_TERMINATION_BATCH_S + step) * 1000.0, 1)}
            report.update(aborted=report["aborted"] + 1, reconnects=report["reconnects"] + 1)
            report["events"] += [{"at": round(aborted_at, 3), "event": "aborted"}, {"at": round(aborted_at + 0.001, 3), "event": "reconnected"}]
        report.update(lost=report["lost"] + lost, answered=report["answered"] - lost, max_gap_ms=max(report["max_gap_ms"], gap["ms"]),
                      gaps=report["gaps"] + [gap])
        lines.append({"kind": "gap", **gap})
