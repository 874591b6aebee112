"""Node tools: ``bpftool net show``, ``bpftool cgroup tree``, ``tc filter show``, ``iptables-save``
(nft and legacy), ``nft list ruleset``, ``ss`` and busybox/net-tools ``netstat -tn``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .addr import valid_ip
from .common import numbered, row_matches
from .errors import ParseError

# -- bpftool net show --------------------------------------------------------------------------------

_NET_SECTION = re.compile(r"(xdp|tc|flow_dissector|netfilter):")
_NET_TC = re.compile(
    r"(\S+)\((\d+)\) ((?:tcx|netkit|clsact)/(?:ingress|egress|peer|primary)) (\S+) "
    r"(?:prog_id (\d+)|id (\d+))((?: (?:link_id \d+|prog_flags \S+|link_flags \S+|act \[.*?\]))*) *"
)
_NET_XDP = re.compile(r"(\S+)\((\d+)\) (driver|generic|offload|skb|hw|multi) id (\d+) *")


@dataclass(frozen=True)
class BpfAttachment:
    section: str  # xdp | tc | flow_dissector | netfilter
    device: str
    ifindex: int
    attach: str  # tcx/ingress, clsact/ingress, ..., or the xdp mode
    name: str  # as printed: "cil_from_container" (tcx) or "cil_from_container-lxc1234" (legacy tc)
    prog_id: int
    link_id: int | None = None

    @property
    def program(self) -> str:
        """The program name without legacy tc's ``-<device>`` suffix (Cilium's TCA_BPF_NAME)."""
        suffix = f"-{self.device}"
        return self.name[: -len(suffix)] if self.name.endswith(suffix) else self.name

    @property
    def is_tcx(self) -> bool:
        return self.attach.startswith("tcx/")


def parse_bpftool_net(text: str) -> list[BpfAttachment]:
    out: list[BpfAttachment] = []
    section: str | None = None
    for lineno, line in numbered(text):
        if not line.strip():
            continue
        m = _NET_SECTION.fullmatch(line.strip())
        if m:
            section = m.group(1)
            continue
        m = _NET_TC.fullmatch(line)
        if m and section in ("tc", None):  # None: a grep'd excerpt without section headers
            section = section or "tc"
            link = re.search(r"link_id (\d+)", m.group(7) or "")
            out.append(BpfAttachment(section, m.group(1), int(m.group(2)), m.group(3), m.group(4),
                                     int(m.group(5) or m.group(6)), int(link.group(1)) if link else None))
            continue
        m = _NET_XDP.fullmatch(line)
        if m and section in ("xdp", None):
            section = section or "xdp"
            out.append(BpfAttachment(section, m.group(1), int(m.group(2)), m.group(3), "", int(m.group(4))))
            continue
        raise ParseError("bpftool-net", lineno, line)
    return out


# -- bpftool cgroup tree -----------------------------------------------------------------------------

_CG_ROW = re.compile(r"(\d+)\s+(\S+)\s+(?:(multi|override)\s+)?(\S+)\s*")


@dataclass(frozen=True)
class CgroupProgram:
    cgroup: str
    id: int
    attach_type: str
    attach_flags: str
    name: str


def parse_bpftool_cgroup_tree(text: str) -> list[CgroupProgram]:
    out = []
    cgroup: str | None = None
    for lineno, line in numbered(text):
        s = line.strip()
        if not s or s == "CgroupPath" or re.fullmatch(r"ID\s+AttachType\s+AttachFlags\s+Name", s):
            continue
        if s.startswith("/"):
            cgroup = s
            continue
        m = _CG_ROW.fullmatch(line)
        if m is None or cgroup is None:
            raise ParseError("bpftool-cgroup-tree", lineno, line)
        out.append(CgroupProgram(cgroup, int(m.group(1)), m.group(2), m.group(3) or "", m.group(4)))
    return out


# -- tc filter show ----------------------------------------------------------------------------------

_TC = re.compile(r"filter (?:parent \S+ )?protocol (\S+) pref (\d+) (\S+) chain (\d+) ?(.*)")


@dataclass(frozen=True)
class TcFilter:
    protocol: str
    pref: int
    kind: str  # bpf, u32, ...
    chain: int
    handle: str | None
    name: str | None  # the section/TCA_BPF_NAME, e.g. cil_from_container-lxc1234
    prog_id: int | None
    prog_name: str | None  # the kernel's 15-char program name
    direct_action: bool


def parse_tc_filter(text: str) -> list[TcFilter]:
    """Each ``filter ...`` line (a chain header line and one line per attached program)."""
    out = []
    for lineno, line, m in row_matches(text, "tc-filter", _TC, rstrip=True):
        rest = m.group(5).split()
        handle = name = prog_name = None
        prog_id = None
        i = 0
        known_flags = {"direct-action", "not_in_hw", "in_hw", "skip_hw", "skip_sw", "jited"}
        while i < len(rest):
            tok = rest[i]
            if tok in ("handle", "id", "name", "tag", "in_hw_count") and i + 1 < len(rest):
                val = rest[i + 1]
                if tok == "handle":
                    handle = val
                    if i + 2 < len(rest) and rest[i + 2] not in known_flags and rest[i + 2] not in ("id", "tag", "name"):
                        name = rest[i + 2]
                        i += 1
                elif tok == "id":
                    if not val.isdigit():
                        raise ParseError("tc-filter", lineno, line, "program id is not a number")
                    prog_id = int(val)
                elif tok == "name":
                    prog_name = val
                i += 2
                continue
            if tok in known_flags:
                i += 1
                continue
            raise ParseError("tc-filter", lineno, line, f"unknown token {tok!r}")
        out.append(TcFilter(m.group(1), int(m.group(2)), m.group(3), int(m.group(4)), handle, name, prog_id, prog_name, "direct-action" in rest))
    return out


# -- iptables-save and nft list ruleset ---------------------------------------------------------------

_IPT_TABLE = re.compile(r"\*(\w+)")
_IPT_CHAIN = re.compile(r":(\S+) (\S+) \[\d+:\d+\]")
_IPT_RULE = re.compile(r"-[AI] (\S+)(?: \d+)?(?: .*)?")


def _word_count(lines: tuple[str, ...], needle: str) -> int:
    """Lines naming ``needle`` as a whole token: an IP is not matched inside a longer IP (10.96.0.1 vs
    10.96.0.10) and a port not inside a longer number (30780 vs 130780)."""
    pat = re.compile(r"(?<![\w.])" + re.escape(needle) + r"(?![\w])(?!\.\d)")
    return sum(1 for line in lines if pat.search(line))


@dataclass(frozen=True)
class RuleDump:
    """What a rule dump contains, for the "no kube-proxy rules" checks. ``lines`` excludes comments."""

    source: str  # iptables-save | nft
    lines: tuple[str, ...]
    tables: tuple[str, ...]
    chains: tuple[str, ...]
    rules: int

    def count(self, needle: str) -> int:
        """Lines containing a substring (e.g. ``KUBE-SVC``, ``CILIUM``)."""
        return sum(1 for line in self.lines if needle in line)

    def count_token(self, token: str) -> int:
        """Lines naming an IP address or port as a whole token."""
        return _word_count(self.lines, token)

    def counts(self, ip: str | None = None, port: int | None = None) -> dict[str, int]:
        out = {
            "lines": len(self.lines),
            "kube_svc": self.count("KUBE-SVC"),
            "kube_sep": self.count("KUBE-SEP"),
            "cilium": self.count("CILIUM"),
        }
        if ip is not None:
            out["ip"] = self.count_token(ip)
        if port is not None:
            out["port"] = self.count_token(str(port))
        return out


def parse_iptables_save(text: str) -> RuleDump:
    lines: list[str] = []
    tables: list[str] = []
    chains: list[str] = []
    rules = 0
    table: str | None = None
    for lineno, line in numbered(text):
        s = line.rstrip()
        if not s or s.startswith("#"):
            continue
        m = _IPT_TABLE.fullmatch(s)
        if m:
            table = m.group(1)
            tables.append(table)
        elif s == "COMMIT":
            if table is None:
                raise ParseError("iptables-save", lineno, line, "COMMIT outside a table")
            table = None
        elif table is None:
            raise ParseError("iptables-save", lineno, line, "outside a *table section")
        elif (m := _IPT_CHAIN.fullmatch(s)) is not None:
            chains.append(f"{table}/{m.group(1)}")
        elif _IPT_RULE.fullmatch(s):
            rules += 1
        else:
            raise ParseError("iptables-save", lineno, line)
        lines.append(s)
    if table is not None:
        raise ParseError("iptables-save", len(text.splitlines()), text.splitlines()[-1] if text else "", f"table {table} not committed (cut off?)")
    return RuleDump("iptables-save", tuple(lines), tuple(tables), tuple(chains), rules)


_NFT_TABLE = re.compile(r"table (ip|ip6|inet|arp|bridge|netdev) (\S+) \{")
_NFT_BLOCK = re.compile(r"(chain|set|map|flowtable|counter|quota|ct helper|ct timeout|ct expectation|limit|secmark|synproxy) (\S+) \{")


def parse_nft_ruleset(text: str) -> RuleDump:
    lines: list[str] = []
    tables: list[str] = []
    chains: list[str] = []
    rules = 0
    stack: list[str] = []
    for lineno, line in numbered(text):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        lines.append(s)
        if not stack:
            m = _NFT_TABLE.fullmatch(s)
            if m is None:
                raise ParseError("nft", lineno, line, "expected 'table <family> <name> {'")
            tables.append(f"{m.group(1)} {m.group(2)}")
            stack.append("table")
            continue
        if s == "}" or s == "};":
            stack.pop()
            continue
        top = stack[-1]
        if top == "table":
            m = _NFT_BLOCK.fullmatch(s)
            if m is None:
                raise ParseError("nft", lineno, line, "expected a chain/set/map block")
            if m.group(1) == "chain":
                chains.append(f"{tables[-1]}/{m.group(2)}")
            stack.append(m.group(1))
            continue
        if top == "chain":
            if s.endswith("{"):
                raise ParseError("nft", lineno, line, "unexpected block inside a chain")
            if not s.startswith("type ") and not s.startswith("policy ") and not s.startswith("comment "):
                rules += 1
            continue
        # set/map/other block contents: may open { on "elements = {" and close on a later line
        if s.endswith("{"):
            stack.append("elements")
        elif top == "elements" and s.endswith("}"):
            stack.pop()
    if stack:
        raise ParseError("nft", len(text.splitlines()), text.splitlines()[-1] if text else "", "unbalanced braces (cut off?)")
    return RuleDump("nft", tuple(lines), tuple(tables), tuple(chains), rules)


# -- sockets: ss and netstat ---------------------------------------------------------------------------

SS_STATES = frozenset({"LISTEN", "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "CLOSE-WAIT", "LAST-ACK", "CLOSING", "CLOSED", "UNCONN"})
NETSTAT_STATES = frozenset({"ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"})
_SS_HEADER = re.compile(r"(?:Netid\s+)?State\s+Recv-Q\s+Send-Q\s+Local Address:Port\s+Peer Address:Port\s*(?:Process\s*)?")
_SS_ROW = re.compile(r"(?:(tcp|udp|raw|u_str|u_dgr)\s+)?([A-Z][A-Z0-9-]*)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)(?:\s+(\S.*?))?\s*")


@dataclass(frozen=True)
class Socket:
    state: str  # ss spelling (ESTAB, LISTEN) or netstat spelling (ESTABLISHED)
    recv_q: int
    send_q: int
    local_ip: str  # "*" for any
    local_port: int | None
    peer_ip: str
    peer_port: int | None  # None for "*"
    process: str | None = None

    @property
    def local(self) -> str:
        return _join(self.local_ip, self.local_port)

    @property
    def peer(self) -> str:
        return _join(self.peer_ip, self.peer_port)

    @property
    def established(self) -> bool:
        return self.state in ("ESTAB", "ESTABLISHED")


def _join(ip: str, port: int | None) -> str:
    p = "*" if port is None else str(port)
    return f"[{ip}]:{p}" if ":" in ip else f"{ip}:{p}"


def _sock_addr(fmt: str, lineno: int, line: str, text: str) -> tuple[str, int | None]:
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ParseError(fmt, lineno, line, f"bad address {text!r}")
    if "%" in host:  # 127.0.0.53%lo
        host = host.split("%", 1)[0]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.startswith("::ffff:") and "." in host:
        host = host[len("::ffff:"):]
    if port == "*":
        p: int | None = None
    elif port.isdigit() and int(port) <= 65535:
        p = int(port)
    else:
        raise ParseError(fmt, lineno, line, f"bad port in {text!r}")
    if host != "*":
        canonical = valid_ip(host)
        if canonical is None:
            raise ParseError(fmt, lineno, line, f"bad address {text!r}")
        host = canonical
    return host, p


def parse_ss(text: str) -> list[Socket]:
    """``ss -Htln``, ``ss -tn`` and friends (header optional)."""
    out = []
    for lineno, line, m in row_matches(text, "ss", _SS_ROW, skip=_SS_HEADER.fullmatch):
        if m.group(2) not in SS_STATES:
            raise ParseError("ss", lineno, line)
        lip, lport = _sock_addr("ss", lineno, line, m.group(5))
        pip, pport = _sock_addr("ss", lineno, line, m.group(6))
        out.append(Socket(m.group(2), int(m.group(3)), int(m.group(4)), lip, lport, pip, pport, m.group(7)))
    return out


_NETSTAT_HEADER = re.compile(r"Proto\s+Recv-Q\s+Send-Q\s+Local Address\s+Foreign Address\s+State(?:\s+PID/Program name)?")
_NETSTAT_ROW = re.compile(r"(tcp6?|udp6?)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+([A-Z_12]+)?\s*(?:(\S.*?)\s*)?")


def _netstat_header(line: str) -> bool:
    s = line.strip()
    return s.startswith("Active Internet connections") or bool(_NETSTAT_HEADER.fullmatch(s))


def parse_netstat(text: str) -> list[Socket]:
    """busybox (or net-tools) ``netstat -tn``; IPv6 addresses are not bracketed."""
    out = []
    for lineno, line, m in row_matches(text, "netstat", _NETSTAT_ROW, skip=_netstat_header):
        if m.group(6) and m.group(6) not in NETSTAT_STATES:
            raise ParseError("netstat", lineno, line)
        lip, lport = _sock_addr("netstat", lineno, line, m.group(4))
        pip, pport = _sock_addr("netstat", lineno, line, m.group(5))
        out.append(Socket(m.group(6) or "", int(m.group(2)), int(m.group(3)), lip, lport, pip, pport, m.group(7)))
    return out


# -- curl -w '%{http_code} %{time_total}' ------------------------------------------------------------

CURL_WRITE_OUT = "%{http_code} %{time_total}"


@dataclass(frozen=True)
class HttpResult:
    exit_code: int  # curl's: 0 ok, 7 could not connect, 28 timed out
    http_code: int  # 0 when no response
    seconds: float
    stderr: str = ""


def parse_curl(exit_code: int, stdout: str, stderr: str = "") -> HttpResult:
    """curl run with ``-s -o /dev/null -w '%{http_code} %{time_total}'`` (printed even when it fails)."""
    m = re.fullmatch(r"\s*(\d{3}) (\d+(?:\.\d+)?)\s*", stdout)
    if m is None:
        raise ParseError("curl", 1, stdout, f"expected '<http_code> <time_total>' (curl exit {exit_code})")
    return HttpResult(exit_code, int(m.group(1)), float(m.group(2)), stderr.strip())


# -- conntrack -L (the Linux conntrack table, conntrack-tools) -----------------------------------------

_CONNTRACK = re.compile(
    r"(tcp|udp|icmp|sctp)\s+(\d+) (\d+) (?:([A-Z_]+) )?"
    r"src=(\S+) dst=(\S+) (?:sport=(\d+) dport=(\d+) |type=\d+ code=\d+ id=\d+ )(?:\[UNREPLIED\] )?"
    r"src=(\S+) dst=(\S+) (?:sport=(\d+) dport=(\d+)|type=\d+ code=\d+ id=\d+)(?: .*)?"
)


@dataclass(frozen=True)
class ConntrackEntry:
    proto: str
    state: str | None
    orig_src: str
    orig_dst: str
    reply_src: str
    reply_dst: str

    @property
    def translated(self) -> bool:
        """DNAT: the reply comes from somewhere other than where the original packet went."""
        return self.reply_src != self.orig_dst


def parse_conntrack(text: str) -> list[ConntrackEntry]:
    """``conntrack -L`` lines; its summary line (stderr) is not part of the input."""
    out = []
    for _, _, m in row_matches(text, "conntrack", _CONNTRACK, rstrip=True):
        g = m.groups()

        def hp(ip: str, port: str | None) -> str:
            return f"{ip}:{port}" if port else ip

        out.append(ConntrackEntry(g[0], g[3], hp(g[4], g[6]), hp(g[5], g[7]), hp(g[8], g[10]), hp(g[9], g[11])))
    return out


# -- IPVS (/proc/net/ip_vs) ---------------------------------------------------------------------------------------

_IPVS_SERVICE = re.compile(r"(TCP|UDP|SCTP|FWM)\s+(\S+)\s+(\S+)")


def parse_ip_vs(text: str) -> list[str]:
    """IPVS virtual services from ``/proc/net/ip_vs`` (the kernel's table ``ipvsadm -Ln`` prints in decimal):
    ``IP Virtual Server version ...``, ``Prot LocalAddress:Port Scheduler Flags``, ``  -> RemoteAddress:Port ...``
    and one ``<PROT>  <addr:port in hex> <scheduler>`` line per virtual service (Linux net/netfilter/ipvs/ip_vs_ctl.c,
    ``ip_vs_info_seq_show``). Returns ``PROT addr:port`` per virtual service; an unknown line is an error."""
    out = []
    for lineno, line in numbered(text, "ip-vs"):
        s = line.strip()
        if not s or s.startswith(("IP Virtual Server version", "Prot LocalAddress:Port", "-> RemoteAddress:Port", "->")):
            continue
        m = _IPVS_SERVICE.match(s)
        if m is None:
            raise ParseError("ip_vs", lineno, line)
        out.append(f"{m.group(1)} {m.group(2)}")
    return out
