"""Real-kernel tier, kernel-aware: how this kernel attaches a tc program, expected from clusters/kernels.yaml.

A tcx attachment (BPF_LINK_CREATE, BPF_TCX_INGRESS) succeeds on kernels the table gives tcx (6.6+) and is refused
before; there the legacy tc attachment (clsact + a bpf filter) works. This is what Cilium's attach mode follows
(the agent reports tcx or tc; the suites read the agent's report). `make test-kernels` runs this on 6.1, 6.12 and
the host's kernel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest
from netns import Topology, can_use_netns
from realkernel import TcProgram, compile_tc_pass, record

from pytest_kpr.rules.kernels import KernelTable

pytestmark = [pytest.mark.netns, pytest.mark.kernel_dependent]
TABLE = KernelTable.load(Path(__file__).resolve().parent.parent / "clusters" / "kernels.yaml")
KERNEL = os.uname().release


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Topology, TcProgram, Path]]:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    t = Topology()
    work = tmp_path_factory.mktemp("tc")
    try:
        t.add_ns("tc")
        t.exec("tc", "ip", "link", "add", "kprt0", "type", "veth", "peer", "name", "kprt1")
        t.exec("tc", "ip", "link", "set", "kprt0", "up")
        obj = compile_tc_pass(work)
        prog = TcProgram(obj)
        try:
            yield t, prog, obj
        finally:
            prog.close()
    finally:
        t.close()


def ifindex(t: Topology) -> int:
    return int(json.loads(t.exec("tc", "ip", "-j", "link", "show", "kprt0").stdout)[0]["ifindex"])


def test_tcx_attaches_where_the_table_gives_tcx_and_is_refused_before(dev: tuple[Topology, TcProgram, Path]) -> None:
    t, prog, _ = dev
    expected = TABLE.expects("tcx", KERNEL)
    from realkernel import in_netns

    try:
        fd = in_netns(t.ns("tc"), prog.attach_tcx, ifindex(t))
    except OSError as e:
        record("tcx", "refused")
        assert expected is False, f"kernel {KERNEL} should attach by tcx (clusters/kernels.yaml: tcx from {TABLE.features['tcx'].kernel}): {e}"
        return
    os.close(fd)  # the link fd is the kernel's confirmation (Debian's bpftool 7.1 does not list tcx links); closing detaches
    record("tcx", "attached")
    assert fd >= 0 and expected is True, \
        f"kernel {KERNEL} attached by tcx although clusters/kernels.yaml gives tcx from {TABLE.features['tcx'].kernel}"


def test_legacy_tc_attach_works_on_every_kernel(dev: tuple[Topology, TcProgram, Path]) -> None:
    t, _, obj = dev
    t.exec("tc", "tc", "qdisc", "add", "dev", "kprt0", "clsact")
    try:
        t.exec("tc", "tc", "filter", "add", "dev", "kprt0", "ingress", "bpf", "direct-action", "obj", str(obj), "sec", "tc")
        shown = t.exec("tc", "tc", "filter", "show", "dev", "kprt0", "ingress").stdout
        record("legacy_tc", "attached")
        assert "kprt_tc_pass" in shown or "tc_pass" in shown, shown
    finally:
        t.exec("tc", "tc", "qdisc", "del", "dev", "kprt0", "clsact", check=False)
