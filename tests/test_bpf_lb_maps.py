"""Real-kernel tier: the load balancer's maps on this kernel.

loadBalancerSourceRanges as the kernel decides it: tests/bpf/src_range.c carries the check of Cilium's per-packet load
balancer (nodeport_lb4/6: ``lb4_src_range_ok``: an LPM trie keyed by the service's rev_nat_id and the source address,
``verdict ^ deny``); each case of the rule's table (rules.datapath.source_range_allows, what the fake and the judges apply)
is loaded into its maps and a crafted SYN from the case's source to the VIP is run through it with BPF_PROG_TEST_RUN. The
kernel's verdict must be the rule's, and each drop counted once. The program is never attached: the packets exist only as
test input, nothing is sent and no namespace is needed.

The per-packet affinity map as bpftool dumps it: tests/bpf/affinity.c writes the entry as lb4/6_local do, from a service
entry written as the agent writes it, and this machine's bpftool dumps it: it must read as the fake renders it, parse back,
and equal the recorded sample.

Root (or CAP_BPF) loads and pins; the programs are closed and the pins removed when the tests end."""

from __future__ import annotations

import ctypes
import ipaddress
import os
import socket
import struct
from pathlib import Path
from typing import Iterator

import pytest
import ownership
from realkernel import bpftool, libbpf, load_object, need_clang, pin_path
from netns import sh

from pytest_kpr.rules.datapath import source_range_allows, source_ranges

pytestmark = [pytest.mark.netns]

TC_ACT_OK, TC_ACT_SHOT = 0, 2
FLAG_CHECK, FLAG_DENY = 1, 2
STATIC_PREFIX = 32  # rev_nat_id and pad before the address (SRC_RANGE_STATIC_PREFIX)
VIP4, VIP6, PORT = "198.18.22.10", "2001:2::16:10", 80


class RunOpts(ctypes.Structure):
    """libbpf's struct bpf_test_run_opts (bpf.h, libbpf 1.x)."""
    _fields_ = [("sz", ctypes.c_size_t), ("data_in", ctypes.c_void_p), ("data_out", ctypes.c_void_p),
                ("data_size_in", ctypes.c_uint32), ("data_size_out", ctypes.c_uint32), ("ctx_in", ctypes.c_void_p),
                ("ctx_out", ctypes.c_void_p), ("ctx_size_in", ctypes.c_uint32), ("ctx_size_out", ctypes.c_uint32),
                ("retval", ctypes.c_uint32), ("repeat", ctypes.c_int), ("duration", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("cpu", ctypes.c_uint32), ("batch_size", ctypes.c_uint32)]


class TcProgram:
    """A compiled tc program loaded through libbpf, its maps by file descriptor, the program run on bytes (never attached)."""

    def __init__(self, obj_path: Path, program: str, maps: tuple[str, ...]):
        L = libbpf()
        L.bpf_object__find_map_fd_by_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        L.bpf_program__fd.argtypes = [ctypes.c_void_p]
        L.bpf_map_update_elem.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
        L.bpf_map_lookup_elem.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        L.bpf_map_delete_elem.argtypes = [ctypes.c_int, ctypes.c_void_p]
        L.bpf_map_get_next_key.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        L.bpf_prog_test_run_opts.argtypes = [ctypes.c_int, ctypes.POINTER(RunOpts)]
        self.L = L
        self.obj = load_object(L, obj_path)
        L.bpf_obj_pin.argtypes = [ctypes.c_int, ctypes.c_char_p]
        self.prog = L.bpf_program__fd(L.bpf_object__find_program_by_name(self.obj, program.encode()))
        self.maps = {n: L.bpf_object__find_map_fd_by_name(self.obj, n.encode()) for n in maps}

    def update(self, m: str, key: bytes, value: bytes) -> None:
        k, v = ctypes.create_string_buffer(key, len(key)), ctypes.create_string_buffer(value, len(value))
        if self.L.bpf_map_update_elem(self.maps[m], k, v, 0) != 0:
            raise OSError(ctypes.get_errno(), f"update {m}")

    def clear(self, m: str, key_size: int) -> None:
        cur, nxt = None, ctypes.create_string_buffer(key_size)
        while self.L.bpf_map_get_next_key(self.maps[m], cur, nxt) == 0:
            self.L.bpf_map_delete_elem(self.maps[m], nxt)
            cur = None  # the first key again: the one just read is gone

    def drops(self) -> int:
        k, v = ctypes.create_string_buffer(4), ctypes.create_string_buffer(8)
        assert self.L.bpf_map_lookup_elem(self.maps["drops"], k, v) == 0
        return int(struct.unpack("<Q", v.raw)[0])

    def run(self, packet: bytes) -> int:
        buf = ctypes.create_string_buffer(packet, len(packet))
        out = ctypes.create_string_buffer(len(packet) + 256)
        opts = RunOpts(sz=ctypes.sizeof(RunOpts), data_in=ctypes.cast(buf, ctypes.c_void_p), data_size_in=len(packet),
                           data_out=ctypes.cast(out, ctypes.c_void_p), data_size_out=len(out), repeat=1)
        rc = self.L.bpf_prog_test_run_opts(self.prog, ctypes.byref(opts))
        if rc != 0:
            raise OSError(-rc, "BPF_PROG_TEST_RUN")
        return int(opts.retval)

    def pin(self, m: str, path: Path) -> None:
        """Pin map ``m`` at ``path`` (for bpftool); the caller unlinks it."""
        if self.L.bpf_obj_pin(self.maps[m], str(path).encode()) != 0:
            raise OSError(ctypes.get_errno(), f"pin {m} at {path}")

    def close(self) -> None:
        if self.obj:
            self.L.bpf_object__close(self.obj)
            self.obj = None


def _compiled(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    if os.geteuid() != 0:
        pytest.skip("loading a BPF program needs root")
    need_clang()
    out = tmp_path_factory.mktemp(name) / f"{name}.o"
    arch = os.uname().machine
    sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", "-c", str(Path(__file__).parent / "bpf" / f"{name}.c"),
       "-o", str(out), timeout=60)
    return out


@pytest.fixture(scope="module")
def prog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TcProgram]:
    p = TcProgram(_compiled(tmp_path_factory, "src_range"), "kprt_src_range", ("svc4", "svc6", "src4", "src6", "drops"))
    try:
        yield p
    finally:
        p.close()


def addr_bytes(ip: str) -> bytes:
    a = ipaddress.ip_address(ip)
    return socket.inet_pton(socket.AF_INET6 if a.version == 6 else socket.AF_INET, ip)


def syn(source: str, vip: str, port: int) -> bytes:
    """Ethernet, IPv4 or IPv6, a TCP SYN: the bytes a node's device would hand the program (checksums not needed)."""
    v6 = ":" in vip
    tcp = struct.pack("!HHIIBBHHH", 40000, port, 1, 0, 5 << 4, 0x02, 65535, 0, 0)
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, len(tcp), socket.IPPROTO_TCP, 64) + addr_bytes(source) + addr_bytes(vip)
    else:
        ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(tcp), 0, 0, 64, socket.IPPROTO_TCP, 0) + addr_bytes(source) + addr_bytes(vip)
    return b"\x02" * 6 + b"\x04" * 6 + struct.pack("!H", 0x86DD if v6 else 0x0800) + ip + tcp


def configure(p: TcProgram, ranges: list[str], deny: bool, rev_nat_id: int = 7) -> None:
    """The VIP's service entry and its ranges, as the agent writes them: the check flag only when a range parses (the
    control plane parses them as prefixes, an invalid one ignored), the deny flag by the annotation."""
    for m, size in (("svc4", 8), ("svc6", 20), ("src4", 12), ("src6", 24)):
        p.clear(m, size)
    nets = source_ranges(ranges)
    flags = (FLAG_CHECK if nets else 0) | (FLAG_DENY if deny else 0)
    val = struct.pack("!H", rev_nat_id) + struct.pack("<H", flags)  # the index in network order, as the agent stores it (SRC_REV_NAT_ORDER)
    p.update("svc4", addr_bytes(VIP4) + struct.pack("!H", PORT) + b"\0\0", val)
    p.update("svc6", addr_bytes(VIP6) + struct.pack("!H", PORT) + b"\0\0", val)
    for n in nets:
        key = struct.pack("<I", STATIC_PREFIX + n.prefixlen) + struct.pack("!H", rev_nat_id) + b"\0\0" + n.network_address.packed
        p.update("src6" if n.version == 6 else "src4", key, b"\x01")


CLIENT4, CLIENT6 = "172.18.0.1", "fc00:f853:ccd:e793::1"
#: the rule's cases (tests/judge/test_source_ranges.py's, and the families crossed), each run through the kernel
CASES = [
    (CLIENT4, [], False), (CLIENT4, [], True), (CLIENT4, ["172.18.0.1/32"], False), (CLIENT4, ["172.18.0.0/16", "192.0.2.0/24"], False),
    (CLIENT4, ["192.0.2.0/24"], False), (CLIENT4, ["172.18.0.1/32"], True), (CLIENT4, ["192.0.2.0/24"], True),
    (CLIENT4, ["2001:db8::/64"], False), (CLIENT4, ["172.18.0.0/15"], False), (CLIENT4, ["172.16.0.0/16"], False),
    (CLIENT4, ["0.0.0.0/0"], True), (CLIENT4, ["not-a-cidr", "172.18.0.9"], False), (CLIENT4, ["not-a-cidr"], False),
    (CLIENT6, ["fc00:f853:ccd:e793::1/128"], False), (CLIENT6, ["fc00:f853:ccd:e793::/64"], True), (CLIENT6, ["fc00::/7"], False),
    (CLIENT6, ["172.18.0.1/32"], True), (CLIENT6, ["172.18.0.1/32"], False), (CLIENT6, ["2001:db8::/64", "fc00:f853::/32"], False),
]


@pytest.mark.parametrize(("source", "ranges", "deny"), CASES)
def test_the_kernel_decides_as_the_rule_says(prog: TcProgram, source: str, ranges: list[str], deny: bool) -> None:
    configure(prog, ranges, deny)
    before = prog.drops()
    vip = VIP6 if ":" in source else VIP4
    got = prog.run(syn(source, vip, PORT))
    want = source_range_allows(source, ranges, deny)
    assert got == (TC_ACT_OK if want else TC_ACT_SHOT), (source, ranges, deny, got)
    assert prog.drops() - before == (0 if want else 1)


def test_another_frontend_and_another_services_ranges_are_not_checked(prog: TcProgram) -> None:
    """The ranges are the VIP's own (keyed by its rev_nat_id): another service's ranges never let a source through, and a
    packet to another port is no frontend of the check."""
    configure(prog, ["192.0.2.0/24"], False, rev_nat_id=7)
    other = struct.pack("<I", STATIC_PREFIX + 32) + struct.pack("!H", 8) + b"\0\0" + addr_bytes(CLIENT4)  # service 8 allows the client
    prog.update("src4", other, b"\x01")
    assert prog.run(syn(CLIENT4, VIP4, PORT)) == TC_ACT_SHOT
    assert prog.run(syn(CLIENT4, VIP4, 8080)) == TC_ACT_OK


# -- the per-packet affinity map as bpftool dumps it ------------------------------------------------------------------------

AFFINITY_SAMPLE = Path(__file__).parent / "data" / "bpftool" / "map-dump-lru-hash-16-16.json"


@pytest.fixture(scope="module")
def affinity_prog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TcProgram]:
    p = TcProgram(_compiled(tmp_path_factory, "affinity"), "kprt_affinity", ("svc4", "svc6", "kprt_aff4", "kprt_aff6", "now"))
    try:
        yield p
    finally:
        p.close()


def service_entries(vip: str, port: int, rev_nat_id: int, backend_id: int) -> list[tuple[bytes, bytes]]:
    """The frontend's slot 0 and slot 1 as the agent writes them (pkg/maps/lbmap Service4Key/Service4Value.ToNetwork: the
    port and the rev NAT index in network byte order, the slot, count and backend ID in the host's)."""
    def key(slot: int) -> bytes:
        return addr_bytes(vip) + struct.pack("!H", port) + struct.pack("<HBB", slot, socket.IPPROTO_TCP, 0) + b"\0\0"

    def value(backend: int, count: int) -> bytes:
        return struct.pack("<IH", backend, count) + struct.pack("!H", rev_nat_id) + bytes(4)
    return [(key(0), value(0, 1)), (key(1), value(backend_id, 0))]


def kernel_written_dump(p: TcProgram, client: str, vip: str, last_used: int, rev_nat_id: int = 7, backend_id: int = 3) -> str:
    """Run one SYN from ``client`` to ``vip`` through the program (it writes the affinity entry as lb4/6_local do) and dump
    the family's affinity map with this machine's bpftool, from a pin named for this process (removed after)."""
    v6 = ":" in vip
    for k, v in service_entries(vip, PORT, rev_nat_id, backend_id):
        p.update("svc6" if v6 else "svc4", k, v)
    p.update("now", bytes(4), struct.pack("<Q", last_used))
    assert p.run(syn(client, vip, PORT)) == TC_ACT_OK
    pin = pin_path(ownership.name("pin", f"aff{6 if v6 else 4}"))  # a dead run's pin is removed by realkernel.remove_stale
    try:
        p.pin("kprt_aff6" if v6 else "kprt_aff4", pin)
        return sh(bpftool() or "bpftool", "map", "dump", "pinned", str(pin), "-j").stdout
    finally:
        pin.unlink(missing_ok=True)


@pytest.mark.parametrize(("family", "client", "vip"), [("IPv4", CLIENT4, VIP4), ("IPv6", CLIENT6, VIP6)])
def test_the_affinity_entry_the_kernel_writes_is_what_the_fake_renders_and_the_parser_reads(
        affinity_prog: TcProgram, family: str, client: str, vip: str) -> None:
    """tests/bpf/affinity.c writes the entry as Cilium's lb4/6_local do (the key's rev_nat_id copied from the service entry,
    which holds it in network byte order: rules.datapath.SRC_REV_NAT_ORDER); this machine's bpftool dumps the map. The dump
    is, byte for byte, what the fake prints (testing.render.affinity_entry), and parse.bpftool_map reads back the client, the
    rev NAT ID 7 (not 1792) and the backend."""
    from pytest_kpr.parse.bpftool_map import AffinityEntry, affinity_entries, parse_map_dump_json
    from pytest_kpr.testing.render import affinity_entry, map_dump_json

    if bpftool() is None:
        pytest.skip("needs a bpftool that runs on this kernel (make test installs one: Debian's bpftool, or Ubuntu's linux-tools)")
    dumped = kernel_written_dump(affinity_prog, client, vip, 16_000_000_000)
    assert dumped.strip() == map_dump_json([affinity_entry(client, 7, 3, 16_000_000_000)])
    assert affinity_entries(parse_map_dump_json(dumped), family) == [AffinityEntry(client, 7, False, 3, 16_000_000_000)]


def test_the_recorded_affinity_dump_is_what_this_kernel_writes(affinity_prog: TcProgram) -> None:
    """tests/data/bpftool/map-dump-lru-hash-16-16.json (PROVENANCE.md) is made by this procedure: client 172.18.0.1, rev
    NAT ID 7, backend 3, last_used 16. Made again here, the bytes are the same."""
    if bpftool() is None:
        pytest.skip("needs a bpftool that runs on this kernel (make test installs one: Debian's bpftool, or Ubuntu's linux-tools)")
    assert kernel_written_dump(affinity_prog, CLIENT4, VIP4, 16).strip() == AFFINITY_SAMPLE.read_text().strip()


@pytest.mark.parametrize(("on_path", "packaged", "want"), [
    ("wrapper", True, "packaged"),  # Ubuntu 24.04: the wrapper on PATH, linux-tools-<another kernel> installed
    ("wrapper", False, None),       # the wrapper alone: no bpftool, and the tests say so (a failure under KPR_REQUIRE_NETNS)
    ("real", True, "path"),         # Debian's package: the one on PATH
    (None, True, "packaged"),
])
def test_a_bpftool_that_runs_here_is_found_past_ubuntus_wrapper(tmp_path: Path, on_path: str | None, packaged: bool, want: str | None) -> None:
    """realkernel.bpftool: Ubuntu's `bpftool` (linux-tools-common) is a wrapper that exits "bpftool not found for kernel
    ...-azure" on a GitHub runner (actions/runner-images#14203); a linux-tools package's bpftool is used instead, and none
    is None. The stand-ins are scripts; nothing is installed."""
    from realkernel import bpftool

    bin_dir, lib = tmp_path / "bin", tmp_path / "usr" / "lib"
    bin_dir.mkdir()
    if on_path:
        script = ("echo 'WARNING: bpftool not found for kernel 6.8.0-1021-azure' >&2; exit 2" if on_path == "wrapper"
                  else "echo 'bpftool v7.4.0'")
        (bin_dir / "bpftool").write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / "bpftool").chmod(0o755)
    if packaged:
        tool = lib / "linux-tools" / "6.8.0-50-generic" / "bpftool"
        tool.parent.mkdir(parents=True)
        tool.write_text("#!/bin/sh\necho 'bpftool v7.4.0'\n")
        tool.chmod(0o755)
    got = bpftool(path=str(bin_dir), roots=(str(lib),))
    expected = {"packaged": str(lib / "linux-tools" / "6.8.0-50-generic" / "bpftool"), "path": str(bin_dir / "bpftool"), None: None}[want]
    assert got == expected


def test_make_installs_the_linux_tools_where_the_bpftool_on_path_is_ubuntus_wrapper(tmp_path: Path) -> None:
    """make kernel-deps with a stand-in for Ubuntu's wrapper on PATH (it exits "bpftool not found for kernel ...") asks
    apt-get for linux-tools-$(uname -r) (a stand-in records the call; nothing is installed); with a bpftool that runs it
    asks for nothing."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("make kernel-deps installs only as root")
    repo = Path(__file__).resolve().parents[1]
    for case, script in (("wrapper", "echo 'WARNING: bpftool not found for kernel 6.8.0-1021-azure' >&2; exit 2"),
                         ("real", "echo 'bpftool v7.4.0'")):
        bin_dir = tmp_path / case
        bin_dir.mkdir()
        (bin_dir / "bpftool").write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / "apt-get").write_text(f"#!/bin/sh\necho \"$@\" >> {bin_dir}/apt.log\n")
        for f in ("bpftool", "apt-get"):
            (bin_dir / f).chmod(0o755)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        p = subprocess.run(["make", "--no-print-directory", "-C", str(repo), "kernel-deps"], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        asked = (bin_dir / "apt.log").read_text() if (bin_dir / "apt.log").exists() else ""
        if case == "wrapper":
            assert f"linux-tools-{os.uname().release}" in asked and "bpftool does not run on kernel" in p.stdout, (asked, p.stdout)
        else:
            assert asked == "", asked
