"""Helpers of the real-kernel tier: run code inside a network namespace, cgroups, a BPF socket LB.

Everything here creates resources named ``kprt-<owner>-*`` (namespaces, cgroups; see ownership.py) or
``kprt_*`` (BPF programs and maps, held by this process's file descriptors) and removes them.
:func:`leftovers` lists what of *this* process is still there; :func:`remove_stale` removes what a
*dead* run left, never a live run's objects.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import secrets
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

import ownership
from netns import NETNS_DIR, PREFIX, SPAWNED, die_with_parent, namespaces, sh

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def in_netns(namespace: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn`` in a fresh thread that has joined ``namespace`` (setns is per thread): sockets it
    creates live there. The test process's own namespace is never touched."""
    box: dict[str, Any] = {}

    def target() -> None:
        fd = os.open(NETNS_DIR / namespace, os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns into {namespace}")
        finally:
            os.close(fd)
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # re-raised in the caller
            box["error"] = e

    t = threading.Thread(target=target, name=f"netns-{namespace}")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def cgroup2_root() -> Path | None:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        dev, mnt, fstype = line.split()[:3]
        if fstype == "cgroup2":
            return Path(mnt)
    return None


def ip_hex(ip: str) -> str:
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"0x{a:02x}{b:02x}{c:02x}{d:02x}"


def need_clang() -> None:
    """Skip the calling test where clang is missing (make test installs it when root)."""
    import shutil

    import pytest

    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (make test installs it when root)")


def ip6_words(ip: str) -> str:
    """An IPv6 address as the C initializer of four 32-bit words in host order, most significant first."""
    import ipaddress
    import struct

    return "{" + ",".join(f"0x{w:08x}" for w in struct.unpack("!4I", ipaddress.IPv6Address(ip).packed)) + "}"


def compile_sock_lb(out_dir: Path, svc: tuple[str, int], backend: tuple[str, int], no_backend: tuple[str, int] | None = None,
                    set_retval: bool = False, v6: "tuple[tuple[str, int], tuple[str, int], tuple[str, int] | None] | None" = None) -> Path:
    """``no_backend``: a second service without backends, rejected at connect(); ``set_retval``: with connect()'s
    errno set to EHOSTUNREACH through bpf_set_retval (else the kernel's EPERM); ``v6``: (service, backend, backendless
    service or None) for the IPv6 programs (connect6, sendmsg6, getpeername6, recvmsg6: :data:`SocketLB.PROGRAMS6`)."""
    src = Path(__file__).parent / "bpf" / "sock_lb.c"
    obj = out_dir / f"sock_lb{'-nobe' if no_backend else ''}{'-retval' if set_retval else ''}{'-v6' if v6 else ''}.o"
    arch = os.uname().machine
    extra = [f"-DNOBE_IP={ip_hex(no_backend[0])}", f"-DNOBE_PORT={no_backend[1]}"] if no_backend else []
    if v6:
        (s6, p6), (b6, bp6), nobe6 = v6
        extra += [f"-DSVC6={ip6_words(s6)}", f"-DSVC6_PORT={p6}", f"-DBE6={ip6_words(b6)}", f"-DBE6_PORT={bp6}"]
        if nobe6:
            extra += [f"-DNOBE6={ip6_words(nobe6[0])}", f"-DNOBE6_PORT={nobe6[1]}"]
    sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu",
       f"-DSVC_IP={ip_hex(svc[0])}", f"-DSVC_PORT={svc[1]}", f"-DBE_IP={ip_hex(backend[0])}", f"-DBE_PORT={backend[1]}",
       *extra, *(["-DHAVE_SET_RETVAL"] if set_retval else []), "-c", str(src), "-o", str(obj), timeout=60)
    return obj


def libbpf() -> ctypes.CDLL:
    """Debian's libbpf through ctypes, with the object calls both test programs use typed."""
    L = ctypes.CDLL(ctypes.util.find_library("bpf") or "libbpf.so.1", use_errno=True)
    L.bpf_object__open_file.restype = ctypes.c_void_p
    L.bpf_object__open_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    L.bpf_object__load.argtypes = [ctypes.c_void_p]
    L.bpf_object__find_program_by_name.restype = ctypes.c_void_p
    L.bpf_object__find_program_by_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    L.bpf_object__close.argtypes = [ctypes.c_void_p]
    L.libbpf_get_error.argtypes = [ctypes.c_void_p]
    L.libbpf_get_error.restype = ctypes.c_long
    return L


def load_object(L: ctypes.CDLL, obj_path: Path) -> int:
    """Open and load a compiled BPF object through libbpf; its handle (closed on a failed load), or OSError naming the step."""
    obj = L.bpf_object__open_file(str(obj_path).encode(), None)
    if not obj or L.libbpf_get_error(obj):
        raise OSError(ctypes.get_errno(), f"bpf_object__open_file({obj_path})")
    rc = L.bpf_object__load(obj)
    if rc != 0:
        L.bpf_object__close(obj)
        raise OSError(-rc, f"bpf_object__load({obj_path.name}): the verifier or permissions")
    return int(obj)


class SocketLB:
    """The compiled program loaded through libbpf and attached (as links) to a cgroup of its own.

    Links detach when destroyed or when this process exits, so nothing outlives the test.
    """

    #: every program of tests/bpf/sock_lb.c, as Cilium's bpf_sock.c attaches its own (connect4, sendmsg4, getpeername4, recvmsg4)
    PROGRAMS = ("kprt_connect4", "kprt_sendmsg4", "kprt_getpeername4", "kprt_recvmsg4")
    #: the IPv6 twins (compile_sock_lb(v6=...)): connect6, sendmsg6, getpeername6, recvmsg6
    PROGRAMS6 = ("kprt_connect6", "kprt_sendmsg6", "kprt_getpeername6", "kprt_recvmsg6")

    def __init__(self, obj_path: Path, programs: "tuple[str, ...]" = PROGRAMS):
        L = libbpf()
        L.bpf_program__attach_cgroup.restype = ctypes.c_void_p
        L.bpf_program__attach_cgroup.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.bpf_link__destroy.argtypes = [ctypes.c_void_p]
        self.L = L
        root = cgroup2_root()
        if root is None:
            raise RuntimeError("no cgroup2 mount")
        self.cgroup = root / ownership.name("socklb", secrets.token_hex(3))
        self.obj = None
        self.links: list[int] = []
        self.cgfd = -1
        os.mkdir(self.cgroup)
        try:
            self.obj = L.bpf_object__open_file(str(obj_path).encode(), None)
            if not self.obj or L.libbpf_get_error(self.obj):
                raise OSError(ctypes.get_errno(), f"bpf_object__open_file({obj_path})")
            rc = L.bpf_object__load(self.obj)
            if rc != 0:
                raise OSError(-rc, "bpf_object__load (verifier or permissions)")
            self.cgfd = os.open(self.cgroup, os.O_RDONLY | os.O_DIRECTORY)
            self.attached = tuple(programs)
            for prog in (name.encode() for name in programs):
                p = L.bpf_object__find_program_by_name(self.obj, prog)
                link = L.bpf_program__attach_cgroup(p, self.cgfd)
                if not link or L.libbpf_get_error(link):
                    raise OSError(ctypes.get_errno(), f"attach {prog.decode()} to {self.cgroup}")
                self.links.append(link)
        except BaseException:
            self.close()
            raise

    def join(self, pid: int) -> None:
        (self.cgroup / "cgroup.procs").write_text(str(pid))

    def close(self) -> None:
        for link in self.links:
            self.L.bpf_link__destroy(link)
        self.links.clear()
        if self.obj:
            self.L.bpf_object__close(self.obj)
            self.obj = None
        if self.cgfd >= 0:
            os.close(self.cgfd)
            self.cgfd = -1
        if self.cgroup.exists():
            # processes still inside keep the cgroup busy: move them to the root first
            root = self.cgroup.parent
            for pid in (self.cgroup / "cgroup.procs").read_text().split():
                try:
                    (root / "cgroup.procs").write_text(pid)
                except OSError:
                    pass
            self.cgroup.rmdir()


def spawn_in(cgroup: SocketLB | None, namespace: str, argv: list[str]) -> subprocess.Popen[str]:
    """Start ``argv`` in ``namespace`` after joining the socket-LB cgroup (membership is inherited, and a
    socket's cgroup is fixed when it is created, so the join must come first)."""
    def pre() -> None:
        die_with_parent()
        if cgroup is not None:
            cgroup.join(os.getpid())

    p = subprocess.Popen(["nsenter", f"--net={NETNS_DIR / namespace}", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=pre)
    SPAWNED.append(p)
    return p


def _cgroups() -> list[Path]:
    root = cgroup2_root()
    return sorted(root.glob(f"{PREFIX}-*")) if root is not None else []


def _own_bpf_programs() -> list[str]:
    """BPF programs this process still holds: a program or link file descriptor in /proc/self/fd
    (its fdinfo names the program id). Other processes' programs are not looked at."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target not in ("anon_inode:bpf-prog", "anon_inode:bpf_link"):
                continue
            info = dict(line.split(":", 1) for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines() if ":" in line)
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor, or another thread)
        found.append(f"bpf {target.split(':')[1]} fd {fd} prog_id {info.get('prog_id', '?').strip()}")
    return found


def bpftool(path: str | None = None, roots: tuple[str, ...] = ("/usr/lib",)) -> str | None:
    """A bpftool that runs here, or None: the one on PATH when ``bpftool version`` works (Debian's package), else one of
    the linux-tools packages' (``<root>/linux-tools*/<kernel>/bpftool``, any kernel's: bpftool reaches the running kernel
    through the bpf syscall, whichever kernel it was packaged beside). On Ubuntu 24.04 the ``bpftool`` on PATH is a wrapper
    (linux-tools-common) that exits "bpftool not found for kernel ..." unless linux-tools-$(uname -r) is installed:
    make test installs that, or linux-tools-generic, and this finds either (actions/runner-images#14203)."""
    import glob
    import shutil

    found = shutil.which("bpftool", path=path)
    candidates = [found] if found else []
    for root in roots:
        candidates += sorted(glob.glob(f"{root}/linux-tools*/*/bpftool"), reverse=True) + sorted(glob.glob(f"{root}/linux-tools-*/bpftool"), reverse=True)
    for c in candidates:
        try:
            if subprocess.run([c, "version"], capture_output=True, timeout=20).returncode == 0:
                return c
        except (OSError, subprocess.SubprocessError):
            continue
    return None


#: where the tier pins maps for bpftool to read (named by ownership.name, removed right after)
BPFFS = Path("/sys/fs/bpf")


def bpffs_mounted() -> bool:
    """Whether the topmost mount at :data:`BPFFS` is a bpffs (on a fresh machine it is a plain sysfs directory until
    someone mounts one: make test does, before the tests)."""
    tops = [line.split(" - ", 1)[1].split()[0] for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if line.split()[4] == str(BPFFS) and " - " in line]
    return bool(tops) and tops[-1] == "bpf"


def pin_path(owned_name: str) -> Path:
    """Where to pin an object named by ownership.name: bpffs refuses a '.' in a name, so the owner's is written '_'.
    Without a bpffs there the pin cannot be made: said in one line (make test mounts one)."""
    if not bpffs_mounted():
        raise RuntimeError(f"{BPFFS} is not a bpffs: `make test` mounts one as root (mount -t bpf bpf {BPFFS})")
    return BPFFS / owned_name.replace(".", "_", 1)


def _pin_owner_name(pin: Path) -> str:
    return pin.name.replace("_", ".", 1)


def _pins() -> list[Path]:
    return sorted(BPFFS.glob(f"{PREFIX}-*")) if BPFFS.is_dir() else []


def leftovers() -> list[str]:
    """This run's namespaces, cgroups, BPF programs and processes that still exist. Other runs' objects,
    live or dead, are not looked at."""
    found = [f"netns {n}" for n in namespaces() if ownership.mine(n)]
    found += [f"cgroup {p}" for p in _cgroups() if ownership.mine(p.name)]
    found += [f"bpf pin {p}" for p in _pins() if ownership.mine(_pin_owner_name(p))]
    found += _own_bpf_programs()
    found += [f"process {p.pid} ({' '.join(map(str, p.args))[:60]})" for p in SPAWNED if p.poll() is None]  # type: ignore[arg-type]
    return found


def remove_stale() -> list[str]:
    """Remove what an earlier run left if, and only if, that run is dead (its PID gone or reused).
    Returns what was removed. A live run's objects and names without an owner are left alone."""
    removed = []
    for name in namespaces():
        if ownership.orphaned(name):
            sh("ip", "netns", "del", name, check=False)
            removed.append(f"netns {name}")
    for cg in _cgroups():
        if ownership.orphaned(cg.name):
            try:
                cg.rmdir()  # the dead run's processes died with it (PR_SET_PDEATHSIG): the cgroup is empty
                removed.append(f"cgroup {cg}")
            except OSError:
                pass
    for pin in _pins():
        if ownership.orphaned(_pin_owner_name(pin)):
            pin.unlink(missing_ok=True)
            removed.append(f"bpf pin {pin}")
    return removed


class NetnsRunner:
    """A NodeRunner whose "nodes" are this suite's network namespaces: the plugin's Node handle
    (iptables, nft, ss, ...) runs against the real kernel through it."""

    def __init__(self, topo: Any):
        self.topo = topo

    def run(self, node: str, argv: Any, timeout: float = 60.0) -> Any:
        from pytest_kpr.k8s.api import ExecResult

        cp = subprocess.run(["nsenter", f"--net={NETNS_DIR / self.topo.ns(node)}", *argv], capture_output=True, text=True, timeout=timeout)
        return ExecResult(tuple(argv), cp.returncode, cp.stdout, cp.stderr, f"netns {node}")


# -- tc attachment: tcx (a bpf_link, Linux 6.6+) or legacy tc (clsact) -----------------------------------------

BPF_LINK_CREATE = 28  # enum bpf_cmd (include/uapi/linux/bpf.h)
BPF_TCX_INGRESS = 46  # enum bpf_attach_type: ... BPF_STRUCT_OPS 44, BPF_NETFILTER 45, BPF_TCX_INGRESS 46 (Linux 6.6)
SYS_BPF = {"x86_64": 321, "aarch64": 280}


def compile_tc_pass(out_dir: Path) -> Path:
    obj = out_dir / "tc_pass.o"
    arch = os.uname().machine
    sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", "-c", str(Path(__file__).parent / "bpf" / "tc_pass.c"),
       "-o", str(obj), timeout=60)
    return obj


class TcProgram:
    """tc_pass.o loaded through libbpf (no bpffs pin); its fd attaches by tcx or is handed to tc by the object file."""

    def __init__(self, obj_path: Path):
        L = libbpf()
        L.bpf_program__fd.argtypes = [ctypes.c_void_p]
        self.L, self.path = L, obj_path
        self.obj = load_object(L, obj_path)
        self.fd = L.bpf_program__fd(L.bpf_object__find_program_by_name(self.obj, b"kprt_tc_pass"))

    def attach_tcx(self, ifindex: int) -> int:
        """BPF_LINK_CREATE with BPF_TCX_INGRESS through the bpf() syscall (Debian's libbpf 1.1 has no tcx API).
        Returns the link's fd (the attachment lives until it is closed); raises OSError where the kernel has no tcx."""
        import struct

        attr = struct.pack("<IIII", self.fd, ifindex, BPF_TCX_INGRESS, 0).ljust(64, b"\0")
        buf = ctypes.create_string_buffer(attr, len(attr))
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.syscall(SYS_BPF[os.uname().machine], BPF_LINK_CREATE, buf, len(attr))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"BPF_LINK_CREATE BPF_TCX_INGRESS: {os.strerror(err)}")
        return int(fd)

    def close(self) -> None:
        if self.obj:
            self.L.bpf_object__close(self.obj)
            self.obj = None


def compile_sock_destroy(out_dir: Path, port: int) -> Path:
    """tests/bpf/sock_destroy.c for peer port ``port``: an iter/udp program calling bpf_sock_destroy (Linux 6.5+)."""
    obj = out_dir / f"sock_destroy-{port}.o"
    arch = os.uname().machine
    sh("clang", "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", f"-DDPORT={port}", "-c",
       str(Path(__file__).parent / "bpf" / "sock_destroy.c"), "-o", str(obj), timeout=60)
    return obj


class UdpDestroyIterator:
    """The compiled iterator loaded through libbpf (the load fails with OSError where the kernel lacks bpf_sock_destroy);
    :meth:`run` attaches it, reads one pass (which destroys the matching sockets of the calling thread's network
    namespace) and detaches. Nothing outlives :meth:`close` or this process."""

    def __init__(self, obj_path: Path):
        L = libbpf()
        L.bpf_program__attach_iter.restype = ctypes.c_void_p
        L.bpf_program__attach_iter.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        L.bpf_link__fd.argtypes = [ctypes.c_void_p]
        L.bpf_link__destroy.argtypes = [ctypes.c_void_p]
        L.bpf_iter_create.argtypes = [ctypes.c_int]
        self.L = L
        self.obj = L.bpf_object__open_file(str(obj_path).encode(), None)
        if not self.obj or L.libbpf_get_error(self.obj):
            self.obj = None
            raise OSError(ctypes.get_errno(), f"bpf_object__open_file({obj_path})")
        rc = L.bpf_object__load(self.obj)
        if rc != 0:
            self.close()
            raise OSError(-rc, "bpf_object__load: the kernel refused the iterator (no bpf_sock_destroy kfunc, or the verifier)")
        self.prog = L.bpf_object__find_program_by_name(self.obj, b"kprt_destroy_udp")

    def run(self) -> None:
        link = self.L.bpf_program__attach_iter(self.prog, None)
        if not link or self.L.libbpf_get_error(link):
            raise OSError(ctypes.get_errno(), "bpf_program__attach_iter")
        try:
            fd = self.L.bpf_iter_create(self.L.bpf_link__fd(link))
            if fd < 0:
                raise OSError(-fd, "bpf_iter_create")
            try:
                while os.read(fd, 4096):
                    pass
            finally:
                os.close(fd)
        finally:
            self.L.bpf_link__destroy(link)

    def close(self) -> None:
        if self.obj:
            self.L.bpf_object__close(self.obj)
            self.obj = None


def record(name: str, value: object) -> None:
    """A feature this kernel showed, for make test-kernels' table (KPR_KERNEL_FEATURES names the file)."""
    import json

    out = os.environ.get("KPR_KERNEL_FEATURES")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"feature": name, "value": value, "kernel": os.uname().release}) + "\n")
