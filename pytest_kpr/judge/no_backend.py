"""No backend: each client's attempt on a backendless Service, judged against the sourced rule of its plane.

Pure: an observation and a rule in, the list of problems out (empty = the property holds), worded so that a failure names
the property and shows what was seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..rules.datapath import NoBackendRule


#: the bound for "at once": a rejection takes well under a millisecond on the node (measured in the
#: real-kernel tier: scripts/bench_probes.py), a drop takes the client's whole timeout (seconds)
FAST_S = 1.0


@dataclass(frozen=True)
class NoBackendAttempt:
    """One client's attempt on a backendless service, as observed."""

    path: str  # e.g. "pod connect() to ClusterIP 10.96.0.12:80"
    tool: str  # curl | connect | sendto (an unconnected UDP datagram) | raw
    verdict: str  # curl: its exit code as text; probes: their verdict
    seconds: float
    errno: str | None = None
    icmp: tuple[int, int] | None = None


def no_backend_problems(a: NoBackendAttempt, rule: "NoBackendRule", response: str) -> list[str]:
    """What is wrong with an attempt, given the sourced rule for its plane (pytest_kpr.rules.datapath)."""
    where = f"no backend ({a.path}; {rule.plane} plane, ServiceNoBackendResponse={response})"
    want_fast = f"at once (under {FAST_S:g}s)" if rule.fast else "at its limit"
    why = f"{rule.why} [{rule.source.split(';')[0]}]"
    p: list[str] = []
    if a.tool == "curl":
        if a.verdict != str(rule.curl_exit):
            meaning = {"28": "it timed out: the traffic was dropped", "7": "it could not connect"}.get(a.verdict, "")
            p.append(f"{where}: curl exited {a.verdict} after {a.seconds:.2f}s{' (' + meaning + ')' if meaning else ''}; "
                     f"expected exit {rule.curl_exit} {want_fast}: {why}")
    elif a.tool in ("connect", "sendto"):
        if a.verdict not in rule.connect:
            p.append(f"{where}: {a.tool}() gave {a.verdict}{' (' + a.errno + ')' if a.errno else ''} after {a.seconds:.2f}s; "
                     f"expected {' or '.join(sorted(rule.connect))} {want_fast}: {why}")
        elif rule.errnos and a.errno not in rule.errnos:
            note = f" ({rule.errno_note})" if rule.errno_note and a.errno == "EPERM" else ""
            p.append(f"{where}: {a.tool}() failed with {a.errno}, expected {' or '.join(sorted(rule.errnos))}{note}: {why}")
    elif a.tool == "raw":
        if rule.raw is None:
            p.append(f"{where}: a raw packet cannot reach the {rule.plane} plane; this attempt was misclassified")
        elif a.verdict != rule.raw:
            p.append(f"{where}: a raw SYN got {a.verdict}{' ICMP %d/%d' % a.icmp if a.icmp else ''} after {a.seconds:.2f}s; "
                     f"expected {rule.raw}{' ICMP %d/%d' % rule.icmp if rule.icmp else ''}: {why}")
        elif rule.icmp is not None and a.icmp != rule.icmp:
            got = "no ICMP type/code" if a.icmp is None else "ICMP %d/%d" % a.icmp
            p.append(f"{where}: the reject answer is {got}, expected ICMP {rule.icmp[0]}/{rule.icmp[1]} "
                     f"(destination unreachable, port unreachable): {why}")
    else:
        raise ValueError(f"unknown tool {a.tool!r}")
    if not p and rule.fast and a.seconds >= FAST_S:
        p.append(f"{where}: {a.tool} failed as expected ({a.verdict}) but took {a.seconds:.2f}s; the {rule.plane} plane answers at once "
                 f"(bound {FAST_S:g}s)")
    return p


def socket_no_backend_problems(path: str, tool: str, verdict: str, elapsed_ms: float, errno: str | None, response: str,
                               kernel: str | None) -> list[str]:
    """A pod's ``connect``/``sendto`` on the socket plane to a Service that has no backend for it (none at all, none on
    its node, only discarded ones), judged by the socket plane's no-backend rule for the client node's ``kernel``
    release (the hook on that node sets the errno)."""
    from ..core.versions import kernel_tuple
    from ..rules.datapath import Plane, no_backend

    rule = no_backend(Plane.SOCKET, response, kernel=kernel_tuple(kernel) if kernel else None)
    return no_backend_problems(NoBackendAttempt(path, tool, verdict, elapsed_ms / 1000.0, errno), rule, response)


def known_regression(problems: list[str], cilium_version: str) -> str | None:
    """The reason to report ``problems`` as a known Cilium regression rather than a failure (the suite marks the test
    xfail, naming it): every problem is the socket plane's EPERM where EHOSTUNREACH was due (the errno note names
    #45184), on a release in the range #45184 reports (datapath.EPERM_REGRESSION, SRC_EPERM_BUG). A release there that
    answers EHOSTUNREACH passes: which 1.19 patch, if any, carries the fix is not known."""
    from ..core.versions import Version, in_range
    from ..rules.datapath import EPERM_REGRESSION

    if not problems or not cilium_version or not all("failed with EPERM" in p and "#45184" in p for p in problems):
        return None
    try:
        if not in_range(Version.parse(cilium_version), EPERM_REGRESSION):
            return None
    except ValueError:
        return None
    return (f"known Cilium regression cilium/cilium#45184 in {cilium_version} ({EPERM_REGRESSION}): the socket plane fails connect() "
            f"and sendto() with EPERM instead of EHOSTUNREACH; {problems[0]}")


@dataclass(frozen=True)
class GhostObservation:
    """The no-backend suite's observation of ghost (a Service without backends) in one family: what the client agent
    lists for it, the settings the rules depend on, and each client's attempt (``runner_raw`` None: not made, for the
    reason in ``runner_skip``)."""

    family: str
    cluster_ip: str
    node_port: int
    listed_backends: int | None  # the client agent's backends for ghost's frontend (None: not listed)
    response: str  # ServiceNoBackendResponse as the agents report it
    response_source: str | None
    routable: bool  # enable-no-service-endpoints-routable as the agents resolve it (unset: true)
    kernel: tuple[int, ...] | None  # the client node's kernel
    coverage: str  # the agents' socket-LB coverage
    cilium_version: str
    curl: NoBackendAttempt
    curl_exit: int | None
    connect: NoBackendAttempt
    pod_raw: NoBackendAttempt
    nodeport_raw: NoBackendAttempt
    runner_raw: NoBackendAttempt | None = None
    runner_skip: str | None = None
    #: attempt -> (the plane the rules gave it, the rule's citation), for the evidence
    planes: "tuple[tuple[str, str, str], ...]" = ()

    @property
    def ip_family(self) -> int:
        return 6 if self.family == "IPv6" else 4

    def to_json(self) -> dict[str, object]:
        """ghost.json."""
        by = {"pod_curl": self.curl, "pod_connect": self.connect, "pod_raw_syn": self.pod_raw, "nodeport_raw_syn": self.nodeport_raw,
              "runner_raw_syn": self.runner_raw}
        planes = {key: (plane, source) for key, plane, source in self.planes}
        attempts: dict[str, object] = {}
        for key, a in by.items():
            if a is None:
                attempts[key] = {"skipped": self.runner_skip}
                continue
            plane, source = planes.get(key, ("?", ""))
            attempts[key] = {"path": a.path, "tool": a.tool, "plane": plane, "verdict": a.verdict, "seconds": round(a.seconds, 4),
                             "errno": a.errno, "icmp": list(a.icmp) if a.icmp else None, "rule": source}
        return {"family": self.family, "cluster_ip": self.cluster_ip, "node_port": self.node_port, "backends": self.listed_backends,
                "no_backend_response": self.response, "no_backend_response_source": self.response_source,
                "no_service_endpoints_routable": self.routable, "client_kernel": ".".join(map(str, self.kernel)) if self.kernel else None,
                "socket_lb_coverage": self.coverage, "curl_exit": self.curl_exit, "seconds": self.curl.seconds, "attempts": attempts}


def listed_backends_problems(g: GhostObservation) -> list[str]:
    """The client agent lists ghost's frontend with no backend."""
    from ..parse.addr import hp

    return [] if g.listed_backends == 0 else [f"the agent lists {g.listed_backends} backends for ghost {hp(g.cluster_ip, 80)}"]


def attempt_problems(g: GhostObservation, a: NoBackendAttempt, client: str, access: str, frontend: str) -> list[str]:
    """One attempt against the rule of the plane that answers it (rules.datapath.plane_for, no_backend)."""
    from ..rules.datapath import no_backend, plane_for

    plane = plane_for(client, access, frontend, g.coverage).plane
    rule = no_backend(plane, g.response, g.routable, g.kernel, family=g.ip_family, owner="node" if frontend == "NodePort" else "elsewhere")
    return no_backend_problems(a, rule, g.response + ("" if g.routable else ", enable-no-service-endpoints-routable=false"))
