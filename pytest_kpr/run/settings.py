"""Options and ini keys, resolved once into a frozen :class:`Settings`.

Every option lives in one table (:data:`OPTIONS`): the CLI flag ``--kpr-X``, its ini twin ``kpr_X``, a
parser that raises :class:`SettingsError` with a one-line reason, a default and the help text.
Precedence: command line > ini file > default.
"""

from __future__ import annotations

import enum
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..core import inputs
from ..core.errors import SettingsError
from .resources import Pins, find_clusters_dir, packaged_dir

if TYPE_CHECKING:
    from ..cluster.provider import ProviderConfig


class ProviderName(str, enum.Enum):
    KIND = "kind"
    EXISTING = "existing"
    FAKE = "fake"  # the in-memory cluster (pytest_kpr.testing): a dry run, no real datapath
    REPLAY = "replay"  # a recorded run answers (pytest_kpr.run.replay): today's suites on yesterday's cluster, offline

    def __str__(self) -> str:
        return self.value


class Suites(str, enum.Enum):
    """Which suites ``pytest -m kpr`` adds when no paths are named."""

    PACKAGED = "packaged"  # the conformance suites installed with the plugin (and the rootdir's own tests)
    NONE = "none"  # only the rootdir's (or the named paths') tests

    def __str__(self) -> str:
        return self.value


class RequireOutside(str, enum.Enum):
    """Whether a test that needs the outside view (the runner as a client outside the cluster) may skip without it."""

    AUTO = "auto"  # required under CI (the CI variable set) on a cluster this run creates (kind, fake); optional otherwise
    YES = "yes"
    NO = "no"

    def __str__(self) -> str:
        return self.value


class IfUnavailable(str, enum.Enum):
    """What to do when the main job cannot run here (no Docker daemon, no kind, unreachable API server)."""

    FAIL = "fail"
    SKIP = "skip"

    def __str__(self) -> str:
        return self.value


#: a Kubernetes DNS-1123 label (namespaces, label values' shape), and a DNS-1123 subdomain (most object names)
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?"
#: a label's name (after its optional prefix) and a label's value: at most 63, alphanumeric at both ends
_LABEL_PART = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"


def _ns_name(text: str) -> str:
    ns, _, name = text.strip().partition("/")
    if not ns or not name or "/" in name:
        raise SettingsError(f"{text!r} is not NAMESPACE/NAME")
    if not re.fullmatch(_DNS_LABEL, ns) or not re.fullmatch(_DNS_SUBDOMAIN, name):
        raise SettingsError(f"{text!r} is not NAMESPACE/NAME of Kubernetes (lower-case letters, digits and '-'; a namespace of at most 63)")
    return f"{ns}/{name}"


#: the longest --kpr-namespace prefix: the run's namespaces are <prefix><purpose>-<run id> in 63 characters
NAMESPACE_PREFIX_MAX = 40


def _namespace(text: str) -> str:
    """``NAME`` (an existing namespace the run uses and never creates or deletes) or ``PREFIX-`` (the run creates its
    namespaces as <PREFIX><purpose>-<run id>): both Kubernetes DNS-1123 labels."""
    t = text.strip()
    if t.endswith("-"):
        if len(t) > NAMESPACE_PREFIX_MAX or not re.fullmatch(r"[a-z0-9][-a-z0-9]*-", t):
            raise SettingsError(f"{text!r} is not a namespace prefix: lower-case letters, digits and '-', starting with a letter or "
                                f"digit, ending with '-', at most {NAMESPACE_PREFIX_MAX} characters")
        return t
    if not re.fullmatch(_DNS_LABEL, t):
        raise SettingsError(f"{text!r} is not a namespace name: lower-case letters, digits and '-', at most 63, starting and ending "
                            "with a letter or digit (end it with '-' for a prefix)")
    return t


def _labels(text: str) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE[,KEY=VALUE...]``: Kubernetes label keys (an optional DNS prefix and '/', a name of at most 63) and
    values (at most 63, alphanumeric at both ends, '-', '_' and '.' inside; may be empty)."""
    out: list[tuple[str, str]] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        key, sep, value = part.partition("=")
        prefix, slash, name = key.rpartition("/")
        ok_key = re.fullmatch(_LABEL_PART, name) and (
            not slash or (len(prefix) <= 253 and re.fullmatch(_DNS_SUBDOMAIN, prefix)))
        if not sep or not ok_key:
            raise SettingsError(f"{part!r} is not KEY=VALUE with a Kubernetes label key")
        if value and not re.fullmatch(_LABEL_PART, value):
            raise SettingsError(f"{part!r}: {value!r} is not a Kubernetes label value (at most 63; letters, digits, '-', '_', '.')")
        out.append((key, value))
    if not out:
        raise SettingsError("no KEY=VALUE given")
    return tuple(out)


_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _tolerations(text: str) -> tuple[tuple[str, str, str], ...]:
    """``KEY[=VALUE]:EFFECT[,...]`` (kubectl taint's form) -> (key, value, effect); an empty VALUE tolerates the key with any
    value (operator Exists). EFFECT: NoSchedule, PreferNoSchedule or NoExecute."""
    out: list[tuple[str, str, str]] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        kv, sep, effect = part.rpartition(":")
        key, _, value = kv.partition("=")
        if not sep or effect not in _EFFECTS or not key:
            raise SettingsError(f"{part!r} is not KEY[=VALUE]:EFFECT (EFFECT one of {', '.join(_EFFECTS)})")
        _labels(f"{key}={value}")  # the key and value follow the label rules
        out.append((key, value, effect))
    if not out:
        raise SettingsError("no toleration given")
    return tuple(out)


def _fake_faults(text: str) -> tuple[tuple[str, Any], ...]:
    """``NAME[,NAME=VALUE...]`` -> ((name, value), ...); a NAME without ``=VALUE`` is (name, None). Only the syntax: the
    names and values are the fake's to check (pytest_kpr.testing.config.check_faults, called by the plugin)."""
    import ast

    out: list[tuple[str, Any]] = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        name, _, raw = part.partition("=")
        value: Any = None
        if raw.strip():
            try:
                value = ast.literal_eval(raw.strip())
            except (ValueError, SyntaxError):
                value = raw.strip()
        out.append((name.strip().replace("-", "_"), value))
    return tuple(out)


def _choice(enum_type: type[enum.Enum]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return enum_type(text.strip().lower())
        except ValueError:
            valid = ", ".join(str(m.value) for m in enum_type)  # type: ignore[attr-defined]
            raise SettingsError(f"{text!r} is not one of: {valid}") from None

    return parse


def _bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"{text!r} is not a boolean (true/false)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SettingsError(f"{text!r} is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise SettingsError(f"{text!r} must be a positive number")
    return value


def _nonempty(text: str) -> str:
    if not text.strip():
        raise SettingsError("must not be empty")
    return text.strip()


def _cluster_name(text: str) -> str:
    import re

    name = text.strip()
    # kind names become docker container names and DNS labels: <name>-control-plane
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?", name):
        raise SettingsError(f"{text!r} is not a valid cluster name (lowercase letters, digits and '-', at most 40)")
    return name


def _version(text: str) -> str:
    from ..core.versions import Version

    clean = text.strip()
    # a release (1.20.2, v1.20.2) or a pre-release (1.21.0-pre.1, 1.20.0-rc.2): nothing else reaches helm's command line
    if not re.fullmatch(r"v?\d{1,3}\.\d{1,3}\.\d{1,4}(-[0-9A-Za-z.]{1,40})?", clean):
        raise SettingsError(f"{inputs.show(text)} is not a Cilium version such as 1.20.2")
    try:
        Version.parse(clean)
    except ValueError:
        raise SettingsError(f"{inputs.show(text)} is not a Cilium version such as 1.20.2") from None
    return clean.lstrip("v")


def _nodeport(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise SettingsError(f"{text!r} is not a port number") from None
    if not 30000 <= port <= 32767:
        raise SettingsError(f"{port} is outside Kubernetes' default NodePort range 30000-32767")
    return port


def _ip(text: str) -> str:
    """A unicast IPv4 or IPv6 address a Service can claim, in its canonical form: not unspecified, loopback, link-local,
    multicast or broadcast (Kubernetes refuses such externalIPs), and without an IPv6 zone (%eth0: a Service address has
    none)."""
    try:
        a = ipaddress.ip_address(text.strip())
    except ValueError:
        raise SettingsError(f"{text!r} is not an IP address") from None
    why = _special(a)
    if why:
        raise SettingsError(f"{text!r} is {why}: a Service cannot claim it")
    return str(a)


def _special(a: "ipaddress.IPv4Address | ipaddress.IPv6Address") -> str | None:
    if getattr(a, "scope_id", None):
        return "an address with a zone (%...)"
    for test, what in (("is_unspecified", "the unspecified address"), ("is_loopback", "a loopback address"),
                       ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address")):
        if getattr(a, test):
            return what
    if a == ipaddress.IPv4Address("255.255.255.255"):
        return "the broadcast address"
    return None


#: the largest LB-IPAM block the shared-VIP suite creates: it needs a handful; a larger one takes addresses others use
MAX_BLOCK_ADDRESSES = 256


#: the shared-VIP suite's addresses when the run tests no IPv4 (an IPv6-only cluster's pods have no IPv4 address to reach
#: an IPv4 VIP from): from the IPv6 benchmarking block 2001:2::/48 (RFC 5180), as the IPv4 defaults are from 198.18.0.0/15
#: (RFC 2544)
SHARED_VIP6, LBIPAM_BLOCK6 = "2001:2::a:80", "2001:2::14:10-2001:2::14:20"


FAMILIES = ("IPv4", "IPv6")


def _families(text: str) -> tuple[str, ...]:
    """``IPv4``, ``IPv6`` or both, comma-separated (any case), in the order IPv4, IPv6."""
    names = {t.strip().lower() for t in text.split(",") if t.strip()}
    unknown = sorted(names - {f.lower() for f in FAMILIES})
    if unknown or not names:
        raise SettingsError(f"{text!r}: name IPv4, IPv6 or IPv4,IPv6")
    return tuple(f for f in FAMILIES if f.lower() in names)


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise SettingsError(f"{text!r} is not an integer") from None


def _path(text: str) -> Path:
    """A path the kernel can take: no NUL, no component over NAME_MAX (255 bytes), at most PATH_MAX (4096) in all --
    beyond those, every look-up of it raises instead of answering."""
    bad = SettingsError(f"{inputs.show(text)} is not a usable path (a NUL byte, a name over 255 bytes or a path over 4096)")
    if "\x00" in text:  # before expanduser: '~a\x00' would look the user 'a\x00' up, which raises ValueError
        raise bad
    p = Path(os.path.expanduser(text.strip()))
    raw = os.fsencode(str(p))
    if len(raw) >= 4096 or any(len(os.fsencode(part)) > 255 for part in p.parts):
        raise bad
    return p


def _existing_file(text: str) -> Path:
    p = _path(text)
    if not p.is_file():
        raise SettingsError(f"no such file: {p}")
    return p


# An image reference as Docker reads it: [registry[:port]/]path[:tag][@sha256:digest]
# (github.com/distribution/reference, regexp.go; lowercase path components).
_IMAGE = re.compile(
    r"(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)


def _image(text: str) -> str:
    t = _nonempty(text)
    if not _IMAGE.fullmatch(t):
        raise SettingsError(f"{t!r} is not an image reference such as kindest/node:v1.34.0@sha256:<64 hex digits>")
    return t


def _packaged_profiles() -> list[str]:
    """The profiles the plugin ships (clusters/profiles/*.yaml of the checkout, or the installed package's), default
    first: the option's help lists them from the directory, so a new profile is listed without editing the help."""
    clusters = packaged_dir("clusters")
    names = sorted(p.stem for p in (clusters / "profiles").glob("*.yaml")) if clusters is not None else []
    return (["default"] if "default" in names else []) + [n for n in names if n != "default"]


def _vip_base(text: str) -> str:
    """``IPV4,IPV6``: where the outside suites' LB-IPAM blocks start (pytest_kpr.scenarios.vips.suite_blocks: suite k takes
    base + k*256 + 10..19 and + 30 for IPv4, base + k*0x10000 + 0x10..0x19 and + 0x30 for IPv6)."""
    parts = [p.strip() for p in text.split(",")]
    try:
        v4, v6 = (ipaddress.ip_address(p) for p in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        v4 = v6 = None
    if v4 is None or v6 is None or v4.version != 4 or v6.version != 6:
        raise SettingsError(f"{text!r} is not IPV4,IPV6 (two addresses, IPv4 first), e.g. 198.18.21.0,2001:2::15:0")
    for a, last in ((v4, int(v4) + 2 * 256 + 30), (v6, int(v6) + 2 * 0x10000 + 0x30)):
        try:
            top = ipaddress.ip_address(last) if a.version == 6 else ipaddress.IPv4Address(last)
        except ValueError:
            raise SettingsError(f"{text!r}: {a} leaves no room for the three suites' blocks after it") from None
        for end in (a, top):
            why = _special(end)
            if why:
                raise SettingsError(f"{text!r}: the blocks from {a} reach {end}, which is {why}; LB-IPAM cannot give it to a Service")
    return f"{v4},{v6}"


def _ip_range(text: str) -> str:
    """``START-STOP``, two addresses of one family, START not after STOP (a CiliumLoadBalancerIPPool block)."""
    start, sep, stop = text.strip().partition("-")
    try:
        a, b = ipaddress.ip_address(start.strip()), ipaddress.ip_address(stop.strip())
    except ValueError:
        raise SettingsError(f"{text!r} is not START-STOP with two IP addresses, e.g. 198.18.20.10-198.18.20.20") from None
    if a.version != b.version:
        raise SettingsError(f"{text!r} mixes IPv4 and IPv6: both ends must be of one family")
    if not sep or a > b:
        raise SettingsError(f"{text!r} is reversed: {a} comes after {b}")
    for end in (a, b):
        why = _special(end)
        if why:
            raise SettingsError(f"{text!r}: {end} is {why}; LB-IPAM cannot give it to a Service")
    size = int(b) - int(a) + 1
    if size > MAX_BLOCK_ADDRESSES:
        raise SettingsError(f"{text!r} holds {size} addresses; the suite needs a few, at most {MAX_BLOCK_ADDRESSES} (a larger block takes "
                            "addresses others may use)")
    return f"{a}-{b}"


def _writable_dir(p: Path) -> str | None:
    """Why ``p`` cannot be used as a directory to write into (creating it and its parents), or None."""
    probe = p
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


@dataclass(frozen=True)
class Option:
    name: str  # settings attribute; CLI --kpr-<name with ->, ini kpr_<name>
    parse: Callable[[Any], Any]
    help: str
    default: Any = None
    kind: str = "value"  # value | flag | list
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--kpr-" + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return "kpr_" + self.name

    @property
    def dest(self) -> str:
        return "kpr_" + self.name


OPTIONS: tuple[Option, ...] = (
    Option("provider", _choice(ProviderName), "Where the cluster comes from: kind (create one), existing (a kubeconfig), fake (an "
           "in-memory cluster: a dry run that shows what a run and a failure look like; nothing about a real datapath is tested) "
           "or replay (a recorded run answers, offline: --kpr-replay). Default: kind", "kind", metavar="NAME"),
    Option("fake_faults", _fake_faults, "With --kpr-provider=fake: faults to give the fake cluster, NAME[,NAME...] (NAME=VALUE for the "
           "valued ones, NAME=IPv4 or NAME=IPv6 for one family); each breaks one property, so its suite fails. An unknown "
           "NAME is refused with the list of names", (), metavar="NAMES"),
    Option("replay", _path, "With --kpr-provider=replay: the evidence directory of a recorded run (its recording.jsonl.gz "
           "answers every request; docs/reference/evidence.md)", metavar="DIR"),
    Option("kubeconfig", _path, "Kubeconfig of an existing cluster. Default: $KUBECONFIG or ~/.kube/config", metavar="PATH"),
    Option("context", _nonempty, "Kubeconfig context of an existing cluster. Default: the current context", metavar="NAME"),
    Option("cluster_name", _cluster_name, "Name of the kind cluster. Default: kpr", "kpr", metavar="NAME"),
    Option("keep_cluster", _bool, "Keep a kind cluster the plugin created (do not delete it at the end)", False, kind="flag"),
    Option("reuse_cluster", _bool, "Reuse a running kind cluster of the same name instead of refusing to touch it", False, kind="flag"),
    Option("kind_config", _existing_file, "kind cluster config. Default: clusters/kind/<profile>.yaml if the profile has one "
           "(dual-stack, ipv6), else clusters/kind/kpr.yaml", metavar="PATH"),
    Option("node_image", _image, "kindest/node image (pin it by digest). Default: clusters/versions.yaml", metavar="IMAGE"),
    Option("cilium_version", _version, "Cilium chart version to install (1.18 or later). Default: clusters/versions.yaml", metavar="VERSION"),
    Option("cilium_chart", _nonempty, "Helm chart reference or local path for Cilium. Default: cilium/cilium", "cilium/cilium", metavar="CHART"),
    Option("helm_values", _path, "Extra Helm values file for Cilium, applied last (repeatable)", (), kind="list", metavar="PATH"),
    Option("artifacts", _path, "Directory for evidence files and cluster.json. Default: kpr-artifacts/<run>, a directory of its own for each run "
           "(kpr-artifacts/latest links the newest); a directory named here is used as it is", "kpr-artifacts", metavar="DIR"),
    Option("timeout_scale", _positive_float, "Multiply every named timeout by this factor (slow CI). Default: 1.0", 1.0, metavar="FACTOR"),
    Option("allow_disruptive", _bool, "Run kpr_disruptive tests on a cluster the plugin did not create", False, kind="flag"),
    Option("if_unavailable", _choice(IfUnavailable), "When Docker/kind/helm/kubectl or the API server is missing: fail (exit) or skip the kpr tests. Default: fail", "fail", metavar="fail|skip"),
    Option("kind_bin", _path, "kind executable. Default: kind on PATH (never downloaded)", metavar="PATH"),
    Option("kubectl_bin", _path, "kubectl executable. Default: kubectl on PATH (never downloaded)", metavar="PATH"),
    Option("helm_bin", _path, "helm executable. Default: helm on PATH", metavar="PATH"),
    Option("docker_bin", _path, "docker executable. Default: docker on PATH", metavar="PATH"),
    Option("probe_image", _image, "Probe image (kpr probe, curl, netstat). kind: a local image, loaded into the nodes (make probe-image builds it); other clusters: a pullable reference. Default: pytest-kpr-probe:<version>", metavar="IMAGE"),
    Option("nodeport", _nodeport, "NodePort of the web-np service in the NodePort suite. Default: 30780", "30780", metavar="PORT"),
    Option("shared_vip", _ip, "externalIPs address the shared-VIP suite makes two Services claim (in-cluster traffic only). Default: 198.18.10.80, "
           f"or {SHARED_VIP6} when the run tests no IPv4", "198.18.10.80", metavar="IP"),
    Option("lbipam_block", _ip_range, "start-stop of the CiliumLoadBalancerIPPool the shared-VIP suite creates. Default: 198.18.20.10-198.18.20.20, "
           f"or {LBIPAM_BLOCK6} when the run tests no IPv4", "198.18.20.10-198.18.20.20", metavar="RANGE"),
    Option("outside_vip_base", _vip_base, "IPV4,IPV6 where the LB-IPAM pools of the north-south, source-range and protocol suites "
           "start (suite k of the three: base + k*256, its block .10-.19 and its spare .30; for IPv6 base + k*0x10000, ::10-::19 "
           "and ::30). Default: 198.18.21.0,2001:2::15:0 (198.18.21-23.x, 2001:2::15-17:x: benchmarking ranges no cluster routes)",
           "198.18.21.0,2001:2::15:0", metavar="IPV4,IPV6"),
    Option("settle", _positive_float, "Seconds the shared-VIP suite keeps watching after Cilium's load-balancer reflector has provably processed the owner's deletion (10 of its 500 ms batching windows). Default: 5", "5", metavar="SECONDS"),
    Option("profile", _nonempty, f"Cluster profile: a Helm values overlay under clusters/profiles/ ({', '.join(_packaged_profiles())}), "
           "recorded in cluster.json. The suites read what the agent reports, never the profile's name. Default: default",
           "default", metavar="NAME"),
    Option("ip_families", _families, "The address families the family-dependent suites (socket LB, no backend, UDP, NodePort, eTP, DSR/SNAT, affinity, iTP, hostPort, terminating, Maglev, map pressure, backend slots, upgrade) run for, each "
           "once: IPv4, IPv6 or IPv4,IPv6; a family the agents do not serve is skipped, naming it. Default: the profile's "
           "(IPv4,IPv6 for dual-stack, IPv6 for ipv6), else IPv4", metavar="FAMILIES"),
    Option("upgrade_to", _version, "Upgrade Cilium to this version under live traffic once the cluster is ready at --kpr-cilium-version (the from version), "
           "measure every flow and diff the datapath (upgrade.json); then the suites run against the upgraded cluster. One minor at a time", metavar="VERSION"),
    Option("downgrade", _bool, "With --kpr-upgrade-to: roll back to the from version afterwards and measure again (N-1 -> N -> N-1)", False, kind="flag"),
    Option("upgrade_max_gap", _positive_float, "Longest gap (seconds) a flow may see during an upgrade or downgrade: pytest-kpr's policy, not a "
           "bound Cilium promises (its upgrade guide promises none). Default: 1", "1", metavar="SECONDS"),
    Option("allow_all_skipped", _bool, "Accept a kpr run in which no property was judged (every kpr test skipped or deselected); "
           "without it such a run exits 5", False, kind="flag"),
    Option("require_outside", _choice(RequireOutside), "Whether a test that needs the outside view (the runner sending to a node "
           "from outside the cluster: a specific route to the nodes, CAP_NET_RAW for raw SYNs, CAP_NET_ADMIN to route a VIP "
           "through a node) fails instead of skipping without it: "
           "yes, no, or auto (yes when the CI variable is set and the run creates its cluster, kind or fake). Default: auto", "auto",
           metavar="auto|yes|no"),
    Option("no_sysdump", _bool, "Do not run `cilium sysdump` when the setup fails (it runs when the cilium CLI is on PATH, into the "
           "run's setup-failure directory, on a cluster the run created: never with --kpr-provider=existing, whose sysdump "
           "archive would not go through the evidence's secret filter)", False, kind="flag"),
    Option("allow_kube_proxy", _bool, "Accept kube-proxy running beside the replacement on purpose (Cilium documents co-existence; refusing it "
           "is pytest-kpr's policy): the kube-proxy checks are skipped with that reason, not failed", False, kind="flag"),
    Option("seed", _seed, "Seed of the shared-VIP suite's generated event sequence (printed; reuse it to replay a failure). Default: random", metavar="N"),
    Option("cilium_namespace", _nonempty, "Namespace of the cilium-agent DaemonSet (found there by the chart's labels, k8s-app=cilium or "
           "app.kubernetes.io/name=cilium-agent). Default: kube-system", "kube-system", metavar="NAME"),
    Option("image_pull_secret", _ns_name, "NAMESPACE/NAME of a Secret the plugin's pods pull their images with: copied into each test "
           "namespace it creates and named in every pod it creates", metavar="NS/NAME"),
    Option("namespace", _namespace, "Where the run's pods and Services go: NAME, a namespace that exists (the run creates and deletes "
           "no namespace, only its own objects, each labelled with the run), or PREFIX- (the run creates <PREFIX><purpose>-<run id>). "
           "Default: the prefix kpr-", metavar="NAME|PREFIX-"),
    Option("namespace_labels", _labels, "Labels added to every namespace the run creates (an organisation's required labels, or Pod "
           "Security levels of your own: pod-security.kubernetes.io/enforce=...)", metavar="KEY=VALUE,..."),
    Option("pod_tolerations", _tolerations, "Tolerations of every pod the run creates (node shells tolerate every taint already)", metavar="KEY[=VALUE]:EFFECT,..."),
    Option("pod_node_selector", _labels, "Node labels every test pod must match (not the node shells: they run on each node the suites "
           "look at); the suites need at least two matching nodes", metavar="KEY=VALUE,..."),
    Option("no_node_shell", _bool, "Create no node shell (a privileged host-network, host-PID pod per node): the tests that read a "
           "node's own rules, sockets or IPVS table are skipped, each saying so", False, kind="flag"),
    Option("no_recording", _bool, "Write no recording of the run's requests to the cluster and their answers (recording.jsonl.gz "
           "beside the evidence: docs/reference/evidence.md)", False, kind="flag"),
    Option("node_shell_image", _image, "Image of the privileged per-node pod that runs node commands on an existing cluster. Default: busybox:1.36.1", "busybox:1.36.1", metavar="IMAGE"),
    Option("suites", _choice(Suites), "Which suites `pytest -m kpr` runs when no paths are named: packaged (the conformance suites "
           "installed with the plugin, beside the rootdir's own tests) or none (only the rootdir's). Default: packaged", "packaged",
           metavar="packaged|none"),
    Option("clusters_dir", _path, "Directory with kind configs, Helm values and versions.yaml (there is no fallback once one is named). Default: the rootdir's clusters/, else the one installed with the plugin", metavar="DIR"),
)

OPTIONS_BY_NAME = {o.name: o for o in OPTIONS}


@dataclass(frozen=True)
class Settings:
    """The resolved configuration of one pytest run. Built once by :func:`resolve`; never mutated."""

    provider: ProviderName = ProviderName.KIND
    fake_faults: tuple[tuple[str, Any], ...] = ()
    kubeconfig: Path | None = None
    replay: Path | None = None
    context: str | None = None
    cluster_name: str = "kpr"
    keep_cluster: bool = False
    reuse_cluster: bool = False
    kind_config: Path = Path("clusters/kind/kpr.yaml")
    node_image: str = ""
    cilium_version: str = ""
    cilium_chart: str = "cilium/cilium"
    helm_values: tuple[Path, ...] = ()
    artifacts: Path = Path("kpr-artifacts")
    timeout_scale: float = 1.0
    settle: float = 5.0
    allow_disruptive: bool = False
    if_unavailable: IfUnavailable = IfUnavailable.FAIL
    kind_bin: Path | None = None
    kubectl_bin: Path | None = None
    helm_bin: Path | None = None
    docker_bin: Path | None = None
    probe_image: str = ""
    nodeport: int = 30780
    shared_vip: str = "198.18.10.80"
    lbipam_block: str = "198.18.20.10-198.18.20.20"
    outside_vip_base: str = "198.18.21.0,2001:2::15:0"
    seed: int | None = None
    profile: str = "default"
    #: the families the family-dependent suites run for (--kpr-ip-families; by default the profile's)
    ip_families: tuple[str, ...] = ("IPv4",)
    upgrade_to: str | None = None
    downgrade: bool = False
    upgrade_max_gap: float = 1.0
    allow_kube_proxy: bool = False
    allow_all_skipped: bool = False
    require_outside: RequireOutside = RequireOutside.AUTO
    no_sysdump: bool = False
    node_shell_image: str = "busybox:1.36.1"
    no_node_shell: bool = False
    no_recording: bool = False
    clusters_dir: Path | None = None
    cilium_namespace: str = "kube-system"
    image_pull_secret: str | None = None
    namespace: str | None = None
    namespace_labels: tuple[tuple[str, str], ...] = ()
    pod_tolerations: tuple[tuple[str, str, str], ...] = ()
    pod_node_selector: tuple[tuple[str, str], ...] = ()
    suites: Suites = Suites.PACKAGED
    # where each value came from ("cli", "ini", "default", "pins"), for the report header
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def provider_config(self) -> "ProviderConfig":
        """What the built-in providers need of these settings (:class:`~pytest_kpr.cluster.provider.ProviderConfig`)."""
        from ..cluster.provider import ProviderConfig

        tools = {n: p for n in ("kind", "kubectl", "helm", "docker") if (p := getattr(self, f"{n}_bin")) is not None}
        return ProviderConfig(cluster_name=self.cluster_name, artifacts=self.artifacts, cilium_version=self.cilium_version,
                              cilium_chart=self.cilium_chart, clusters_dir=self.clusters_dir, profile=self.profile,
                              helm_values=self.helm_values, kind_config=self.kind_config, node_image=self.node_image,
                              probe_image=self.probe_image, reuse_cluster=self.reuse_cluster, keep_cluster=self.keep_cluster,
                              kubeconfig=self.kubeconfig, context=self.context, node_shell_image=self.node_shell_image,
                              timeout_scale=self.timeout_scale, tools=tools)

    def outside_required(self, env: Mapping[str, str] = os.environ) -> bool:
        """Whether a missing outside view fails the tests that need it (--kpr-require-outside). ``auto``: under CI on a
        cluster this run creates -- kind puts the runner on the nodes' network, so the view exists unless the runner
        lacks CAP_NET_RAW, which a CI job must grant (kpr with-net-raw) rather than silently skip."""
        if self.require_outside is not RequireOutside.AUTO:
            return self.require_outside is RequireOutside.YES
        ci = env.get("CI", "").strip().lower() not in ("", "0", "false", "no")
        return ci and self.provider in (ProviderName.KIND, ProviderName.FAKE)


def unknown_ini_keys(keys: Sequence[str]) -> list[str]:
    """Every ``kpr_`` ini key that is no option, each with the nearest known key (a typo would be silently ignored)."""
    import difflib

    known = [o.ini for o in OPTIONS]
    out = []
    for key in keys:
        if key.startswith("kpr_") and key not in known:
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            out.append(f"unknown ini key {key}" + (f" (did you mean {near[0]}?)" if near else " (no such option: see --help)"))
    return out


def fake_release_refusal(version: str, matrix: "tuple[str, ...]") -> str | None:
    """Why the fake cluster cannot play Cilium ``version``, or None. It plays the releases the pins know: every patch of a
    pinned minor up to the pinned one (clusters/versions.yaml's matrix) -- a newer one has not been read against its rules,
    and on kind or an existing cluster a release that does not exist has no chart to install either."""
    from ..core.versions import Version

    v = Version.parse(version)
    newest = {}
    for m in matrix:
        p = Version.parse(m)
        newest[(p.major, p.minor)] = max(newest.get((p.major, p.minor), p), p, key=lambda x: (x.major, x.minor, x.patch))
    top = newest.get((v.major, v.minor))
    known = ", ".join(f"{k[0]}.{k[1]}.0-{n.major}.{n.minor}.{n.patch}" for k, n in sorted(newest.items()))
    if top is None or v.patch > top.patch:
        return f"the fake cluster plays only the Cilium releases the pins know ({known}; clusters/versions.yaml): {version} is not one"
    return None


def artifacts_problem(path: Path) -> str | None:
    """Create the artifacts directory now, before any cluster work: a dangling symlink, a file in the way or a place
    that cannot be written is one line (exit 4), not a traceback at the first evidence file."""
    where = f"{OPTIONS_BY_NAME['artifacts'].flag} {path}"
    if path.is_symlink() and not path.exists():
        return f"{where} is a symlink to {os.readlink(path)}, which does not exist"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return f"{where} exists and is not a directory"
    except OSError as e:
        return f"{where} cannot be created: {e.strerror}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{where} cannot be written"
    return None


def new_run_name() -> str:
    """A run's own directory under the default artifacts directory: when it started (UTC, so names sort in time order) and
    a random part (two runs started in one second)."""
    import secrets
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-%f")[:-3] + "-" + secrets.token_hex(2)


#: the default artifacts directory's link to the newest run's directory
LATEST = "latest"


def link_latest(run_dir: Path) -> None:
    """Point ``<default artifacts>/latest`` at ``run_dir`` (relative, replaced atomically). Never raises: a filesystem
    without symlinks only loses the convenience."""
    link = run_dir.parent / LATEST
    tmp = run_dir.parent / f".{LATEST}.{os.getpid()}"
    try:
        if tmp.is_symlink():
            tmp.unlink()
        os.symlink(run_dir.name, tmp)
        os.replace(tmp, link)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


def resolve(
    cli: dict[str, Any],
    ini: Callable[[str], Any],
    rootdir: Path,
    run_name: str | None = None,
    artifacts_base: Path | None = None,
) -> Settings:
    """Build :class:`Settings` from CLI values (None = not given) and an ini getter. ``run_name``: the run's own directory
    under the default artifacts directory (None: the default directory itself, as before runs were kept apart).
    ``artifacts_base``: what a relative --kpr-artifacts is under (default: ``rootdir``).

    Raises :class:`SettingsError` naming the option and the reason.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    bad: list[str] = []
    for opt in OPTIONS:
        raw = cli.get(opt.dest)
        source = "cli"
        if raw is None or (opt.kind == "list" and not raw):
            raw = ini(opt.ini)
            source = "ini"
            if raw in (None, "", []) or (opt.kind == "flag" and raw is False):
                raw, source = None, "default"
        try:
            if raw is None:
                value = opt.default
                if opt.kind == "value" and isinstance(value, str):
                    value = opt.parse(value)
            elif opt.kind == "list":
                items = raw if isinstance(raw, (list, tuple)) else str(raw).split()
                value = tuple(opt.parse(str(i)) for i in items)
            elif opt.kind == "flag":
                value = _bool(raw)
            else:
                value = opt.parse(raw)
        except SettingsError as e:
            where = opt.flag if source == "cli" else f"ini key {opt.ini}"
            bad.append(f"{where}: {e}")  # every bad value, in one report
            value = opt.default
        values[opt.name] = value
        sources[opt.name] = source
    if bad:
        raise SettingsError("; ".join(bad))

    explicit = values["clusters_dir"]
    if explicit is not None:  # never fall back to another directory when one was named
        where = _where("clusters_dir", sources)
        if not explicit.is_dir():
            raise SettingsError(f"{where}: {explicit} does not exist or is not a directory")
        if not (explicit / "versions.yaml").is_file():
            raise SettingsError(f"{where}: {explicit} has no versions.yaml (it must look like the checkout's clusters/)")
    clusters_dir = find_clusters_dir(rootdir, explicit)
    values["clusters_dir"] = clusters_dir
    from ..core.yamlfile import YamlFileError

    try:
        pins = Pins.load(clusters_dir) if clusters_dir is not None else None
    except YamlFileError as e:
        raise SettingsError(str(e)) from None
    kind_config_given = values["kind_config"] is not None
    if not kind_config_given:
        values["kind_config"] = (clusters_dir / "kind" / "kpr.yaml") if clusters_dir else Path("clusters/kind/kpr.yaml")
    if not values["node_image"]:
        values["node_image"] = pins.node_image if pins else ""
        sources["node_image"] = "pins" if pins else "default"
    if not values["cilium_version"]:
        values["cilium_version"] = pins.cilium_version if pins else ""
        sources["cilium_version"] = "pins" if pins else "default"
    elif pins is not None:
        from ..core.versions import Version

        v, oldest = Version.parse(values["cilium_version"]), Version.parse(pins.oldest)
        if (v.major, v.minor) < (oldest.major, oldest.minor):
            where = _where("cilium_version", sources)
            raise SettingsError(f"{where}: Cilium {values['cilium_version']} is older than the oldest supported minor {pins.oldest} "
                                f"(clusters/versions.yaml; supported: {', '.join(pins.cilium_matrix)})")
    if values["seed"] is None:
        import random

        values["seed"] = random.randrange(1, 2**31)
        sources["seed"] = "random"
    if not values["probe_image"] and pins is not None and pins.probe_image:
        values["probe_image"], sources["probe_image"] = pins.probe_image, "pins"  # the published image, pinned by digest
    if not values["probe_image"]:
        from .. import __version__

        values["probe_image"] = f"pytest-kpr-probe:{__version__}"
    if clusters_dir is not None and (clusters_dir / "profiles").is_dir():
        known = sorted(p.stem for p in (clusters_dir / "profiles").glob("*.yaml"))
        if values["profile"] not in known:
            raise SettingsError(f"{_where('profile', sources)}: no profile {values['profile']!r} (known: {', '.join(known)}; "
                                f"each is a Helm values file in {clusters_dir / 'profiles'})")
        own = clusters_dir / "kind" / f"{values['profile']}.yaml"
        if not kind_config_given and own.is_file():  # the profile's own kind config (dual-stack, ipv6) unless one was named
            values["kind_config"] = own
    if values["ip_families"] is None:  # the profile's families (a profile that changes them promises them: PROFILE_PROMISES)
        from ..judge.profiles import PROFILE_PROMISES

        values["ip_families"] = tuple(PROFILE_PROMISES.get(values["profile"], {}).get("ip_families", ("IPv4",)))
        sources["ip_families"] = "profile" if values["ip_families"] != ("IPv4",) else sources["ip_families"]
    if "IPv4" not in values["ip_families"]:  # an IPv6-only run: the shared VIP's defaults of its family
        for name, v6 in (("shared_vip", SHARED_VIP6), ("lbipam_block", LBIPAM_BLOCK6)):
            if sources[name] == "default":
                values[name] = v6
    for name in ("shared_vip", "lbipam_block"):
        fam = "IPv6" if ":" in str(values[name]) else "IPv4"
        if fam not in values["ip_families"]:
            raise SettingsError(f"{_where(name, sources)}: {values[name]} is {fam}, a family this run does not test "
                                f"({'+'.join(values['ip_families'])}; --kpr-ip-families)")
    if values["downgrade"] and not values["upgrade_to"]:
        raise SettingsError(f"{OPTIONS_BY_NAME['downgrade'].flag} needs --kpr-upgrade-to (it rolls back what the upgrade did)")
    if values["upgrade_to"] and values["provider"] is ProviderName.EXISTING and not values["allow_disruptive"]:
        # said here, before anything starts: the fixture's own check (a cluster the run did not create) comes after the
        # cluster's readiness, and a typo must never look like a run of failures
        raise SettingsError(f"{_where('upgrade_to', sources)} changes Cilium on a cluster this run did not create "
                            "(--kpr-provider=existing); pass --kpr-allow-disruptive to do it")
    if values["upgrade_to"] and values["cilium_version"]:
        from ..rules.upgrade import version_refusal

        why = version_refusal(values["cilium_version"], values["upgrade_to"])
        if why:
            raise SettingsError(f"{_where('upgrade_to', sources)}: {why}")
    if values["provider"] is ProviderName.FAKE and pins is not None:
        for name in ("cilium_version", "upgrade_to"):
            why = fake_release_refusal(values[name], pins.cilium_matrix) if values[name] else None
            if why:
                raise SettingsError(f"{_where(name, sources)}: {why}")
    if values["provider"] is ProviderName.REPLAY and not values["replay"]:
        raise SettingsError("--kpr-provider=replay needs --kpr-replay=DIR (the evidence directory of a recorded run)")
    if values["context"] and values["provider"] is not ProviderName.EXISTING:
        raise SettingsError(f"{OPTIONS_BY_NAME['context'].flag} needs --kpr-provider=existing")
    for name, providers in PROVIDER_ONLY.items():
        if sources.get(name) in ("cli", "ini") and values["provider"] not in providers:
            raise SettingsError(f"{_where(name, sources)} means nothing with --kpr-provider={values['provider']}; it is for "
                                f"--kpr-provider={' or '.join(str(p) for p in providers)}")
    for p in values["helm_values"]:
        if not p.is_file():
            raise SettingsError(f"{OPTIONS_BY_NAME['helm_values'].flag}: no such file: {p}")
    values["artifacts"] = values["artifacts"] if values["artifacts"].is_absolute() else (artifacts_base or rootdir) / values["artifacts"]
    if sources["artifacts"] == "default" and run_name:
        values["artifacts"] = values["artifacts"] / run_name
    if sources["artifacts"] != "default":
        why = _writable_dir(values["artifacts"])
        if why:
            raise SettingsError(f"{_where('artifacts', sources)}: cannot create {values['artifacts']}: {why}")
    return Settings(**values, sources=sources)


#: options that mean something for some providers only: given with another, they are refused, never silently ignored
PROVIDER_ONLY: dict[str, tuple[ProviderName, ...]] = {
    **dict.fromkeys(("fake_faults",), (ProviderName.FAKE,)),
    **dict.fromkeys(("replay",), (ProviderName.REPLAY,)),
    **dict.fromkeys(("kubeconfig", "node_shell_image"), (ProviderName.EXISTING,)),
    **dict.fromkeys(("cluster_name", "keep_cluster", "reuse_cluster", "kind_config", "node_image", "cilium_chart", "helm_values",
                     "kind_bin", "docker_bin"), (ProviderName.KIND,)),
}



def _where(name: str, sources: dict[str, str]) -> str:
    """How the user gave an option: its flag, or its ini key."""
    opt = OPTIONS_BY_NAME[name]
    return opt.flag if sources.get(name) == "cli" else f"ini key {opt.ini}"


def add_options(group: Any, parser: Any) -> None:
    """Register every option on a pytest option group and its ini twin on the parser."""
    for opt in OPTIONS:
        if opt.kind == "flag":
            group.addoption(opt.flag, action="store_const", const=True, default=None, dest=opt.dest, help=opt.help)
            parser.addini(opt.ini, opt.help, type="bool", default=False)
        elif opt.kind == "list":
            group.addoption(opt.flag, action="append", default=[], dest=opt.dest, metavar=opt.metavar, help=opt.help)
            parser.addini(opt.ini, opt.help, type="linelist", default=[])
        else:
            group.addoption(opt.flag, action="store", default=None, dest=opt.dest, metavar=opt.metavar, help=opt.help)
            parser.addini(opt.ini, opt.help, default="")
