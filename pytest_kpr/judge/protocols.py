"""Several protocols on one port: a Service with 7000/TCP and 7000/UDP serves both (rules.datapath.SRC_MULTI_PROTOCOL), and
from 1.19 a request from outside to a VIP on a port or protocol it does not serve is dropped by the node and counted
(SRC_WILDCARD_DROP), not routed back out.

Pure: an observation in, the list of problems out (empty = the property holds)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..rules.datapath import DROP_NO_SERVICE_REASON
from .north_south import OutsideHttp


@dataclass(frozen=True)
class ProtocolsObservation:
    family: str
    target: str  # ClusterIP:port, one port for both protocols
    tcp: str  # a pod's connect() verdict
    udp: str  # a pod's UDP request's verdict (the probe's: answered | timeout | ...)
    udp_reply_from: str | None  # where the UDP reply came from (the ClusterIP, read back by recvmsg4)
    unknown: OutsideHttp | None  # a request from outside to the VIP on a port the Service does not have (None: not sent)
    unknown_drops: tuple[str, ...]  # the drop reasons that rose on the node meanwhile
    wildcard: bool  # whether the rule gives the VIP a wildcard entry here (datapath.wildcard_entry)
    no_view: str | None = None  # why the runner could not send from outside

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "unknown_drops": list(self.unknown_drops)}


def both_protocols_problems(o: ProtocolsObservation) -> list[str]:
    """A pod's TCP connection and its UDP request to the same ClusterIP and port are both served."""
    out = []
    if o.tcp != "connected":
        out.append(f"TCP to {o.target} from a pod: {o.tcp}, though the Service has {o.target.rsplit(':', 1)[1]}/TCP")
    if o.udp != "answered":
        out.append(f"UDP to {o.target} from a pod: {o.udp}, though the Service has {o.target.rsplit(':', 1)[1]}/UDP beside its TCP port")
    return out


def wildcard_drop_problems(o: ProtocolsObservation) -> list[str]:
    """The request to the VIP's unknown port got no answer, and the receiving node's agent counted it as a
    ``Service backend not found`` drop."""
    r = o.unknown
    if r is None:
        return ["no request was sent to the VIP's unknown port"]
    counted = [d for d in o.unknown_drops if d.startswith(DROP_NO_SERVICE_REASON + " ")]
    if r.http_code:
        return [f"{r.target}, a port the Service does not have, answered {r.answer()} through {r.via}"]
    if not counted:
        return [f"{r.target}, a port the Service does not have, got {r.answer()} through {r.via}, but the agent there counted no "
                f"\"{DROP_NO_SERVICE_REASON}\" drop (drops that rose: {', '.join(o.unknown_drops) or 'none'}): the VIP's wildcard entry "
                "did not drop it"]
    return []
