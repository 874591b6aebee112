"""What the upgrade suite judges of one transition (an upgrade or a downgrade under live flows), read from the record the
upgrade run writes (upgrade.json's ``transitions``): each flow's problems by kind, and each family's diff."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class FlowVerdicts:
    name: str
    family: str
    broken: tuple[str, ...]  # resets, closes, stalls, lost messages (scenarios.upgrade.flow_problems)
    gap: tuple[str, ...]  # gaps over the bound
    longest_gap_during: str | None  # the agent restart on its path the longest gap fell in (None: none)


@dataclass(frozen=True)
class FamilyDiff:
    service_ids: tuple[str, ...] = ()
    backend_ids: tuple[str, ...] = ()
    ct_lost: tuple[str, ...] = ()  # flows whose conntrack entries were gone after the roll


@dataclass(frozen=True)
class Transition:
    kind: str  # upgrade | downgrade
    from_version: str
    to_version: str
    flows: tuple[FlowVerdicts, ...]
    families: Mapping[str, FamilyDiff]
    regressions: tuple[str, ...]  # datapath properties that held before and not after

    @classmethod
    def from_record(cls, t: "Mapping[str, Any]") -> "Transition":
        """One entry of upgrade.json's ``transitions``."""
        flows = tuple(FlowVerdicts(name, f["path"].get("family", "IPv4"), tuple(f["problems"]["broken"]), tuple(f["problems"]["gap"]),
                                   f.get("longest_gap_during")) for name, f in t["flows"].items())
        families = {fam: FamilyDiff(tuple(d.get("service_ids", ())), tuple(d.get("backend_ids", ())), tuple(d.get("ct_lost", ())))
                    for fam, d in t["diff"]["families"].items()}
        return cls(t["kind"], t["from"], t["to"], flows, families, tuple(t["diff"]["regressions"]))

    def flows_of(self, family: str) -> tuple[FlowVerdicts, ...]:
        return tuple(f for f in self.flows if f.family == family)

    def diff_of(self, family: str) -> FamilyDiff:
        return self.families.get(family, FamilyDiff())
