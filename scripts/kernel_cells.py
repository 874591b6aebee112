#!/usr/bin/env python3
"""`make test-kernels`: the real-kernel tier on other kernels, booted here under qemu, plus the host's own.

    sudo .venv/bin/python scripts/kernel_cells.py [--kernel 5.10.0-46-amd64 --kernel 6.1.0-50-amd64 ...] [--no-host]

Each cell boots one of Debian's packaged kernels (``apt-get download linux-image-<version>``, unpacked and cached
under ``.kernels/`` of the checkout) with a busybox initramfs that mounts the host's root read-only over 9p, a tmpfs
on top, the kernel's own modules and a writable results share, then runs the real-kernel tests whose outcome depends
on the kernel (``pytest -m "netns and kernel_dependent"`` over the files that mark them; KPR_REQUIRE_NETNS=1: nothing
may skip) and powers off. The other netns tests -- the plugin's hygiene, runs isolated from each other, this runner --
test pytest-kpr, not the kernel: make test runs them on the host. KVM when /dev/kvm works, TCG otherwise
(measured here: ~10 s to boot, ~10 min for the tier per kernel under TCG on 2 cores). The host's
kernel is the last cell. Each cell writes its results (kernel, the features the tier probed, passed/failed/skipped)
to <artifacts>/kernels/<kernel>.json; the script prints a table and exits 1 if a cell failed, skipped or did not boot.

A VM that does not reach the tier within --boot-timeout, or does not finish within --timeout, is killed (by its PID)
and reported with the tail of its console; on any exit, Ctrl-C included, the VMs are killed and their files removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KERNELS = ["5.10.0-46-amd64", "6.1.0-50-amd64", "6.12.107+deb12-amd64"]
#: the Debian release each kernel is packaged in. Every kernel is fetched from Debian's archive with a private apt
#: configuration under the cache (the host's sources and package lists are left alone), verified with Debian's own
#: archive keyring (DEBIAN_KEYRING: Debian has it; on Ubuntu, e.g. a GitHub runner, `make qemu-deps` installs Ubuntu's
#: debian-archive-keyring package, which ships the same file), so the host may be any Debian or Ubuntu release.
#: 5.10 is below 6.1: the socket plane's connect() fails with EPERM there (clusters/kernels.yaml sock_addr_set_retval),
#: and it is Cilium 1.18+'s floor.
RELEASE = {"5.10.0-46-amd64": "bullseye", "6.1.0-50-amd64": "bookworm", "6.12.107+deb12-amd64": "bookworm"}
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
ARTIFACTS = REPO / "kpr-artifacts" / "kernels"
#: insmod order for virtio 9p and overlayfs (a module built into the kernel is simply not found, and skipped)
MODULES = ["virtio", "virtio_ring", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci", "netfs", "fscache", "9pnet",
           "9pnet_virtio", "9p", "overlay"]
STAGE2_MARK = "KPR-STAGE2"
DONE_MARK = "KPR-DONE"

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in {modules}; do [ -f /mods/$m.ko ] && insmod /mods/$m.ko; done
mkdir -p /ro /rw /new
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /ro || {{ echo "KPR-FAIL no 9p root"; echo o > /proc/sysrq-trigger; }}
mount -t tmpfs tmpfs /rw; mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/ro,upperdir=/rw/upper,workdir=/rw/work /new
mkdir -p /new/lib/modules  # on the tmpfs overlay: the host may have no /lib/modules
mount -t 9p -o trans=virtio,version=9p2000.L,ro modules /new/lib/modules
mkdir -p /new/kpr-out; mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /new/kpr-out
exec switch_root /new /bin/sh /kpr-out/stage2.sh
"""

STAGE2 = """#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null
mount -t cgroup2 none /sys/fs/cgroup; mount -t bpf bpf /sys/fs/bpf; mount -t tmpfs tmpfs /run  # /tmp stays: the checkout may live there (the overlay keeps writes in RAM)
mkdir -p /run/netns; ip link set lo up
echo "{stage2} $(uname -r)"
cd {repo}
KPR_REQUIRE_NETNS=1 KPR_KERNEL_FEATURES=/kpr-out/features.jsonl HOME=/tmp \\
  {python} -m pytest -m {marks} {tests} -q -p no:cacheprovider -p no:randomly -o cache_dir=/tmp/pytest-cache \\
  --junitxml=/kpr-out/junit.xml > /kpr-out/pytest.txt 2>&1
echo $? > /kpr-out/rc
echo "{done} $(cat /kpr-out/rc)"
sync
echo o > /proc/sysrq-trigger
sleep 10
"""


def sh(*argv: str, cwd: Path | None = None, timeout: float = 600) -> str:
    cp = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if cp.returncode != 0:
        raise SystemExit(f"kernel cells: `{' '.join(argv)}` failed: {(cp.stderr or cp.stdout).strip()[-300:]}")
    return cp.stdout


def fetch(kernel: str, cache: Path) -> Path:
    """The unpacked package (boot/vmlinuz-<kernel>, lib/modules/<kernel>) under the cache, downloaded once."""
    root = cache / kernel
    if (root / "boot" / f"vmlinuz-{kernel}").is_file() and (root / "lib" / "modules" / kernel / "modules.dep").is_file():
        return root
    root.mkdir(parents=True, exist_ok=True)
    print(f"[kernels] downloading Debian's linux-image-{kernel}", flush=True)
    if not DEBIAN_KEYRING.is_file():
        raise SystemExit(f"kernel cells: {DEBIAN_KEYRING} is missing: install debian-archive-keyring (make qemu-deps does)")
    apt = private_apt(cache, RELEASE[kernel])
    cp = subprocess.run(["apt-get", *apt, "download", f"linux-image-{kernel}"], cwd=root, capture_output=True, text=True, timeout=900)
    if cp.returncode != 0:  # stale or missing package lists on a fresh machine: refresh them once
        print("[kernels] refreshing the package lists (apt-get update)", flush=True)
        sh("apt-get", *apt, "update", "-qq", timeout=900)
        sh("apt-get", *apt, "download", f"linux-image-{kernel}", cwd=root, timeout=900)
    (deb,) = list(root.glob("linux-image-*.deb"))
    sh("dpkg-deb", "-x", str(deb), str(root))
    deb.unlink()
    sh("depmod", "-b", str(root), kernel)
    return root


def private_apt(cache: Path, release: str) -> list[str]:
    """apt-get options for Debian ``release``'s archive with its own sources list, package lists and download cache under
    ``cache``; the archive is verified with Debian's keyring alone (signed-by), whatever keys the host trusts."""
    d = cache / f".apt-{release}"
    for sub in ("lists/partial", "archives/partial"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    signed = f"[signed-by={DEBIAN_KEYRING}]"
    (d / "sources.list").write_text(f"deb {signed} http://deb.debian.org/debian {release} main\n"
                                    f"deb {signed} http://deb.debian.org/debian {release}-updates main\n"
                                    f"deb {signed} http://deb.debian.org/debian-security {release}-security main\n")
    return ["-o", f"Dir::Etc::sourcelist={d / 'sources.list'}", "-o", "Dir::Etc::sourceparts=/dev/null",
            "-o", f"Dir::State::Lists={d / 'lists'}", "-o", f"Dir::Cache={d}", "-o", f"Dir::Cache::archives={d / 'archives'}"]


def initramfs(kernel_root: Path, kernel: str, work: Path) -> Path:
    d = work / "initramfs"
    for sub in ("bin", "mods", "proc", "sys", "dev"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    busybox = shutil.which("busybox") or "/bin/busybox"
    shutil.copy(busybox, d / "bin" / "busybox")
    mods = kernel_root / "lib" / "modules" / kernel
    found = []
    for name in MODULES:
        for suffix in (".ko", ".ko.xz", ".ko.zst"):
            hits = list(mods.rglob(f"{name}{suffix}"))
            if hits:
                dest = d / "mods" / f"{name}.ko"
                if suffix == ".ko":
                    shutil.copy(hits[0], dest)
                elif suffix == ".ko.xz":
                    dest.write_bytes(subprocess.run(["xz", "-dc", str(hits[0])], capture_output=True, check=True).stdout)
                else:
                    dest.write_bytes(subprocess.run(["zstd", "-dc", str(hits[0])], capture_output=True, check=True).stdout)
                found.append(name)
                break
    (d / "init").write_text(INIT.format(modules=" ".join(found)))
    (d / "init").chmod(0o755)
    out = work / "initramfs.cpio.gz"
    out.write_bytes(__import__("gzip").compress(newc(d)))
    return out


def newc(root: Path) -> bytes:
    """A cpio archive in the kernel's initramfs ("newc") format of everything under ``root``."""
    def entry(name: str, mode: int, data: bytes, ino: int) -> bytes:
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
        head = b"070701" + b"".join(b"%08X" % f for f in fields) + name.encode() + b"\0"
        head += b"\0" * (-len(head) % 4)
        return head + data + b"\0" * (-len(data) % 4)

    out = b""
    for ino, p in enumerate(sorted(root.rglob("*")), 1):
        rel = str(p.relative_to(root))
        st = p.lstat()
        data = os.readlink(p).encode() if p.is_symlink() else (p.read_bytes() if p.is_file() else b"")
        out += entry(rel, st.st_mode, data, ino)
    return out + entry("TRAILER!!!", 0, b"", 0)


def kvm_works() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return "vmx" in Path("/proc/cpuinfo").read_text() or "svm" in Path("/proc/cpuinfo").read_text()


#: what a cell runs: the real-kernel tests whose outcome depends on the kernel
MARKS = "netns and kernel_dependent"


def kernel_dependent_files() -> list[str]:
    """The test files that mark tests kernel_dependent (collecting only those: under TCG, collecting every self-test
    file took minutes of each cell)."""
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_*.py") if "mark.kernel_dependent" in p.read_text())


def boot(kernel: str, cache: Path, work: Path, boot_timeout: float, timeout: float, procs: list[subprocess.Popen[bytes]],
         tests: list[str] | None = None) -> dict:
    root = fetch(kernel, cache)
    initrd = initramfs(root, kernel, work)
    out = work / "out"
    out.mkdir()
    (out / "stage2.sh").write_text(STAGE2.format(stage2=STAGE2_MARK, done=DONE_MARK, repo=REPO, python=sys.executable, marks=shlex.quote(MARKS),
                                                     tests=" ".join(shlex.quote(t) for t in tests or kernel_dependent_files())))
    console = work / "console.log"
    accel = "kvm" if kvm_works() else "tcg"
    argv = ["qemu-system-x86_64", "-accel", accel, "-m", "2048", "-smp", "2", "-display", "none", "-no-reboot",
            "-serial", f"file:{console}", "-monitor", "none",
            "-kernel", str(root / "boot" / f"vmlinuz-{kernel}"), "-initrd", str(initrd),
            "-append", "console=ttyS0 panic=-1 quiet",
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={root / 'lib' / 'modules'},mount_tag=modules,security_model=none,readonly=on",
            "-virtfs", f"local,path={out},mount_tag=out,security_model=none"]
    print(f"[kernels] booting {kernel} under qemu ({accel.upper()})", flush=True)
    start = time.monotonic()
    # Ctrl-C must not land between the VM's start and its entry in ``procs`` (a VM nobody stops): SIGINT waits until
    # it is recorded; the VM itself starts with the mask it would have had
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, before))
        procs.append(p)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    booted_at = None
    while p.poll() is None:
        text = console.read_text(errors="replace") if console.exists() else ""
        now = time.monotonic() - start
        if booted_at is None and STAGE2_MARK in text:
            booted_at = now
            print(f"[kernels] {kernel} up in {now:.0f} s; running the real-kernel tier", flush=True)
        if booted_at is None and now > boot_timeout:
            return _failed(kernel, p, console, f"did not boot within {boot_timeout:.0f} s", now)
        if now > timeout:
            return _failed(kernel, p, console, f"did not finish within {timeout:.0f} s", now)
        time.sleep(0.5)
    elapsed = time.monotonic() - start
    if not (out / "rc").exists():
        return _failed(kernel, p, console, f"powered off without results (qemu exit {p.returncode}: "
                                           f"{(p.stderr.read() if p.stderr else b'').decode(errors='replace').strip()[-200:]})", elapsed)
    return collect(kernel, out, booted_at, elapsed, accel)


def _failed(kernel: str, p: subprocess.Popen[bytes], console: Path, why: str, elapsed: float) -> dict:
    if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    tail = console.read_text(errors="replace").splitlines()[-15:] if console.exists() else []
    return {"kernel": kernel, "ok": False, "error": why, "console_tail": tail, "seconds": round(elapsed, 1)}


def remove_stale_work(tmp: Path) -> list[Path]:
    """Remove the work directories (``kpr-kernels-<pid>-*``) of runs whose process no longer exists: a run killed
    outright (SIGKILL, a lost machine) cannot remove its own. A live run's directory is left alone."""
    removed = []
    for d in sorted(tmp.glob("kpr-kernels-*-*")):
        pid = d.name.split("-")[2]
        if not d.is_dir() or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
        except PermissionError:
            pass  # alive, someone else's
    return removed


def failures(junit: Path, lines: int = 6, width: int = 300) -> list[dict[str, str]]:
    """Each failed or erroring test of a junit file with the first ``lines`` lines of its message (each cut at
    ``width``): what a CI log shows of a cell, whose own files are removed with it."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        for bad in [*case.findall("failure"), *case.findall("error")]:
            text = (bad.get("message") or bad.text or "").strip().splitlines()[:lines]
            out.append({"test": f"{case.get('classname', '')}::{case.get('name', '')}",
                        "message": "\n".join(x if len(x) <= width else x[:width] + " ..." for x in text)})
    return out


def collect(kernel: str, out: Path, booted_at: float | None, elapsed: float, accel: str) -> dict:
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    junit = out / "junit.xml"
    failed: list[dict[str, str]] = []
    slowest: list[str] = []  # the cell's slowest tests (what its time goes to: make test-kernels is CI's longest job)
    if junit.exists():
        failed = failures(junit)
        suite = ET.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        assert suite is not None
        tests = int(suite.get("tests", 0))
        counts = {"failed": int(suite.get("failures", 0)), "errors": int(suite.get("errors", 0)), "skipped": int(suite.get("skipped", 0))}
        counts["passed"] = tests - counts["failed"] - counts["errors"] - counts["skipped"]
        cases = [(float(c.get("time", 0)), f"{c.get('classname', '')}::{c.get('name', '')}") for c in suite.iter("testcase")]
        slowest = [f"{t:.1f} s {name}" for t, name in sorted(cases, reverse=True)[:12]]
    features: dict[str, str] = {}
    feats = out / "features.jsonl"
    if feats.exists():
        for line in feats.read_text().splitlines():
            f = json.loads(line)
            features[f["feature"]] = f["value"]
    rc = int((out / "rc").read_text().strip()) if (out / "rc").exists() else -1
    if (out / "pytest.txt").exists():  # the whole output, kept with the results (the cell's files are removed)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / "pytest.txt", ARTIFACTS / f"{kernel}.pytest.txt")
    tail = (out / "pytest.txt").read_text(errors="replace").splitlines()[-3:] if (out / "pytest.txt").exists() else []
    return {"kernel": kernel, "ok": rc == 0 and counts["failed"] == counts["errors"] == counts["skipped"] == 0 and counts["passed"] > 0,
            "rc": rc, **counts, "features": features, "accel": accel, "boot_seconds": round(booted_at or 0.0, 1),
            "seconds": round(elapsed, 1), "pytest_tail": tail, "failures": failed, "slowest": slowest}


def host_cell(work: Path, tests: list[str] | None = None) -> dict:
    out = work / "host"
    out.mkdir()
    kernel = os.uname().release
    print(f"[kernels] the host's kernel {kernel}: running the real-kernel tier", flush=True)
    start = time.monotonic()
    env = {**os.environ, "KPR_REQUIRE_NETNS": "1", "KPR_KERNEL_FEATURES": str(out / "features.jsonl")}
    cp = subprocess.run([sys.executable, "-m", "pytest", "-m", MARKS, *(tests or kernel_dependent_files()), "-q", "-p", "no:cacheprovider", f"--junitxml={out / 'junit.xml'}"],
                        cwd=REPO, env=env, capture_output=True, text=True)
    (out / "rc").write_text(str(cp.returncode))
    (out / "pytest.txt").write_text(cp.stdout + cp.stderr)
    return {**collect(kernel, out, 0.0, time.monotonic() - start, "host"), "host": True}


def table(cells: list[dict]) -> str:
    rows = ["| kernel | where | tcx | legacy tc | UDP destroy (sock_diag) | bpf_sock_destroy | passed | failed | skipped | boot | total |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        if "error" in c:
            rows.append(f"| {c['kernel']} | qemu | - | - | - | - | - | - | - | {c['error']} | {c['seconds']} s |")
            continue
        f = c.get("features", {})
        rows.append(f"| {c['kernel']} | {c['accel']} | {f.get('tcx', '?')} | {f.get('legacy_tc', '?')} | "
                    f"{f.get('udp_sock_destroy_netlink_ipv4', '?')} | {f.get('bpf_sock_destroy', '?')} | {c['passed']} | "
                    f"{c['failed'] + c['errors']} | {c['skipped']} | {c['boot_seconds']} s | {c['seconds']} s |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", action="append", help=f"a Debian kernel package version (default: {', '.join(KERNELS)})")
    ap.add_argument("--no-host", action="store_true", help="skip the host's kernel cell")
    ap.add_argument("--cache", type=Path, default=REPO / ".kernels", help="where the kernel packages are kept (default .kernels/)")
    ap.add_argument("--artifacts", type=Path, default=REPO / "kpr-artifacts" / "kernels")
    ap.add_argument("--boot-timeout", type=float, default=120.0)
    ap.add_argument("--timeout", type=float, default=1200.0, help="per VM, boot and tier")
    ap.add_argument("--tests", nargs="+", metavar="SELECTOR", help="what pytest runs in each cell (default: the files that mark tests "
                    "kernel_dependent); "
                    "e.g. tests/test_realkernel_flow.py to repeat one module on every kernel")
    a = ap.parse_args()
    global ARTIFACTS
    ARTIFACTS = a.artifacts
    if os.geteuid() != 0:
        print("kernel cells: needs root (network namespaces inside each VM, and apt-get download)", file=sys.stderr)
        return 2
    for tool in ("qemu-system-x86_64", "depmod", "dpkg-deb", "apt-get", "busybox"):
        if shutil.which(tool) is None and not (tool == "busybox" and Path("/bin/busybox").exists()):
            print(f"kernel cells: {tool} is missing (make test-kernels installs qemu-system-x86 busybox-static kmod)", file=sys.stderr)
            return 2
    procs: list[subprocess.Popen[bytes]] = []
    for gone in remove_stale_work(Path(tempfile.gettempdir())):
        print(f"[kernels] removed {gone} (its run, PID {gone.name.split('-')[2]}, is gone)", flush=True)
    work = Path(tempfile.mkdtemp(prefix=f"kpr-kernels-{os.getpid()}-"))

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    cells: list[dict] = []
    try:
        for kernel in a.kernel or KERNELS:
            cell_dir = work / kernel
            cell_dir.mkdir()
            cells.append(boot(kernel, a.cache, cell_dir, a.boot_timeout, a.timeout, procs, a.tests))
        if not a.no_host:
            cells.append(host_cell(work, a.tests))
    except KeyboardInterrupt:
        print("[kernels] interrupted: stopping the VMs", file=sys.stderr)
        return 130
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    a.artifacts.mkdir(parents=True, exist_ok=True)
    for c in cells:
        (a.artifacts / f"{c['kernel']}.json").write_text(json.dumps(c, indent=2) + "\n")
    print(table(cells))
    bad = [c for c in cells if not c["ok"]]
    for c in bad:
        print(f"[kernels] {c['kernel']}: " + (c.get("error") or f"pytest exit {c.get('rc')}, {c.get('failed', 0) + c.get('errors', 0)} failed, "
                                               f"{c.get('skipped', 0)} skipped"), file=sys.stderr)
        for line in c.get("console_tail") or c.get("pytest_tail") or []:
            print(f"    {line}", file=sys.stderr)
        for f in c.get("failures") or []:
            print(f"    {f['test']}:", file=sys.stderr)
            for line in f["message"].splitlines():
                print(f"        {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
