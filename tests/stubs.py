"""Stub ``kind``, ``helm``, ``kubectl`` and ``docker`` executables that record their arguments.

Each stub appends one JSON line ``{"tool": ..., "argv": [...]}`` to ``$KPR_STUB_DIR/calls.jsonl`` and
behaves just enough like the real tool for the provider: ``kind`` keeps a list of clusters in
``$KPR_STUB_DIR/clusters`` and writes a kubeconfig on create, ``docker info`` fails when
``$KPR_STUB_DIR/docker-down`` exists.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

STUB = r'''#!{python}
import json, os, shutil, sys
from pathlib import Path
tool = Path(sys.argv[0]).name
d = Path(os.environ["KPR_STUB_DIR"])
argv = sys.argv[1:]
with open(d / "calls.jsonl", "a") as f:
    f.write(json.dumps({{"tool": tool, "argv": argv}}) + "\n")
clusters = d / "clusters"
names = clusters.read_text().split() if clusters.exists() else []
def opt(name):
    for i, a in enumerate(argv):
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
    return None
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster: {{server: 'https://127.0.0.1:6443', insecure-skip-tls-verify: true}}
  name: stub
contexts:
- context: {{cluster: stub, user: stub}}
  name: stub
current-context: stub
users:
- name: stub
  user: {{token: dummy}}
"""
if tool == "kind":
    if argv[:2] == ["get", "clusters"]:
        print("\n".join(names)) if names else print("No kind clusters found.", file=sys.stderr)
    elif argv[:2] == ["create", "cluster"]:
        cfg = opt("--config")
        if cfg:
            shutil.copy(cfg, d / "kind-config-used.yaml")
        if (d / "slow-create").exists():  # kind half-way: its nodes exist (listed), the command has not returned
            import time
            clusters.write_text("\n".join(names + [opt("--name")]))
            (d / "create-started").write_text(str(os.getpid()))
            time.sleep(120)
        Path(opt("--kubeconfig")).write_text(KUBECONFIG)
        clusters.write_text("\n".join(names + [opt("--name")]))
    elif argv[:2] == ["delete", "cluster"]:
        clusters.write_text("\n".join(n for n in names if n != opt("--name")))
    elif argv[:2] == ["export", "kubeconfig"]:
        Path(opt("--kubeconfig")).write_text(KUBECONFIG)
elif tool == "docker":
    if argv[:2] == ["image", "inspect"]:
        if (d / "no-probe-image").exists():
            print("Error response from daemon: No such image: " + argv[-1], file=sys.stderr)
            sys.exit(1)
        print("sha256:0123")
    elif argv[:1] == ["info"]:
        if (d / "docker-down").exists():
            print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?", file=sys.stderr)
            sys.exit(1)
        print("28.2.2")
elif tool == "helm":
    if argv[:2] == ["show", "chart"]:
        if (d / "helm-no-repo").exists():
            print('Error: repo cilium not found', file=sys.stderr)
            sys.exit(1)
        if "--version" in argv and argv[argv.index("--version") + 1].startswith("1.99"):
            print('Error: chart "cilium" matching ' + argv[argv.index("--version") + 1] + ' not found in cilium index. '
                  "(try 'helm repo update'): no chart version found for cilium-" + argv[argv.index("--version") + 1], file=sys.stderr)
            sys.exit(1)
        print("apiVersion: v2\nname: cilium\nversion: " + argv[argv.index("--version") + 1])
    if argv[:3] == ["get", "values", "cilium"]:
        print((d / "helm-values").read_text() if (d / "helm-values").exists() else "kubeProxyReplacement: true")
    for i, a in enumerate(argv):
        if a == "--values":
            shutil.copy(argv[i + 1], d / ("helm-values-%d.yaml" % i))
sys.exit(0)
'''


def install_stubs(bin_dir: Path, tools: tuple[str, ...] = ("kind", "helm", "kubectl", "docker")) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        p = bin_dir / tool
        p.write_text(STUB.format(python=sys.executable))
        p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def calls(stub_dir: Path, tool: str | None = None) -> list[list[str]]:
    f = stub_dir / "calls.jsonl"
    if not f.exists():
        return []
    out = [json.loads(line) for line in f.read_text().splitlines()]
    return [c["argv"] for c in out if tool is None or c["tool"] == tool]


def env_for(stub_dir: Path, bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTEST_ADDOPTS")}
    env["PATH"] = str(bin_dir)
    env["KPR_STUB_DIR"] = str(stub_dir)
    env["PYTEST_ADDOPTS"] = "-W ignore::pytest.PytestAssertRewriteWarning"
    return env
