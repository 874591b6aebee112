"""The fake cluster's cilium-agent: answers CLI commands from the cluster's state, in the real formats."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import render

if TYPE_CHECKING:
    from .fake import FakeCluster

NOT_READY = (
    'Error: Unable to reach agent: Get "http://localhost/v1/healthz": dial unix /var/run/cilium/cilium.sock: '
    "connect: no such file or directory\n"
)


class FakeAgent:
    def __init__(self, cluster: "FakeCluster", node: str):
        self.cluster = cluster
        self.node = node
        self.status_polls = 0

    @property
    def ready(self) -> bool:
        return self.status_polls > self.cluster.cfg.agent_ready_after

    def handle(self, argv: list[str]) -> tuple[int, str, str]:
        cfg = self.cluster.cfg
        if not argv or argv[0] != cfg.agent_binary:
            name = argv[0] if argv else ""
            return 127, "", f'exec: "{name}": executable file not found in $PATH'
        args = argv[1:]
        if args == ["version"]:
            return 0, render.version_text(cfg.cilium_version), ""
        if args[:1] == ["status"]:
            self.status_polls += 1
            if not self.ready:
                return 1, "", NOT_READY
            if args[1:] == ["-o", "json"]:
                return 0, self._status_json(), ""
            return 2, "", f"Error: unknown flag: {' '.join(args[1:])}\n"
        if not self.ready:
            return 1, "", NOT_READY
        if args == ["config", "-a"]:
            return 0, self._config(), ""
        return 1, "", f'Error: unknown command "{" ".join(args)}" for "{cfg.agent_binary}"\n'

    def _status_json(self) -> str:
        cfg = self.cluster.cfg
        return render.status_json(
            version=cfg.cilium_version,
            kpr=not cfg.faults.kpr_disabled,
            socket_lb=cfg.socket_lb,
            hostns_only=cfg.socket_lb_hostns_only,
            nodeport_mode=cfg.nodeport_mode,
            algorithm=cfg.lb_algorithm,
            attach_mode=cfg.attach_mode,
            devices=(("eth0", self.cluster.node_ip(self.node)),),
        )

    def _config(self) -> str:
        cfg = self.cluster.cfg
        ro = {
            "BPFSocketLBHostnsOnly": str(cfg.socket_lb_hostns_only).lower(),
            "CGroupRoot": "/run/cilium/cgroupv2",
            "ConfigDir": "/tmp/cilium/config-map",
            "DatapathMode": "veth",
            "Devices": "[eth0]",
            "EnableTCX": str(cfg.attach_mode == "tcx").lower(),
            "ServiceNoBackendResponse": cfg.no_backend_response,
            "k8s-configuration": "",
            "k8s-endpoint": "",
        }
        rw = {"Debug": "Disabled", "MonitorNumPages": "64", "PolicyEnforcement": "default"}
        return render.config_all(ro, rw)
