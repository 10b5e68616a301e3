"""What an acceptance returns: the decisions, what they rest on, and the delivery's history.

Plain data that burnin/accept/run.py fills and the report and RMA bundle writers read; it
imports only the pure decision types, so the writers never depend on the orchestration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from burnin.accept.decide import DeliveryDecision, NodeDecision


@dataclass(frozen=True)
class ConformanceRow:
    """One part of one node, ordered against found."""

    node: str
    part: str
    ordered: str
    found: str
    ok: bool | None  # None: nobody reported it, so it could not be compared


@dataclass(frozen=True)
class NodeFacts:
    """The node as the store knows it (chassis serial, discovery data) when it was decided."""

    name: str
    serial: str | None
    state: str
    profile: str
    hardware: dict[str, Any] = field(default_factory=dict)

    @property
    def discovered_at(self) -> str:
        return str(self.hardware.get("discovered_at") or "")


@dataclass(frozen=True)
class IterationSummary:
    iteration: int  # 0: the order's stages; 1..: the soak's
    run_id: int
    status: str
    started_at: datetime
    finished_at: datetime | None
    nodes: tuple[str, ...]
    failed: tuple[str, ...]  # nodes whose first non-passing result came in this iteration


@dataclass(frozen=True)
class HistoryEntry:
    """A node's decision in one acceptance of the delivery."""

    node: str
    acceptance: int
    decision: str
    reasons: tuple[str, ...]
    time: datetime


NEVER_ARRIVED, UNORDERED, ARRIVED = "never arrived", "unordered", "arrived"
WAITING, UNDECIDED = "waiting", "not decided"


@dataclass(frozen=True)
class RosterRow:
    """One node or ordered serial of the delivery, with its latest decision and the acceptance
    that made it: what every report lists, whichever nodes this acceptance tested."""

    node: str | None  # None: an ordered serial no node of the rack has
    serial: str | None
    status: str  # arrived | unordered (its serial is not on the packing list) | never arrived
    decision: str  # accepted | rejected | waiting | not decided | never arrived
    acceptance: int | None = None  # the acceptance whose decision this is
    decided_at: datetime | None = None
    reasons: tuple[str, ...] = ()  # that decision's reasons, one line each
    note: str = ""  # why it waits


def delivery_roster(
    ordered_serials: Sequence[str],
    arrived: Sequence[tuple[str, str | None]],
    history: Sequence[HistoryEntry],
    waiting: Mapping[str, str],
) -> tuple[RosterRow, ...]:
    """The whole delivery (pure): each arrived node (``(name, chassis serial)``, rack order) with
    its latest decision over every acceptance of the delivery (``history``, oldest first), or
    waiting (``waiting``: node -> why it was not tested); then each packing-list serial no node
    has. With a packing list, a node whose serial is not on it is ``unordered``."""
    latest = {h.node: h for h in history}
    listed = set(ordered_serials)
    rows = []
    for node, serial in arrived:
        status = UNORDERED if listed and serial not in listed else ARRIVED
        last = latest.get(node)
        decision = WAITING if node in waiting else last.decision if last else UNDECIDED
        rows.append(
            RosterRow(
                node,
                serial,
                status,
                decision,
                last.acceptance if last else None,
                last.time if last else None,
                last.reasons if last else (),
                waiting.get(node, ""),
            )
        )
    present = {serial for _node, serial in arrived}
    rows += [RosterRow(None, s, NEVER_ARRIVED, NEVER_ARRIVED) for s in ordered_serials if s not in present]
    return tuple(rows)


@dataclass
class AcceptanceResult:
    delivery: str
    description: str
    rack: str
    acceptance_id: int
    started_at: datetime
    finished_at: datetime
    soak_s: float
    stages: tuple[str, ...]
    soak_stages: tuple[str, ...]
    redelivery_of: int | None
    tested: tuple[str, ...]  # the nodes this acceptance tested
    decisions: tuple[NodeDecision, ...]  # this acceptance's, one per tested node
    delivery_decision: DeliveryDecision
    conformance: tuple[ConformanceRow, ...]
    iterations: tuple[IterationSummary, ...]
    history: tuple[HistoryEntry, ...]  # every acceptance of the delivery on this rack, oldest first
    nodes: dict[str, NodeFacts]
    evidence: dict[int, str] = field(default_factory=dict)  # result id -> raw output, for the bundles
    waiting: dict[str, str] = field(default_factory=dict)  # rejected nodes not re-tested: why
    outputs: list[str] = field(default_factory=list)  # files written
    # The whole delivery (delivery_roster); empty: only what this acceptance decided is known
    roster: tuple[RosterRow, ...] = ()

    def whole(self) -> tuple[RosterRow, ...]:
        """Every node and ordered serial of the delivery; without a roster, this acceptance's
        decisions and the nodes waiting."""
        if self.roster:
            return self.roster
        mine = tuple(
            RosterRow(d.node, d.serial, ARRIVED, d.decision, self.acceptance_id, self.finished_at)
            for d in self.decisions
        )
        return mine + tuple(RosterRow(n, None, ARRIVED, WAITING, note=why) for n, why in self.waiting.items())

    @property
    def rejected(self) -> list[NodeDecision]:
        return [d for d in self.decisions if not d.accepted]
