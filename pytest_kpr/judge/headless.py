"""Headless Services: a Service Kubernetes marks headless (``clusterIP: None``, or the ``service.kubernetes.io/headless``
label on a Service that has a ClusterIP) gets no frontend on any agent -- not its ClusterIP, not its NodePorts
(rules.datapath.SRC_HEADLESS) -- while the same Service without the label is programmed everywhere.

Pure: an observation in, the list of problems out (empty = the property holds), worded so that a failure names the
property and shows what was seen."""

from __future__ import annotations

from dataclasses import dataclass

from ..rules.datapath import HEADLESS_LABEL


@dataclass(frozen=True)
class HeadlessObservation:
    """Each agent's frontends (``db/show frontends``) of a Service labelled headless and of its control, the same Service
    without the label."""

    service: str  # ns/name of the labelled Service
    asks_for: str  # what its spec asks for: "ClusterIP", "NodePort"
    listed: dict[str, tuple[str, ...]]  # node -> the frontends the agent lists for it ("<address> <type>")
    control: str  # ns/name of the control
    control_listed: dict[str, int]  # node -> how many frontends the agent lists for the control


def headless_problems(obs: HeadlessObservation) -> list[str]:
    """No agent lists a frontend for the headless Service; the control is listed on every agent (else the agents' tables
    were not read in time, and nothing is judged: that is a problem too, never a pass)."""
    unread = sorted(n for n, count in obs.control_listed.items() if count == 0)
    if not obs.control_listed or unread:
        return [f"the control Service {obs.control} (the same {obs.asks_for} Service without the label) is not listed on "
                f"{', '.join(unread) or 'any agent'}, so the agents' frontends tell nothing about {obs.service}"]
    return [f"{node} lists {len(fes)} frontend{'s' if len(fes) > 1 else ''} for {obs.service}, a {obs.asks_for} Service labelled "
            f"{HEADLESS_LABEL}: {', '.join(fes)}" for node, fes in sorted(obs.listed.items()) if fes]
