"""The shared-VIP scenario: two Services claim the same (VIP, port, protocol).

Steps (each observed on the agent of the client node through ``db/show frontends``, v1.18+): the owner
takes VIP:80; the claimant takes VIP:81, then asks for VIP:80 too and is rejected whole while the owner
keeps serving and the agent's health shows the conflict; the owner is deleted and the claimant is
watched until Cilium has provably processed the deletion, plus a settle window (does its frontend
appear by itself? see :meth:`SharedVip.watch_release`); a follow-up claimant update (an
annotation bump) must install it, Status Done, serving.

Two ways to make the conflict: ``external-ips`` (the same externalIPs address and port, always a
conflict) and ``lb-ipam`` (LoadBalancer Services sharing a VIP through ``lbipam.cilium.io/sharing-key``;
LB-IPAM may avoid the conflict by moving the claimant to another IP, which is then reported).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..judge.shared_vip import CONFLICT, REFLECTOR_MODULE
from ..judge.shared_vip import (Claim, FollowUp, Frontend, Generated, Health, LateLook, Ordering, Owned, Owners, PortSwap, Release,
                                SwapStep)
from ..observe.lab import WEB_TARGET, Lab, LabError
from ..rules.lbmodel import Event, LbModel, Op, Variant
from ..parse import L3n4
from ..parse.addr import hp
from ..parse.status_text import modules_health
from ..core.tokens import token
from ..core.wait import WaitTimeout, eventually
from ..core import clock

SHARING_KEY = "lbipam.cilium.io/sharing-key"
BUMP = "kpr.cilium.io/bump"
#: how often the release watch reads db/show frontends (one reflector batching window)
#: the shortest pause between two reads of a watch (1% of the 1 s settle read spacing)
MIN_PAUSE_S = 0.01
WATCH_POLL_S = 0.5
#: reads spread over the settle window (an appearance in it is timed to settle/SETTLE_READS)
SETTLE_READS = 5


class Skip(Exception):
    """The scenario cannot be made on this cluster (the reason says why and what was seen)."""


@dataclass
class Record:
    """One way's scenario as it went: each step's typed observation (pytest_kpr.judge.shared_vip) and when it was made."""
    way: str
    owner: str = ""  # namespace/name
    claimant: str = ""
    vip: str = ""
    owned: Owned | None = None
    claimed: Claim | None = None
    released: Release | None = None
    late: LateLook | None = None
    followed: FollowUp | None = None
    start: float = field(default_factory=clock.monotonic)
    #: step name -> seconds after the start, in the order the steps were made (sharedvip.json's order)
    seconds: dict[str, float] = field(default_factory=dict)

    STEPS = {"owner": "owned", "claim": "claimed", "owner-deleted": "released", "late-look": "late", "follow-up": "followed"}

    def step(self, name: str, observation: Any) -> None:
        setattr(self, self.STEPS[name], observation)
        self.seconds[name] = round(clock.monotonic() - self.start, 3)

    def _need(self, name: str) -> Any:
        got = getattr(self, self.STEPS[name])
        if got is None:
            raise LabError(f"the scenario stopped before step {name!r}")
        return got

    @property
    def claim(self) -> Claim:
        return self._need("claim")  # type: ignore[no-any-return]

    @property
    def release(self) -> Release:
        return self._need("owner-deleted")  # type: ignore[no-any-return]

    @property
    def follow_up(self) -> FollowUp:
        return self._need("follow-up")  # type: ignore[no-any-return]

    def fe(self, port: int) -> str:
        return frontend_key(self.vip, port)

    def to_json(self) -> dict[str, Any]:
        return {"way": self.way, "vip": self.vip,
                "steps": [{"step": n, "seconds": t, **getattr(self, self.STEPS[n]).to_json()} for n, t in self.seconds.items()]}


@dataclass
class _Watch:
    """One claimant's release watch (see :meth:`SharedVip.watch_release`)."""

    rec: Record
    marks: dict[str, float] = field(default_factory=dict)
    ended_by: str | None = None
    ended_at: float | None = None
    last: Frontend | None = None

    def see(self, cur: Frontend | None, now: float, marker_done: float | None, settle: float) -> None:
        self.last = cur
        if cur is not None and cur.service == self.rec.claimant and cur.status == "Done":
            self.marks["appeared"] = now
            self.ended_by, self.ended_at = "appeared", now
            return
        if "owner_gone" not in self.marks and (cur is None or cur.service != self.rec.owner):
            self.marks["owner_gone"] = now
        if marker_done is not None:
            self.marks.setdefault("marker_done", marker_done)
        if "owner_gone" in self.marks and "marker_done" in self.marks:
            self.marks.setdefault("processed", now)
            if now - self.marks["processed"] >= settle:
                self.ended_by, self.ended_at = "settled", now

    def next_read(self, now: float, poll: float, settle: float) -> float:
        """When this watch wants the next read (seconds after the deletion): every ``poll`` until Cilium has
        processed the deletion, then SETTLE_READS times spread over the settle window (only an appearance
        can end it early, and it is timed to that resolution)."""
        processed = self.marks.get("processed")
        if processed is None:
            return now + poll
        step = max(poll, settle / SETTLE_READS)
        return min(now + step, processed + settle)


def frontend_key(vip: str, port: int) -> str:
    """The VIP's frontend as the agents print it: ``198.18.10.80:80/TCP``, ``[2001:2::a:80]:80/TCP``."""
    return f"{hp(vip, port)}/TCP"


#: the scenario's own backends (a Deployment in the suite's namespace: a Service selects pods of its own namespace only)
BACKEND = "vip-web"


class SharedVip:
    def __init__(self, lab: Lab, settings: Any, run_id: str, track: Callable[[dict[str, Any]], None]):
        self.lab = lab
        self.settings = settings
        self.run_id = run_id
        self.track = track  # records cluster-scoped objects for deletion at the end

    # -- reading the agent ---------------------------------------------------------------------------

    def frontends(self, addrs: list[str] | None = None) -> dict[str, Frontend]:
        """``db/show frontends`` on the client node: address -> its Frontend."""
        return self._frontends(self.lab.agent(self.lab.client_node).frontends(), addrs)

    @staticmethod
    def _frontends(table: list[Any], addrs: list[str] | None) -> dict[str, Frontend]:
        out = {}
        for f in table:
            key = str(L3n4(f.address.ip, f.address.port, f.address.proto or "TCP", f.address.internal))
            if addrs is None or key in addrs:
                out[key] = Frontend(f.service, f.status, f.error)
        return out

    def health(self, addrs: list[str] | None = None) -> tuple[Health, dict[str, Frontend]]:
        """The conflict as the agent shows it (pytest_kpr.rules.datapath FORMAT_RULES): the degraded count from plain
        ``status`` (``Modules Health: Stopped(N) Degraded(N) OK(N)``), and the error text from ``db/show health``
        (the load-balancer reflector's row: Message "Failure processing services", the conflict in Error).
        ``shown_by`` says which of the two showed it. With ``addrs``, those frontends are read in the same
        exec (returned beside the health; else no frontends)."""
        agent = self.lab.agent(self.lab.client_node)
        views = agent.read("status_text", "db_health", "status_verbose", *(["frontends"] if addrs is not None else []))
        plain, db_health, verbose_text = views[:3]
        h = modules_health(plain)
        tally = {"stopped": h.stopped, "degraded": h.degraded, "ok": h.ok} if h is not None and h.degraded is not None else None
        reflector = [s for s in db_health if s.module.split(".")[-1] == REFLECTOR_MODULE]
        errors = [s for s in reflector if s.level == "Degraded" and CONFLICT in s.error]
        shown_by = (["status: Modules Health Degraded"] if tally and tally["degraded"] else []) + \
            (["db/show health: " + errors[0].id] if errors else [])
        verbose = modules_health(verbose_text)
        health = Health(tally=tally, error_seen=bool(errors),
                        reflector=tuple({"id": s.id, "level": s.level, "message": s.message, "error": s.error} for s in reflector),
                        shown_by=tuple(shown_by),
                        # what --verbose showed (recorded, not judged): a tally only after PR #46739, and never the error text
                        verbose={"tally": verbose is not None and verbose.degraded is not None,
                                 "degraded_leaves": [f"{leaf.id}: {leaf.message}" for leaf in verbose.degraded_leaves] if verbose else []})
        return health, (self._frontends(views[3], addrs) if addrs is not None else {})

    def wait_owned(self, addr: str, service: str, timeout: float, what: str) -> float:
        obs = eventually(lambda: self.frontends([addr]).get(addr), until=lambda f: f is not None and f.service == service and f.status == "Done",
                         timeout=timeout, what=what, describe=repr, progress=self.lab.progress,
                         first_after=self.lab.t.LB_FIRST_LOOK)
        return obs.elapsed

    def http(self, vip: str, port: int) -> int:
        return self.lab.curl(f"http://{hp(vip, port)}/", 5.0).http_code

    # -- manifests -----------------------------------------------------------------------------------

    def service(self, name: str, way: str, vip: str, ports: list[int], annotations: dict[str, str] | None = None) -> dict[str, Any]:
        svc: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": self.lab.ns, "labels": {"kpr.cilium.io/run": self.run_id, "kpr.cilium.io/pool": f"kpr-{self.run_id}"},
                         "annotations": dict(annotations or {})},
            "spec": {"selector": {"app": BACKEND}, "ports": [{"name": f"p{p}", "port": p, "targetPort": WEB_TARGET, "protocol": "TCP"} for p in ports]},
        }
        if way == "cluster-ip":
            svc["spec"]["type"] = "ClusterIP"
        elif way == "external-ips":
            svc["spec"]["type"] = "ClusterIP"
            svc["spec"]["externalIPs"] = [vip]
        else:
            svc["spec"]["type"] = "LoadBalancer"
            svc["metadata"]["annotations"][SHARING_KEY] = f"kpr-{self.run_id}"
        return svc

    def pool(self) -> dict[str, Any]:
        start, _, stop = self.settings.lbipam_block.partition("-")
        api = "cilium.io/v2" if self.lab.minor >= (1, 18) else "cilium.io/v2alpha1"
        return {"apiVersion": api, "kind": "CiliumLoadBalancerIPPool",
                "metadata": {"name": f"kpr-{self.run_id}", "labels": {"app.kubernetes.io/managed-by": "pytest-kpr", "kpr.cilium.io/run": self.run_id}},
                "spec": {"blocks": [{"start": start.strip(), "stop": (stop or start).strip()}],
                         # this run's Services of this suite's namespace only: another suite's LoadBalancer Services
                         # (their own pools) must not draw from it (rules.datapath.SRC_LBIPAM_SELECTOR)
                         "serviceSelector": {"matchLabels": {"kpr.cilium.io/run": self.run_id,
                                                             "io.kubernetes.service.namespace": self.lab.ns,
                                                             "kpr.cilium.io/pool": f"kpr-{self.run_id}"}}}}

    def ingress_ip(self, name: str) -> str | None:
        svc = self.lab.kube.get("Service", name, self.lab.ns) or {}
        ing = svc.get("status", {}).get("loadBalancer", {}).get("ingress") or []
        return str(ing[0]["ip"]) if ing and ing[0].get("ip") else None

    # -- the scenario --------------------------------------------------------------------------------

    def deploy_backends(self) -> None:
        """The Services' backends: two HTTP pods (``app=vip-web``) in the suite's namespace, Ready."""
        self.lab.create_deployment(BACKEND, 2)
        eventually(lambda: self.lab.serving_replicas(f"app={BACKEND}"), until=lambda n: n == 2, timeout=self.lab.t.PODS_READY,
                   what=f"2 {BACKEND} pods Ready", describe=str, progress=self.lab.progress)

    def prepare(self, way: str) -> Record:
        """The owner takes VIP:80, the claimant VIP:81, then the claimant asks for VIP:80 too (the claim)."""
        lab, t = self.lab, self.lab.t
        short = "eip" if way == "external-ips" else "lbipam"
        owner, claimant = f"vip-owner-{short}", f"vip-claimant-{short}"
        rec = Record(way, owner=f"{lab.ns}/{owner}", claimant=f"{lab.ns}/{claimant}")
        if way == "external-ips" and lab.facts.external_ip_mitigation is not False:
            state = "on" if lab.facts.external_ip_mitigation else "not reported"
            raise Skip(f"the CVE-2020-8554 ExternalIP mitigation is {state} (config -a DisableExternalIPMitigation): a pod cannot reach "
                       f"a Service through a non-node externalIPs address (bpf_sock.c sock4_skip_xlate); set Helm "
                       f"bpf.disableExternalIPMitigation=true, or rely on the lb-ipam way")
        if way == "lb-ipam":
            pool = self.pool()
            lab.kube.create(pool)
            self.track(pool)
        vip = self.settings.shared_vip if way == "external-ips" else ""
        lab.kube.create(self.service(owner, way, vip, [80]))
        if way == "lb-ipam":
            vip = eventually(lambda: self.ingress_ip(owner), until=bool, timeout=t.DATAPATH_CONVERGENCE,
                             what=f"LB-IPAM to give {owner} an IP from {self.settings.lbipam_block}", progress=lab.progress).value or ""
        rec.vip = vip
        fe80, fe81 = rec.fe(80), rec.fe(81)
        rec.step("owner", Owned(fe80, rec.owner, round(self.wait_owned(fe80, rec.owner, t.DATAPATH_CONVERGENCE, f"{owner} to own {fe80}"), 3)))
        lab.kube.create(self.service(claimant, way, vip, [81]))
        if way == "lb-ipam":
            got = eventually(lambda: self.ingress_ip(claimant), until=bool, timeout=t.DATAPATH_CONVERGENCE, what=f"LB-IPAM to give {claimant} an IP").value
            if got != vip:
                raise Skip(f"LB-IPAM gave the claimant {got} and the owner {vip} despite the sharing key and disjoint ports")
        self.wait_owned(fe81, rec.claimant, t.DATAPATH_CONVERGENCE, f"{claimant} to own {fe81}")
        # the claim: the claimant asks for the owner's port too
        lab.kube.patch("Service", claimant, lab.ns, {"spec": {"ports": [{"name": "p81", "port": 81, "targetPort": WEB_TARGET, "protocol": "TCP"},
                                                                            {"name": "p80", "port": 80, "targetPort": WEB_TARGET, "protocol": "TCP"}]}})
        if way == "lb-ipam":
            moved = self.ingress_ip(claimant)
            if moved != vip:
                raise Skip(f"LB-IPAM avoided the conflict: the claimant moved from {vip} to {moved} when it asked for port 80 (owner keeps {vip})")
        # observed, not required here: the tests judge what was seen. Health and frontends come from one exec.
        try:
            health, fes = eventually(lambda: self.health([fe80, fe81]), until=lambda h: bool(h[0].degraded) and h[0].error_seen,
                                     timeout=t.DATAPATH_CONVERGENCE, what="the agent's health to show the frontend conflict", progress=lab.progress,
                                     first_after=t.LB_FIRST_LOOK).value
        except WaitTimeout as e:
            health, fes = e.last if isinstance(e.last, tuple) else self.health([fe80, fe81])
        rec.step("claim", Claim(frontends=fes, owner_of_vip=fes[fe80].service if fe80 in fes else None, health=health,
                                owner_http=self.http(vip, 80)))
        return rec

    def release(self, recs: list[Record]) -> None:
        """Every owner is deleted, then :meth:`watch_release` watches all the claimants at once."""
        for rec in recs:
            self.lab.kube.delete("Service", rec.owner.split("/", 1)[1], self.lab.ns)
        for rec, seen in zip(recs, self.watch_release(recs), strict=True):
            rec.step("owner-deleted", seen)

    def follow_up(self, rec: Record) -> None:
        """The supported recovery: a follow-up claimant event installs the frontend, Done, serving."""
        lab, t = self.lab, self.lab.t
        fe80, name = rec.fe(80), rec.claimant.split("/", 1)[1]
        lab.kube.patch("Service", name, lab.ns, {"metadata": {"annotations": {BUMP: token()}}})
        fe: Frontend | None
        try:
            obs = eventually(lambda: self.frontends([fe80]).get(fe80), until=lambda f: f is not None and f.service == rec.claimant and f.status == "Done",
                             timeout=t.DATAPATH_CONVERGENCE, what=f"{name} to own {fe80} after a follow-up update", describe=repr, progress=lab.progress,
                             first_after=t.LB_FIRST_LOOK)
            secs, installed, fe = round(obs.elapsed, 3), True, obs.value
        except WaitTimeout as e:
            secs, installed, fe = None, False, e.last  # type: ignore[assignment]
        rec.step("follow-up", FollowUp(installed, secs, fe.to_json() if fe else None, self.http(rec.vip, 80) if installed else None))

    def watch_release(self, recs: list[Record]) -> list[Release]:
        """After the owners' deletion, watch whether each claimant's frontend appears by itself -- only as
        long as Cilium needs to have acted on the deletion, not a fixed 30 s. All the ways are watched
        together: one ``db/show frontends`` read per poll covers them all.

        Cilium's k8s reflector feeds Service and EndpointSlice events through one ``stream.Buffer`` (up to
        500 events or 500 ms, ``reflectorBufferSize``/``reflectorWaitTime``) and processes each buffer in
        insertion order in one write transaction (cilium/cilium pkg/loadbalancer/reflectors/k8s.go,
        ``runServiceEndpointsReflector``, v1.18+). So a marker Service created *after* the deletions whose
        frontend is ``Done`` proves the deletions were processed. A claimant's watch ends when it owns the
        frontend (``appeared``), or ``--kpr-settle`` seconds after its owner's frontend is gone and the
        marker is Done (``settled``), or at ``CONFLICT_OBSERVE`` (``timeout``). Until then the agent is read
        every ``WATCH_POLL_S``; within the settle window ``SETTLE_READS`` times (every 1 s of the default
        5 s), since only an appearance can end it early. What ended each watch, and when, goes to
        sharedvip.json; :meth:`late_look` looks once more later."""
        lab = self.lab
        deleted_at = clock.monotonic()
        marker = f"vip-marker-{self.run_id[-6:]}"
        lab.kube.create(self.service(marker, "cluster-ip", "", [80]))
        marker_ip = (lab.kube.get("Service", marker, lab.ns) or {}).get("spec", {}).get("clusterIP", "")
        marker_fe = frontend_key(marker_ip, 80)
        # CONFLICT_OBSERVE bounds the wait for Cilium to process the deletion; the settle window comes on top
        settle = self.settings.settle
        limit, poll = lab.t.CONFLICT_OBSERVE + settle, min(WATCH_POLL_S, settle / 4)
        watches = [_Watch(rec) for rec in recs]
        observations = 0
        marker_done: float | None = None
        last_progress = 0.0
        while True:
            fes = self.frontends([w.rec.fe(80) for w in watches] + [marker_fe])
            now = clock.monotonic() - deleted_at
            observations += 1
            if marker_done is None and marker_fe in fes and fes[marker_fe].status == "Done":
                marker_done = now
            for w in watches:
                if w.ended_by is None:
                    w.see(fes.get(w.rec.fe(80)), now, marker_done, settle)
            open_ = [w for w in watches if w.ended_by is None]
            if not open_:
                break
            if now >= limit:
                for w in open_:
                    w.ended_by, w.ended_at = "timeout", now
                break
            if now - last_progress >= 10.0:
                last_progress = now
                lab.progress(f"shared VIP: watching {', '.join(w.rec.fe(80) for w in open_)} after the owners' deletion "
                             f"({now:.0f}s; seen: {', '.join(sorted(open_[0].marks)) or 'nothing yet'})")
            # never a zero pause: on the fake's virtual clock a read takes no time, so only a pause moves the watch on
            due = min(w.next_read(now, poll, settle) for w in open_)
            clock.sleep(max(MIN_PAUSE_S, due - (clock.monotonic() - deleted_at)))
        lab.kube.delete("Service", marker, lab.ns)
        self._deleted_at = deleted_at
        return [Release(ended_by=w.ended_by or "timeout", settle_seconds=settle, watched_seconds=round(w.ended_at or 0.0, 3),
                        observations=observations, marks={k: round(v, 3) for k, v in w.marks.items()}, marker=marker_fe,
                        last=w.last.to_json() if w.last else None)
                for w in watches]

    def late_look(self, recs: list[Record]) -> None:
        """One more read, a settle window after the watches ended, for the claimants that did not appear:
        one that appears after the settle window is reported as "appeared after N s", not as never. It is
        made when the scenario is next needed (the module's other tests run in between, so on a cluster it
        usually costs no waiting), sleeping only what is left of that window."""
        pending = [r for r in recs if not r.release.appeared_by_itself and r.late is None]
        if not pending:
            return
        due = max(self._deleted_at + r.release.watched_seconds for r in pending) + self.settings.settle
        clock.sleep(max(0.0, due - clock.monotonic()))
        fes = self.frontends([r.fe(80) for r in pending])
        at = round(clock.monotonic() - self._deleted_at, 3)
        for r in pending:
            f = fes.get(r.fe(80))
            r.step("late-look", LateLook(at, f is not None and f.service == r.claimant and f.status == "Done", f.to_json() if f else None))

    # -- ordering: claim before release in one window ------------------------------------------------

    def claim_before_release(self, variant: Variant) -> Ordering:
        lab, t = self.lab, self.lab.t
        vip = self.settings.shared_vip
        owner, claimant = "vip-owner-order", "vip-claimant-order"
        own_ns, claim_ns = f"{lab.ns}/{owner}", f"{lab.ns}/{claimant}"
        fe82, fe83 = frontend_key(vip, 82), frontend_key(vip, 83)
        lab.kube.create(self.service(owner, "external-ips", vip, [82]))
        self.wait_owned(fe82, own_ns, t.DATAPATH_CONVERGENCE, f"{owner} to own {fe82}")
        lab.kube.create(self.service(claimant, "external-ips", vip, [83]))
        self.wait_owned(fe83, claim_ns, t.DATAPATH_CONVERGENCE, f"{claimant} to own {fe83}")
        t_claim = clock.monotonic()
        lab.kube.patch("Service", claimant, lab.ns, {"spec": {"ports": [{"name": "p83", "port": 83, "targetPort": WEB_TARGET, "protocol": "TCP"},
                                                                            {"name": "p82", "port": 82, "targetPort": WEB_TARGET, "protocol": "TCP"}]}})
        lab.kube.delete("Service", owner, lab.ns)
        t_release = clock.monotonic()
        # What is known about the timing, encoded for the model: the owner and the claimant's first version
        # were each seen Done before the next step (so they were processed in earlier batches); the claim and
        # the release were sent back to back, gap_ms apart.
        gap_ms = (t_release - t_claim) * 1000.0
        events = [
            Event(0.0, Op.UPSERT, own_ns, (fe82,)),
            Event(1000.0, Op.UPSERT, claim_ns, (fe83,)),
            Event(2000.0, Op.UPSERT, claim_ns, (fe83, fe82)),
            Event(2000.0 + gap_ms, Op.DELETE, own_ns),
        ]
        m = LbModel(variant=variant)
        for e in events:
            m.push(e)
        m.advance()
        predicted = m.owner(fe82)
        try:
            obs = eventually(lambda: self._owner(fe82), until=lambda s: s == predicted,
                             timeout=t.CONFLICT_OBSERVE, what=f"{fe82} to be owned by {predicted or 'nobody'} as the model predicts",
                             first_after=t.LB_FIRST_LOOK)
            observed = obs.value
        except AssertionError:
            observed = self._owner(fe82)
        return Ordering(events=tuple({"at_ms": round(e.at_ms, 1), "op": e.op.value, "service": e.service, "frontends": list(e.frontends)}
                                     for e in events),
                        gap_ms=round(gap_ms, 1), variant=variant.value, predicted_owner=predicted, observed_owner=observed)

    def _owner(self, addr: str) -> str | None:
        f = self.frontends([addr]).get(addr)
        return f.service if f is not None else None

    # -- the port swap: two services swap ports on one VIP -------------------------------------------

    def port_swap(self, variant: Variant) -> PortSwap:
        """s0 holds VIP:84 and s1 VIP:85; both are updated to the other's port back to back. Each upsert is
        rejected whole while the other still holds the port it wants (a rejected upsert keeps each service's
        old frontend), so both stay rejected: neither release happens, and even a re-queueing control plane
        has nothing to re-queue on. Then the supported release-first handoff: s0 moves to a free port
        (releasing :84), s1 is given a follow-up event and takes :84 (releasing :85), s0 takes :85. Every
        step is compared with the model."""
        lab, t = self.lab, self.lab.t
        vip = self.settings.shared_vip
        s0, s1 = "vip-swap-0", "vip-swap-1"
        n0, n1 = f"{lab.ns}/{s0}", f"{lab.ns}/{s1}"
        fe = {p: frontend_key(vip, p) for p in (84, 85, 86)}
        addrs = list(fe.values())
        m = LbModel(variant=variant)
        clock = [0.0]
        steps: list[SwapStep] = []

        def ports(p: int) -> dict[str, Any]:
            return {"spec": {"ports": [{"name": f"p{p}", "port": p, "targetPort": WEB_TARGET, "protocol": "TCP"}]}}

        def model(*events: tuple[str, str, tuple[int, ...]]) -> dict[str, str]:
            for op, svc, ps in events:
                m.push(Event(clock[0], Op(op), svc, tuple(fe[p] for p in ps)))
                clock[0] += 1.0  # back to back: one coalescing window
            clock[0] += 1000.0
            m.advance()
            return {a: o for a in addrs if (o := m.owner(a))}

        def model_errors() -> list[str]:
            return sorted(rej.error for svc, (_, rej) in m.rejected.items() if svc in (n0, n1))

        def seen() -> Owners:
            """Owners and the conflict errors naming s0 or s1, from one exec (db/show frontends and health)."""
            table, health = self.lab.agent(self.lab.client_node).read("frontends", "db_health")
            errors: set[str] = set()
            for st in health:
                if st.module.split(".")[-1] == REFLECTOR_MODULE and st.level == "Degraded":
                    errors.update(e for e in st.error.split("\n") if f" is owned by {n0}" in e or f" is owned by {n1}" in e)
            return Owners({a: f.service for a, f in self._frontends(table, addrs).items() if f.status == "Done"}, tuple(sorted(errors)))

        def observe(want: dict[str, str], what: str) -> None:
            expected = Owners(want, tuple(model_errors()))
            try:
                got = eventually(seen, until=lambda o: o == expected, timeout=t.CONFLICT_OBSERVE, what=what, describe=repr,
                                 first_after=t.LB_FIRST_LOOK).value
            except WaitTimeout as e:
                got = e.last if e.last is not None else seen()  # type: ignore[assignment]
            steps.append(SwapStep(what, expected, got))

        lab.kube.create(self.service(s0, "external-ips", vip, [84]))
        lab.kube.create(self.service(s1, "external-ips", vip, [85]))
        observe(model(("upsert", n0, (84,)), ("upsert", n1, (85,))), "each service owns its own port")
        lab.kube.patch("Service", s0, lab.ns, ports(85))
        lab.kube.patch("Service", s1, lab.ns, ports(84))
        observe(model(("upsert", n0, (85,)), ("upsert", n1, (84,))), "after the swap, as the model predicts")
        rejected = sorted(m.rejected)
        # the release-first handoff
        lab.kube.patch("Service", s0, lab.ns, ports(86))
        observe(model(("upsert", n0, (86,))), "s0 released :84 (moved to a free port)")
        lab.kube.patch("Service", s1, lab.ns, {"metadata": {"annotations": {BUMP: token()}}})
        observe(model(("upsert", n1, (84,))), "a follow-up event on s1: it takes :84 and releases :85")
        lab.kube.patch("Service", s0, lab.ns, ports(85))
        observe(model(("upsert", n0, (85,))), "s0 takes :85: the swap is done")
        for name in (s0, s1):
            lab.kube.delete("Service", name, lab.ns)
        return PortSwap(vip=vip, variant=variant.value, rejected_after_swap=tuple(rejected), steps=tuple(steps))



@dataclass
class SharedVipEvidence:
    """sharedvip.json, filled as the suite goes: each way's Record (or why it could not be made), the ordering case, the
    port swap and the generated sequence."""
    ways: dict[str, Record | str] = field(default_factory=dict)
    ordering: Ordering | None = None
    port_swap: PortSwap | None = None
    generated: Generated | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {way: {"skipped": rec} if isinstance(rec, str) else rec.to_json() for way, rec in self.ways.items()}
        for key, part in (("claim-before-release", self.ordering), ("port-swap", self.port_swap), ("generated", self.generated)):
            if part is not None:
                out[key] = part.to_json()
        return out
