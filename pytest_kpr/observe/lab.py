"""The lab the datapath suites follow: its workloads, and one observation method per thing the lab
asks a person to look at. Library code: no pytest, no assertions; the suites judge.

Workloads (in the run's namespace; every pod uses the probe image, so one preloaded image serves all):
``web`` (Deployment, HTTP on 8080, 2 replicas) behind ClusterIP ``web`` 80->8080; ``holder`` (holds a
TCP connection from port 40404 to web's ClusterIP:80); ``web-np`` (NodePort, 30780 by default);
``ghost`` (ClusterIP whose selector matches nothing); ``probe`` (curl and ``kpr probe``, NET_RAW only).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from typing import Any, Callable

from .agent import Agent, agents
from ..judge.backend_slots import Convergence, ConvergenceTiming, SlotView, active_slots
from ..cluster.facts import ClusterFacts
from ..cluster.provider import ClusterHandle
from ..core.errors import ApiError, KprError
from ..k8s.api import pod_ready
from .node import Node, globoff
from ..parse import L3n4, Service
from ..parse.addr import family_of, hp
from ..parse.bpftool_map import AffinityEntry
from ..parse.errors import ParseError
from ..parse.node import CURL_WRITE_OUT, HttpResult, parse_curl, parse_netstat
from ..model.probe import ProbeResult
from ..parse.probe import HoldEvent, parse_hold_log, parse_probe_json
from ..core.wait import Observation, Timeouts, WaitTimeout, eventually
from .workloads import PROBE_CONTAINER, probe_pod
from ..core import clock
from ..rules.workloads import listen_address, logged_client

#: how often a scale's convergence is read: the resolution of the timing it records
CONVERGENCE_POLL_S = 0.25

HOLDER_PORT = 40404
WEB_PORT = 80
WEB_TARGET = 8080
#: a jig's tweak: changes the template in place (spec fields), before the object is created
Tweak = Callable[[dict[str, Any]], None]


def _last_on_timeout(wait: Callable[[], Observation[Convergence]]) -> Observation[Convergence]:
    """The wait's observation; when it ran out, its last one with ``timed_out`` (a convergence is judged, not raised)."""
    try:
        return wait()
    except WaitTimeout as e:
        if not isinstance(e.last, Convergence):
            raise
        return Observation(e.last, e.elapsed, e.attempts, timed_out=True)


class LabError(KprError):
    """A workload could not be set up (the cause is named); the property was not judged."""


def sanity_problems(asked: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """What the API server returned for a created object, against what was asked (after the tweak): the same object, and
    for a Service what the suites rely on -- its type and ports as asked, a ClusterIP allocated (or None kept), a
    NodePort on each port of a NodePort or LoadBalancer Service (the one asked for, if any) and none on a ClusterIP
    Service's, a health-check NodePort for a LoadBalancer with externalTrafficPolicy Local; for a Deployment its
    replicas. As kubernetes/kubernetes test/e2e/framework/service/jig.go sanityCheckService checks a created Service."""
    md, gmd = asked.get("metadata") or {}, got.get("metadata") or {}
    ident = (asked.get("kind"), md.get("name"), md.get("namespace"))
    seen = (got.get("kind", asked.get("kind")), gmd.get("name"), gmd.get("namespace", md.get("namespace")))
    if seen != ident:
        return [f"the answer is {seen[0]} {seen[2]}/{seen[1]}"]
    spec, gspec = asked.get("spec") or {}, got.get("spec") or {}
    out: list[str] = []
    if asked.get("kind") == "Deployment" and spec.get("replicas") is not None and gspec.get("replicas") != spec["replicas"]:
        out.append(f"replicas {gspec.get('replicas')}, asked {spec['replicas']}")
    if asked.get("kind") != "Service":
        return out
    type_ = spec.get("type", "ClusterIP")
    if gspec.get("type", "ClusterIP") != type_:
        out.append(f"type {gspec.get('type')}, asked {type_}")
    want = [(p.get("port"), p.get("protocol", "TCP")) for p in spec.get("ports") or []]
    have = [(p.get("port"), p.get("protocol", "TCP")) for p in gspec.get("ports") or []]
    if have != want:
        out.append(f"ports {have}, asked {want}")
    cip = gspec.get("clusterIP")
    if spec.get("clusterIP") == "None":
        if cip != "None":
            out.append(f"clusterIP {cip}, asked None (headless)")
    elif not cip or cip == "None":
        out.append("no ClusterIP allocated")
    node_ports = type_ in ("NodePort", "LoadBalancer") and spec.get("allocateLoadBalancerNodePorts") is not False
    for asked_port, got_port in zip(spec.get("ports") or [], gspec.get("ports") or []):
        np = got_port.get("nodePort")
        if node_ports and not np:
            out.append(f"no NodePort allocated for port {got_port.get('port')}")
        elif not node_ports and type_ == "ClusterIP" and np:
            out.append(f"a NodePort {np} on port {got_port.get('port')} of a ClusterIP Service")
        elif asked_port.get("nodePort") and np != asked_port["nodePort"]:
            out.append(f"NodePort {np} for port {got_port.get('port')}, asked {asked_port['nodePort']}")
    if type_ == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local" and not gspec.get("healthCheckNodePort"):
        out.append("no healthCheckNodePort allocated for a LoadBalancer with externalTrafficPolicy Local")
    return out


def same_address(a: L3n4, b: L3n4) -> bool:
    """Same IP and port, and same protocol when both carry one (1.16 prints none)."""
    return a.ip == b.ip and a.port == b.port and (a.proto is None or b.proto is None or a.proto == b.proto) and a.internal == b.internal


@dataclass(frozen=True)
class Ghost:
    cluster_ip: L3n4  # ClusterIP:80
    node_port: int


class _Recording:
    """A suite's kube client: every object created through it is recorded in the suite's :attr:`Lab.made`."""

    def __init__(self, inner: Any, lab: "Lab"):
        self._inner, self._lab = inner, lab

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, obj: dict[str, Any]) -> Any:
        out = self._inner.create(obj)
        md = obj.get("metadata") or {}
        self._lab.made.append((str(obj.get("kind")), str(md.get("name")), str(md.get("namespace") or "")))
        return out


class Lab:
    def __init__(self, handle: ClusterHandle, facts: ClusterFacts, timeouts: Timeouts, namespace: str, *,
                 image: str, node_port: int = 30780, progress: Callable[[str], None] | None = None,
                 ip_families: tuple[str, ...] = ("IPv4",), run_id: str = "", run_labels: dict[str, str] | None = None,
                 track: Callable[[dict[str, Any]], None] | None = None):
        self.handle = handle
        #: the run this lab is part of: its id (in the names of what it makes outside a namespace), the labels that mark an
        #: object as the run's, and ``track_cluster_object``, which makes a cluster-scoped object the run's to delete at its
        #: end (a suite reaches the run through its lab: pytest_kpr.plugin.fixtures kpr_lab gives them)
        self.run_id = run_id
        self.run_labels = dict(run_labels or {})
        self.track_cluster_object: Callable[[dict[str, Any]], None] = track or (lambda obj: None)
        self.kube = handle.kube
        self.facts = facts
        self.t = timeouts
        self.ns = namespace
        self.image = image
        self.node_port = node_port
        self.progress = progress or (lambda line: None)
        self.minor = (facts.cilium.major, facts.cilium.minor)
        self._agents: dict[str, Agent] = {}
        workers = [n.name for n in facts.workers]
        self.client_node = workers[0]
        self.created: set[str] = set()
        #: labels every Service this lab makes carries (a suite's LB-IPAM pool selects its own Services by them:
        #: scenarios.vips; in a named --kpr-namespace every suite shares the namespace, so the namespace cannot tell them apart)
        self.service_labels: dict[str, str] = {}
        #: the families the run tests (--kpr-ip-families): with more than one, the lab's Services ask for every family the
        #: cluster has (ipFamilyPolicy PreferDualStack)
        self.ip_families = ip_families
        #: the family this view reads addresses in (in_family); None: each object's first, as Kubernetes lists them
        self.family: str | None = None
        #: a suite's view (for_suite): the session's lab, whose shared workloads (web, probe, holder, ...) it reads
        self.shared: Lab | None = None
        #: (kind, name, namespace) of each object this lab created, in order: what a suite's view deletes when it ends
        self.made: list[tuple[str, str, str]] = []
        #: the pod labels of each Pod and Deployment this lab created (a selector matching none of them is the shared lab's)
        self.pod_labels: list[dict[str, str]] = []
        #: pod name -> whether it is one of the session's (a pod of a shared Deployment), as looked up once
        self.shared_pods: dict[str, bool] = {}

    def for_suite(self, namespace: str) -> "Lab":
        """This lab as one suite sees it: what the suite creates goes into ``namespace`` (its own, deleted when the suite
        ends), while a name or selector of the session's shared workloads (web, web-np, ghost, probe, hostprobe, holder)
        that the suite did not make itself is read in the session's namespace. The kube client records every creation, so
        the suite's end finds even what a suite created around the jigs."""
        view = copy.copy(self)
        view.ns, view.shared, view.family = namespace, self, None
        view.made, view.pod_labels, view.created, view.shared_pods = [], [], set(), {}
        view.kube = _Recording(self.kube, view)
        return view

    def where(self, kind: str, name: str) -> str:
        """The namespace of ``kind/name`` for this lab: the session's for a shared workload the suite did not make (a pod
        of a shared Deployment, such as web's, is looked up once), else its own."""
        s = self.shared
        if s is None or f"{kind}/{name}" in self.created:
            return self.ns
        if f"{kind}/{name}" in s.created:
            return s.ns
        if kind == "Pod" and any(m[:2] == ("Pod", name) for m in self.made):
            return self.ns
        if kind == "Pod" and any(c.startswith("Deployment/") for c in s.created):
            if name not in self.shared_pods:
                self.shared_pods[name] = self.kube.get("Pod", name, self.ns) is None and self.kube.get("Pod", name, s.ns) is not None
            return s.ns if self.shared_pods[name] else self.ns
        return self.ns

    def _pods_ns(self, selector: str) -> str:
        """Where pods matching ``selector`` (``k=v,...``) live: the session's namespace when only its workloads carry those labels."""
        want = dict(kv.split("=", 1) for kv in selector.split(",") if "=" in kv)

        def matches(labels: list[dict[str, str]]) -> bool:
            return any(want.items() <= lab.items() for lab in labels)

        s = self.shared
        return s.ns if s is not None and matches(s.pod_labels) and not matches(self.pod_labels) else self.ns

    def in_family(self, family: str) -> "Lab":
        """This lab (the same workloads, agents and bookkeeping) reading addresses of ``family``: ClusterIPs, pod and node
        addresses, EndpointSlices; its holder is its own (``holder-ipv6`` for IPv6)."""
        view = copy.copy(self)
        view.family = family
        return view

    def family_views(self) -> dict[str, "Lab"]:
        """This lab in each family of the run (--kpr-ip-families) that the agents serve, the first one first (IPv4 alone when
        none is): for a scenario that changes its workloads, so runs once and observes every family."""
        return {f: self.in_family(f) for f in [f for f in self.ip_families if f in self.facts.ip_families] or ["IPv4"]}

    def address_of(self, ips: list[str], what: str) -> str:
        """The address of this view's family among ``ips`` (the first with no family chosen); LabError naming ``what``."""
        for ip in ips:
            if ip and (self.family is None or family_of(ip) == self.family):
                return ip
        raise LabError(f"{what} has no {self.family} address ({', '.join(ips) or 'none'}): the Kubernetes cluster does not give it "
                       f"that family")

    def pod_ip(self, pod: dict[str, Any]) -> str:
        st = pod.get("status", {})
        return self.address_of([i.get("ip", "") for i in st.get("podIPs") or []] or [st.get("podIP", "")],
                               f"pod {pod['metadata']['name']}")

    # -- handles ---------------------------------------------------------------------------------------

    def agent(self, node: str) -> Agent:
        if node not in self._agents:
            self._agents[node] = Agent.on_node(self.kube, node, exec_timeout=self.t.EXEC, retry_timeout=self.t.API_CALL)
        return self._agents[node]

    def all_agents(self) -> list[Agent]:
        return [self.agent(a.node) for a in agents(self.kube)]

    def node(self, name: str) -> Node:
        return Node(self.handle.nodes, name, exec_timeout=self.t.EXEC, retry_timeout=self.t.API_CALL)

    def node_ip(self, name: str) -> str:
        if self.family is None:
            return next(n.internal_ip for n in self.facts.nodes if n.name == name)
        node = self.kube.get("Node", name) or {}
        ips = [a["address"] for a in node.get("status", {}).get("addresses") or [] if a.get("type") == "InternalIP"]
        return self.address_of(ips, f"node {name}")

    # -- plumbing --------------------------------------------------------------------------------------

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create ``obj`` in the cluster (already there from an earlier attempt: the existing one), remembered as the
        run's. The jigs below (``create_service``, ``create_deployment``, ``create_web_pod``) build the usual objects."""
        try:
            out = self.kube.create(obj)
        except ApiError as e:
            if e.status == 409:
                out = self.kube.get(obj["kind"], obj["metadata"]["name"], self.ns) or {}
            else:
                raise
        self.created.add(f"{obj['kind']}/{obj['metadata']['name']}")
        pod_labels = (obj.get("metadata") or {}).get("labels") if obj["kind"] == "Pod" else \
            (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")
        if pod_labels:
            self.pod_labels.append(dict(pod_labels))
        return out

    def pods(self, selector: str) -> list[dict[str, Any]]:
        return self.kube.list("Pod", self._pods_ns(selector), selector)

    ready = staticmethod(pod_ready)

    def serving_replicas(self, selector: str) -> int:
        """Pods Ready and not terminating: a scaled-down pod can stay Ready while it terminates (its preStop hook, its
        grace period), but it is no longer one of the replicas, and its endpoint is no longer ready."""
        return sum(1 for p in self.pods(selector) if self.ready(p) and not (p.get("metadata") or {}).get("deletionTimestamp"))

    def pod_by_ip(self, ip: str) -> str | None:
        """The name of the pod with ``ip``, in this lab's namespace or (a suite's view) the session's."""
        namespaces = [self.ns] + ([self.shared.ns] if self.shared is not None and self.shared.ns != self.ns else [])
        for p in (p for ns in namespaces for p in self.kube.list("Pod", ns)):
            if ip in [p.get("status", {}).get("podIP")] + [i.get("ip") for i in p.get("status", {}).get("podIPs") or []]:
                return str(p["metadata"]["name"])
        return None

    def wait_running(self, pod: str) -> dict[str, Any]:
        ns = self.where("Pod", pod)

        def observe() -> dict[str, Any]:
            return self.kube.get("Pod", pod, ns) or {}

        def abort(p: dict[str, Any]) -> str | None:
            for cs in p.get("status", {}).get("containerStatuses") or []:
                reason = (cs.get("state", {}).get("waiting") or {}).get("reason")
                if reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError"):
                    return f"pod {ns}/{pod}: {reason} ({self.image}; preload it, see --kpr-probe-image)"
            return None

        return eventually(observe, until=lambda p: p.get("status", {}).get("phase") == "Running", timeout=self.t.PODS_READY,
                          what=f"pod {ns}/{pod} to run", describe=lambda p: str(p.get("status", {}).get("phase")),
                          abort=abort, progress=self.progress).value

    def exec(self, pod: str, *argv: str, timeout: float | None = None) -> Any:
        return self.kube.exec(self.where("Pod", pod), pod, list(argv), container=PROBE_CONTAINER, timeout=timeout or self.t.EXEC)

    # -- web -------------------------------------------------------------------------------------------

    def web_deployment(self, replicas: int) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": self.ns, "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                                                       "labelSelector": {"matchLabels": {"app": "web"}}}],
                        "containers": [{
                            "name": PROBE_CONTAINER, "image": self.image, "imagePullPolicy": "IfNotPresent",
                            "command": self.web_command(),
                            "ports": [{"containerPort": WEB_TARGET, "name": "http"}],
                            "readinessProbe": {"httpGet": {"path": "/", "port": WEB_TARGET}, "periodSeconds": 1},
                        }],
                    },
                },
            },
        }

    def _bind(self) -> list[str]:
        """``--bind ::`` (both families) when the run tests IPv6, else nothing (the server's default)."""
        bind = listen_address(self.ip_families)
        return ["--bind", bind] if bind else []

    def web_command(self) -> list[str]:
        """Python's http.server on 8080; on ``::`` when the run tests IPv6 (by default it listens on 0.0.0.0 only and
        refuses IPv6: rules.workloads.SRC_HTTP_SERVER_FAMILY)."""
        return ["python3", "-m", "http.server", *self._bind(), str(WEB_TARGET)]

    def echo_server_command(self, port: int, udp: bool = False) -> list[str]:
        """``kpr probe echo-server`` on ``port``; on ``::`` (both families) when the run tests IPv6."""
        return ["kpr", "probe", "echo-server", *(["--udp"] if udp else []), "--port", str(port), *self._bind()]

    def family_policy(self) -> dict[str, str]:
        """A lab Service's family fields: with more than one family tested, a ClusterIP of each family the cluster has
        (``ipFamilyPolicy: PreferDualStack``; one only on a single-stack cluster); else none (the cluster's first)."""
        return {"ipFamilyPolicy": "PreferDualStack"} if len(self.ip_families) > 1 else {}

    def service(self, name: str, selector: dict[str, str], type_: str = "ClusterIP", node_port: int | None = None) -> dict[str, Any]:
        port: dict[str, Any] = {"name": "http", "port": WEB_PORT, "targetPort": WEB_TARGET, "protocol": "TCP"}
        if node_port is not None:
            port["nodePort"] = node_port
        spec: dict[str, Any] = {"type": type_, "selector": selector, "ports": [port], **self.family_policy()}
        md: dict[str, Any] = {"name": name, "namespace": self.ns, **({"labels": dict(self.service_labels)} if self.service_labels else {})}
        return {"apiVersion": "v1", "kind": "Service", "metadata": md, "spec": spec}

    # -- jigs: a template, a tweak callback, a sanity check on create, and a wait until programmed ---------------------

    def _jig(self, obj: dict[str, Any], tweak: Tweak | None) -> dict[str, Any]:
        """Apply ``tweak`` to the template, check it left the object's identity alone, create it."""
        kind, name = obj["kind"], obj["metadata"]["name"]
        if tweak is not None:
            tweak(obj)
        md = obj.get("metadata") or {}
        if (obj.get("kind"), md.get("name"), md.get("namespace")) != (kind, name, self.ns):
            raise LabError(f"a tweak changed {kind} {self.ns}/{name} into {obj.get('kind')} {md.get('namespace')}/{md.get('name')}: "
                           "tweak the spec, not what the object is")
        asked = copy.deepcopy(obj)  # the client may fill in the object it sends
        got = self.create(obj)
        problems = sanity_problems(asked, got)
        if problems:
            raise LabError(f"the API server's answer to creating {kind} {self.ns}/{name} is not what was asked: {'; '.join(problems)}")
        return got

    def create_service(self, name: str, selector: dict[str, str], type_: str = "ClusterIP", *, node_port: int | None = None,
                       tweak: Tweak | None = None) -> dict[str, Any]:
        """A Service on port 80 -> 8080 (:meth:`service`), changed by ``tweak`` (affinity, traffic policy, ...), created."""
        return self._jig(self.service(name, selector, type_, node_port), tweak)

    def create_deployment(self, name: str, replicas: int, *, tweak: Tweak | None = None) -> dict[str, Any]:
        """web's Deployment (HTTP on 8080, spread over the nodes) under another name, its pods labelled ``app=<name>``."""
        dep = self.web_deployment(replicas)
        labels = {"app": name}
        dep["metadata"].update(name=name, labels=dict(labels))
        dep["spec"]["selector"]["matchLabels"] = dict(labels)
        dep["spec"]["template"]["metadata"]["labels"] = dict(labels)
        dep["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"] = dict(labels)
        return self._jig(dep, tweak)

    def create_web_pod(self, name: str, labels: dict[str, str], node: str, *, host_port: int | None = None,
                       tweak: Tweak | None = None) -> dict[str, Any]:
        """One HTTP pod on ``node`` (:meth:`web_pod`), changed by ``tweak``, created."""
        return self._jig(self.web_pod(name, labels, node, host_port=host_port), tweak)

    def wait_ready_endpoints(self, service: str, count: int) -> frozenset[str]:
        """Until ``service``'s EndpointSlices list ``count`` ready addresses; those addresses."""
        return eventually(lambda: self.endpointslice_ready(service), until=lambda es: len(es) == count, timeout=self.t.PODS_READY,
                          what=f"{count} ready {service} endpoints", describe=lambda es: f"{len(es)} ready", progress=self.progress).value

    def deploy_web(self, replicas: int = 2) -> Observation[Convergence]:
        self.create(self.web_deployment(replicas))
        self.create(self.service("web", {"app": "web"}))
        return self.wait_converged(replicas)

    def _service_spec(self, service: str) -> dict[str, Any]:
        ns = self.where("Service", service)
        svc = self.kube.get("Service", service, ns)
        if svc is None:
            raise LabError(f"service {ns}/{service} does not exist")
        return dict(svc["spec"])

    def cluster_ip(self, service: str) -> str:
        spec = self._service_spec(service)
        return self.address_of(list(spec.get("clusterIPs") or [spec["clusterIP"]]), f"service {service}'s ClusterIP")

    def allocated_node_port(self, service: str) -> int:
        """The NodePort Kubernetes allocated to the Service's (first) port."""
        return int(self._service_spec(service)["ports"][0]["nodePort"])

    def frontend(self, service: str) -> L3n4:
        return L3n4(self.cluster_ip(service), WEB_PORT, "TCP" if self.minor >= (1, 17) else None)

    def endpointslice_ready(self, service: str) -> frozenset[str]:
        out = set()
        slices = self.kube.list("EndpointSlice", self.where("Service", service), f"kubernetes.io/service-name={service}")
        # this view's family; with none chosen, IPv4 if the Service has it (kind's dual stack lists IPv4 first), else IPv6
        family = self.family or ("IPv4" if any(es.get("addressType", "IPv4") == "IPv4" for es in slices) else "IPv6")
        for es in slices:
            if es.get("addressType", "IPv4") != family:
                continue
            ports = [p.get("port") for p in es.get("ports") or [] if p.get("port")]
            for ep in es.get("endpoints") or []:
                if (ep.get("conditions") or {}).get("ready") is False:
                    continue
                for a in ep.get("addresses") or []:
                    for p in ports:
                        out.add(hp(a, p))
        return frozenset(out)

    @staticmethod
    def slot_view(agent: Agent, fe: L3n4) -> SlotView:
        """``fe``'s slots on ``agent``: the ones a new connection picks (the master's COUNT), and the terminating ones kept
        after them (judge.backend_slots.active_slots; ``bpf lb list`` shows no count)."""
        (dump,) = agent.read("maps_dump")
        return active_slots(agent.node, dump, fe)

    def affinity_map(self, node: str) -> tuple[list[AffinityEntry] | None, str | None]:
        """``node``'s per-packet affinity map of this view's family (Agent.affinity_map), or None and why it could not be
        read (one line)."""
        try:
            return self.agent(node).affinity_map(self.family or "IPv4"), None
        except (KprError, ParseError) as e:
            return None, str(e).splitlines()[0] if str(e) else type(e).__name__

    def lb_ids(self, node: str) -> tuple[dict[str, int], dict[str, int]]:
        """From ``node``'s lb/maps-dump: each frontend's rev NAT ID (the master slot's ID) and each backend's ID, both by
        ``address:port/PROTO``."""
        (dump,) = self.agent(node).read("maps_dump")
        svcs = {e.fields["ADDR"]: int(e.fields["ID"]) for e in dump if e.kind == "SVC" and e.fields.get("SLOT") == "0"}
        bes = {e.fields["ADDR"]: int(e.fields["ID"]) for e in dump if e.kind == "BE"}
        return svcs, bes

    def slots(self, service: str = "web") -> tuple[SlotView, ...]:
        fe = self.frontend(service)
        return tuple(self.slot_view(a, fe) for a in self.all_agents())

    def convergence(self, replicas: int) -> Convergence:
        ready = self.serving_replicas("app=web")
        return Convergence(replicas, ready, self.endpointslice_ready("web"), self.slots("web"))

    def convergence_watch(self, replicas: int) -> Callable[[], Convergence]:
        """A cheaper :meth:`convergence` for polling: pods and the EndpointSlice (API reads) every time, but an
        agent's ``bpf lb list`` only while it lags: when it was never read, the EndpointSlice changed since
        its last read, or that read did not hold exactly the EndpointSlice's addresses. An agent read after
        the EndpointSlice's last change that matched it is up to date, so the final observation still has
        every agent's slots checked against the final EndpointSlice, as :meth:`convergence` would."""
        fe = self.frontend("web")
        agents_ = self.all_agents()
        last: dict[str, tuple[frozenset[str], SlotView]] = {}

        def current(es: frozenset[str], seen: tuple[frozenset[str], SlotView] | None) -> bool:
            return seen is not None and seen[0] == es and seen[1].service_id is not None and sorted(seen[1].backends) == sorted(es)

        def observe() -> Convergence:
            ready = self.serving_replicas("app=web")
            es = self.endpointslice_ready("web")
            for a in agents_:
                if not current(es, last.get(a.node)):
                    last[a.node] = (es, self.slot_view(a, fe))
            return Convergence(replicas, ready, es, tuple(last[a.node][1] for a in agents_))

        return observe

    def wait_converged(self, replicas: int) -> Observation[Convergence]:
        return eventually(self.convergence_watch(replicas), until=lambda c: c.converged, timeout=self.t.PODS_READY + self.t.DATAPATH_CONVERGENCE,
                          what=f"{replicas} Ready web pods whose addresses fill web's BPF LB slots on every agent",
                          describe=lambda c: c.describe(), progress=self.progress)

    def observe_converged(self, replicas: int) -> Observation[Convergence]:
        """:meth:`wait_converged`, except that when the wait runs out the last observation comes back with ``timed_out``
        for the caller to judge (as :meth:`scale_web` does)."""
        return _last_on_timeout(lambda: self.wait_converged(replicas))

    def scale_web(self, replicas: int) -> Observation[Convergence]:
        """Scale, then poll every ``CONVERGENCE_POLL_S`` (no fixed sleep, no backoff) until pods,
        EndpointSlice and every agent's slots agree, noting when each new backend first shows in the
        EndpointSlice and in each agent (``Convergence.timing``). When the wait runs out, the last
        observation comes back with ``timed_out`` for the caller to judge."""
        before = self.endpointslice_ready("web")
        self.kube.patch("Deployment", "web", self.where("Deployment", "web"), {"spec": {"replicas": replicas}})
        start = clock.monotonic()
        es_seen: dict[str, float] = {}
        agent_seen: dict[str, dict[str, float]] = {}

        watch = self.convergence_watch(replicas)

        def observe() -> Convergence:
            polled = round(clock.monotonic() - start, 3)
            c = watch()
            for be in sorted(c.endpointslice - before):
                es_seen.setdefault(be, polled)
            for v in c.slots:
                seen = agent_seen.setdefault(v.node, {})
                for be in sorted(set(v.backends) - before):
                    seen.setdefault(be, polled)
            return replace(c, timing=ConvergenceTiming(dict(es_seen), {n: dict(s) for n, s in agent_seen.items()}, CONVERGENCE_POLL_S))

        return _last_on_timeout(lambda: eventually(observe, until=lambda c: c.converged, timeout=self.t.PODS_READY + self.t.DATAPATH_CONVERGENCE,
                                                   what=f"{replicas} Ready web pods whose addresses fill web's BPF LB slots on every agent",
                                                   describe=lambda c: c.describe(), progress=self.progress, every=CONVERGENCE_POLL_S))

    def service_entry(self, agent: Agent, fe: L3n4, type_: str | None = None) -> Service | None:
        for s in agent.services():
            if same_address(s.frontend, fe) and (type_ is None or s.type == type_):
                return s
        return None

    # -- holder ----------------------------------------------------------------------------------------

    @property
    def holder_name(self) -> str:
        """The holder of this view's family: ``holder`` (IPv4, or the first family), ``holder-ipv6``."""
        return "holder" if self.family in (None, "IPv4") else f"holder-{self.family.lower()}"

    def ensure_holder(self) -> None:
        """The holder of this view's family, deployed unless it runs already."""
        if self.shared is not None:  # a shared workload: the session's lab keeps it
            return (self.shared.in_family(self.family) if self.family else self.shared).ensure_holder()
        if self.kube.get("Pod", self.holder_name, self.where("Pod", self.holder_name)) is None:
            self.deploy_holder()

    def deploy_holder(self) -> HoldEvent:
        name = self.holder_name
        pod = probe_pod(name, self.ns, self.image, node=self.client_node, labels={"app": "holder"},
                        command=["kpr", "probe", "hold", hp(self.cluster_ip("web"), WEB_PORT), "--sport", str(HOLDER_PORT)])
        self.create(pod)
        self.wait_running(name)
        return eventually(lambda: parse_hold_log(self.kube.logs(self.ns, name, PROBE_CONTAINER)),
                          until=lambda evs: any(e.event == "connected" for e in evs), timeout=self.t.PODS_READY,
                          what="the holder to connect to web's ClusterIP from port 40404",
                          describe=lambda evs: str([e.event + (f" ({e.detail})" if e.detail else "") for e in evs[-3:]]),
                          progress=self.progress).value[-1]  # type: ignore[no-any-return]

    def holder_event(self) -> HoldEvent:
        events = [e for e in parse_hold_log(self.kube.logs(self.where("Pod", self.holder_name), self.holder_name, PROBE_CONTAINER)) if e.event == "connected"]
        if not events:
            raise LabError("the holder has not connected")
        return events[-1]

    def holder_socket_peer(self) -> str:
        socks = [s for s in parse_netstat(self.exec(self.holder_name, "netstat", "-tn").check().stdout) if s.local_port == HOLDER_PORT]
        if len(socks) != 1:
            raise LabError(f"holder's netstat shows {len(socks)} sockets on port {HOLDER_PORT}: {socks}")
        return socks[0].peer

    def holder_pod(self) -> dict[str, Any]:
        p = self.kube.get("Pod", self.holder_name, self.where("Pod", self.holder_name))
        if p is None:
            raise LabError("no holder pod")
        return p

    # -- probe pod, ghost, NodePort --------------------------------------------------------------------

    def deploy_probe(self) -> None:
        self.create(probe_pod("probe", self.ns, self.image, node=self.client_node, labels={"app": "probe"}))
        self.wait_running("probe")

    def deploy_host_probe(self) -> None:
        """``hostprobe``: the probe image in the client node's host network namespace (NET_RAW only): its raw
        SYN to another node's InternalIP leaves through the native device and arrives at that node's bpf_host."""
        self.create(probe_pod("hostprobe", self.ns, self.image, node=self.client_node, labels={"app": "hostprobe"}, host_network=True))
        self.wait_running("hostprobe")

    def remote_node(self) -> str:
        """A node other than the client node (another worker if there is one)."""
        others = [n.name for n in self.facts.workers if n.name != self.client_node] or \
            [n.name for n in self.facts.nodes if n.name != self.client_node]
        if not others:
            raise LabError("a single-node cluster has no other node to send to")
        return others[0]

    def probe(self, kind: str, target: str, timeout: float, pod: str = "probe") -> ProbeResult:
        r = self.exec(pod, "kpr", "probe", kind, target, "--json", "--timeout", f"{timeout:g}", timeout=timeout + self.t.EXEC)
        return parse_probe_json(r.check().stdout)

    def socket_peers(self, target: str, count: int, timeout: float, pod: str = "probe", interval: float = 0.0) -> list[str | None]:
        """``count`` connections from ``pod`` (``kpr probe connect --count``): the backend each one's kernel socket points
        at (``socket_peer``: with socket LB the backend the hook chose), None for one that did not connect."""
        r = self.exec(pod, "kpr", "probe", "connect", target, "--json", "--timeout", f"{timeout:g}", "--count", str(count),
                      "--interval", f"{interval:g}", timeout=count * (timeout + interval) + self.t.EXEC)
        lines = [json.loads(x) for x in r.check().stdout.splitlines() if x.startswith("{")]
        return [x.get("socket_peer") if x.get("verdict") == "connected" else None for x in lines]

    def start_flows(self, targets: dict[str, str], node: str, app: str, *, interval_ms: int, duration_s: int, udp: bool = False) -> None:
        """A flow pod per ``targets`` entry (pod name -> ip:port), each running ``kpr probe flow`` as its command on
        ``node`` (restartPolicy Never), all Running on return; :meth:`stop_flow` ends each and reads its summary."""
        for name, target in targets.items():
            cmd = ["kpr", "probe", "flow", target, *(["--udp"] if udp else []), "--json", "--interval-ms", str(interval_ms),
                   "--duration", str(duration_s)]
            pod = probe_pod(name, self.ns, self.image, node=node, labels={"app": app}, command=cmd)
            pod["spec"]["restartPolicy"] = "Never"
            self.create(pod)
        for name in targets:
            self.wait_running(name)

    def stop_flow(self, pod: str) -> dict[str, Any]:
        """End the ``kpr probe flow`` a pod runs as its command (``kill -TERM 1``) and read its summary from the pod's log."""
        self.exec(pod, "kill", "-TERM", "1")

        def summary() -> dict[str, Any] | None:
            for line in reversed(self.kube.logs(self.where("Pod", pod), pod, PROBE_CONTAINER).splitlines()):
                if line.startswith("{") and json.loads(line).get("kind") == "flow":
                    return dict(json.loads(line))
            return None

        return eventually(summary, until=lambda s: s is not None, timeout=self.t.EXEC, what=f"the summary of flow {pod}").value or {}

    def curl(self, url: str, max_time: float, pod: str = "probe") -> HttpResult:
        r = self.exec(pod, "curl", "-s", *globoff(url), "-o", "/dev/null", "-w", CURL_WRITE_OUT, "--max-time", f"{max_time:g}", url,
                      timeout=max_time + self.t.EXEC)
        return parse_curl(r.returncode, r.stdout, r.stderr)

    # -- single web pods, bodies, what a backend saw ------------------------------------------------------------

    def web_pod(self, name: str, labels: dict[str, str], node: str, host_port: int | None = None) -> dict[str, Any]:
        """A pod serving HTTP on 8080 (Python's http.server, which logs each request with the client address it saw),
        bound by its nodeSelector to ``node`` (so the scheduler, not the pod, decides: a hostPort conflict is the
        scheduler's to find); with ``host_port``, 8080 is also asked for as that hostPort."""
        pod = probe_pod(name, self.ns, self.image, labels=labels, command=self.web_command())
        ctr = pod["spec"]["containers"][0]
        ctr["ports"] = [{"containerPort": WEB_TARGET, "name": "http", **({"hostPort": host_port} if host_port else {})}]
        ctr["readinessProbe"] = {"httpGet": {"path": "/", "port": WEB_TARGET}, "periodSeconds": 1}
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
        return pod

    def http_body(self, url: str, max_time: float, pod: str = "hostprobe") -> tuple[int, str]:
        """(HTTP code, body) of a GET from ``pod``; code 0 when nothing answered."""
        r = self.exec(pod, "curl", *globoff(url), "-s", "--max-time", f"{max_time:g}", "-w", "\n%{http_code}", url, timeout=max_time + self.t.EXEC)
        body, _, code = (r.stdout or "").rpartition("\n")
        return (int(code) if code.strip().isdigit() else 0), body

    def who_served_many(self, pods: list[str], tokens: list[str]) -> dict[str, tuple[str, str]]:
        """:meth:`who_served` for many requests, each pod's log read once: token -> (pod, address it saw)."""
        wanted, out = set(tokens), {}
        for name in pods:
            for line in self.kube.logs(self.where("Pod", name), name).splitlines():
                if " - - [" not in line or "kpr=" not in line:
                    continue
                token = line.split("kpr=", 1)[1].split(" ", 1)[0].split("&", 1)[0]
                if token in wanted:
                    out[token] = (name, logged_client(line.split(" ", 1)[0]))  # a dual-stack server logs IPv4 as ::ffff:
        return out

    def who_served(self, pods: list[str], token: str) -> tuple[str, str] | None:
        """(pod, client address it saw) of the request whose path carries ``token`` (``?kpr=<token>``), from the pods'
        http.server logs ('<client> - - [date] "GET /?kpr=<token> HTTP/1.1" 200 -'), or None if no pod logged it."""
        return self.who_served_many(pods, [token]).get(token)

    def wait_programmed_on(self, nodes: "list[str]", services: "list[str]") -> None:
        """Until the agent on each of ``nodes`` lists each Service's frontend (of this view's family); only the very first
        read waits ``LB_FIRST_LOOK``: the others come after it."""
        for i, node in enumerate(nodes):
            for name in services:
                self.wait_programmed(node, self.frontend(name), f"the agent on {node} to program {name}",
                                     first_look=i == 0 and name == services[0])

    def wait_programmed(self, node: str, fe: L3n4, what: str, first_look: bool = True) -> Service:
        """Until the agent on ``node`` lists ``fe``; the first read after ``LB_FIRST_LOOK`` (just after a change)."""
        agent = self.agent(node)
        found: Service | None = eventually(lambda: self.service_entry(agent, fe), until=lambda s: s is not None,
                                           timeout=self.t.DATAPATH_CONVERGENCE, what=what, progress=self.progress,
                                           first_after=self.t.LB_FIRST_LOOK if first_look else 0.0).value
        assert found is not None
        return found

    def deploy_ghost(self) -> "Ghost":
        """ghost: a NodePort Service (so also a ClusterIP) whose selector matches no pod, programmed on the
        client node's agent and on the remote node's (where a packet from another node arrives). The wait
        is for its ClusterIP frontend on both: the NodePort frontend is what the suite judges."""
        self.create(self.service("ghost", {"app": "ghost"}, "NodePort"))
        fe = self.frontend("ghost")
        node_port = self.allocated_node_port("ghost")
        for i, node in enumerate((self.client_node, self.remote_node())):
            self.wait_programmed(node, fe, f"the agent on {node} to program ghost's frontend {fe}", first_look=i == 0)
        return Ghost(fe, node_port)

    def deploy_nodeport(self) -> int:
        try:
            self.create(self.service("web-np", {"app": "web"}, "NodePort", self.node_port))
        except ApiError as e:
            if e.status == 422 and "already allocated" in e.message:
                raise LabError(f"NodePort {self.node_port} is already allocated in this cluster; pick a free one with --kpr-nodeport") from None
            raise
        # wait until the agent has programmed the Service (its ClusterIP frontend, with backends); whether it
        # also lists the 0.0.0.0:<port> NodePort frontend is what the suite checks, not a precondition
        fe = self.frontend("web-np")
        agent = self.agent(self.client_node)
        eventually(lambda: self.service_entry(agent, fe), until=lambda s: s is not None and bool(s.backends),
                   timeout=self.t.DATAPATH_CONVERGENCE, what=f"the agent on {self.client_node} to program web-np's frontend {fe}",
                   describe=lambda s: "absent" if s is None else f"{len(s.backends)} backends", progress=self.progress,
                   first_after=self.t.LB_FIRST_LOOK)
        return self.node_port


def elapsed_since(start: float) -> float:
    return round(clock.monotonic() - start, 3)


def holder_ct(lab: Lab) -> tuple[str, int]:
    """(backend ip:port of the holder's OUT conntrack entry, number of TCP SVC entries from :40404)."""
    pod = lab.holder_pod()
    ip, node = lab.pod_ip(pod), pod["spec"]["nodeName"]
    entries = lab.agent(node).conntrack(lab.minor)
    out = [e for e in entries if e.proto == "TCP" and e.dir == "OUT" and e.src_ip == ip and e.src_port == HOLDER_PORT]
    svc = [e for e in entries if e.proto == "TCP" and e.dir == "SVC" and e.src_port == HOLDER_PORT and e.src_ip == ip]
    if len(out) != 1:
        raise LabError(f"{len(out)} OUT conntrack entries from {ip}:{HOLDER_PORT} on {node}")
    return hp(out[0].dst_ip, out[0].dst_port), len(svc)  # [v6]:port, as the socket's peer and the EndpointSlice's are written


def holder_program(lab: Lab) -> dict[str, Any]:
    """prog.json: the holder's endpoint, its host-side veth, and the BPF program attached there."""
    from ..parse.agent_misc import policy_map_name

    pod = lab.holder_pod()
    node = pod["spec"]["nodeName"]
    cep = lab.kube.get("CiliumEndpoint", lab.holder_name, lab.ns)
    if cep is None or "id" not in (cep.get("status") or {}):
        raise LabError("no CiliumEndpoint for the holder")
    eid = int(cep["status"]["id"])
    ep = lab.agent(node).endpoint(eid)
    if not ep.interface_name:
        raise LabError(f"endpoint {eid} has no host-side interface")
    agent = lab.agent(node)
    attachments, filters, map_list = agent.device_view(ep.interface_name)  # one exec
    # the program that sees the pod's packets: an ingress attachment on a veth, the peer's on a netkit device
    # (rules.datapath.endpoint_attachment); cil_from_container first, should a device carry more than one
    attached = sorted((a for a in attachments if a.attach.endswith("/ingress") or a.attach == "netkit/peer"),
                      key=lambda a: a.program != "cil_from_container")
    maps = {m.name for m in map_list}
    want_map = policy_map_name(eid, lab.minor)
    return {
        "endpoint_id": eid,
        "interface": ep.interface_name,
        "ifindex": ep.interface_index,
        "attach": attached[0].attach if attached else None,
        "program": attached[0].program if attached else None,
        "policy_map": want_map if want_map in maps else next((m for m in sorted(maps) if m.endswith(f"_{eid:05d}") and "policy" in m), None),
        "tc_filter_lines": len(filters),
    }
