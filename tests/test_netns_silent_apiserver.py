"""An API server that accepts connections and never answers, on a real kernel in network namespaces (root): every
request of the real client is bounded (pytest_kpr.k8s.client.REQUEST_TIMEOUT, for connecting and each read; urllib3
tries 4 times: a list, whose discovery comes first, ends after about 4 bounds), and `kpr
check-access` ends with one line instead of waiting for ever (the existing-cluster preflight asks the same GET /version
with its own bound, cluster.existing.PREFLIGHT_TIMEOUT). Nothing leaves the
namespaces: the "API server" is a socket in the node namespace. Not kernel-dependent (tests/test_kernel_cells.py)."""

from __future__ import annotations

import json
import sys

import pytest
from netns import can_use_netns, three_namespaces, wait_listening

pytestmark = [pytest.mark.netns]

SILENT = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 6443)); s.listen(64)
held = []
while True:
    c, _ = s.accept(); held.append(c)  # accepted, never answered
"""

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://{ip}:6443", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: not-a-secret}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
"""

ASK = """
import json, sys
from pathlib import Path
from pytest_kpr.core.errors import InfraError
from pytest_kpr.k8s.client import RealKube
kube = RealKube(Path(sys.argv[1]), request_timeout=0.5)
out = {}
for op, call in (("list", lambda: kube.list("Pod", "default")), ("version", lambda: kube.server_version(timeout=0.5))):
    try:
        call()
        out[op] = "answered"
    except InfraError as e:
        out[op] = str(e)

print(json.dumps(out))
"""


def test_a_silent_api_server_is_one_line_from_every_request_and_from_check_access(tmp_path_factory: pytest.TempPathFactory) -> None:
    reason = can_use_netns()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("silent")
    t = three_namespaces(work)
    try:
        node = f"{t.subnets['left']}.2"
        t.spawn("node", [sys.executable, "-c", SILENT, node])
        wait_listening(t, "node", 6443)
        kc = work / "kubeconfig"
        kc.write_text(KUBECONFIG.format(ip=node))
        # the subprocess bounds below are the test's own guard against a hang (a hang is the bug), not timing claims
        cp = t.exec("client", sys.executable, "-c", ASK, str(kc), timeout=120)
        out = json.loads(cp.stdout.strip().splitlines()[-1])
        assert set(out) == {"list", "version"} and all("no answer within the timeout" in v for v in out.values()), out
        ca = t.exec("client", sys.executable, "-m", "pytest_kpr", "check-access", "--kubeconfig", str(kc), "--timeout", "0.5",
                    check=False, timeout=120)
        assert ca.returncode == 1 and ca.stdout == "" and ca.stderr.count("\n") == 1, ca
        assert ca.stderr.startswith("kpr check-access: the API server did not answer GET /version within 0.5 s"), ca.stderr
    finally:
        t.close()
