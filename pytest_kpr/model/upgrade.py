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


@dataclass(frozen=True)
class RecordedTransition:
    """One transition as the upgrade run recorded it: what the suite judges (read from the record by
    :meth:`Transition.from_record`, the one reader, also of an upgrade.json read back), its summary line, and the record
    itself (the roll's timeline, each flow's report and gaps, the snapshots before and after: kept, not judged)."""
    verdicts: Transition
    summary: str
    record: Mapping[str, Any]

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> "RecordedTransition":
        return cls(Transition.from_record(record), str(record.get("summary", "")), record)

    def to_json(self) -> dict[str, Any]:
        return dict(self.record)


@dataclass(frozen=True)
class UpgradeRecord:
    """upgrade.json: the versions, the gap bound and its policy, each flow's plane, and each transition."""
    from_version: str
    to_version: str
    max_gap_s: float
    max_gap_policy: str
    planes: Mapping[str, str]
    transitions: tuple[RecordedTransition, ...]
    #: removed options the values still set whose removal only a deprecation shows (scenarios.upgrade.preflight_notices)
    notices: tuple[str, ...] = ()

    def of_kind(self, kind: str) -> Transition | None:
        """The upgrade's or the downgrade's verdicts (None: this run made no such transition)."""
        return next((t.verdicts for t in self.transitions if t.verdicts.kind == kind), None)

    @property
    def summary(self) -> str:
        return "; ".join(t.summary for t in self.transitions)

    def to_json(self) -> dict[str, Any]:
        return {"from": self.from_version, "to": self.to_version, "max_gap_s": self.max_gap_s, "max_gap_policy": self.max_gap_policy,
                "planes": dict(self.planes), "transitions": [t.to_json() for t in self.transitions], "notices": list(self.notices)}
