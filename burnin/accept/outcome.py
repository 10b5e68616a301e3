"""What an acceptance returns: the decisions, what they rest on, and the delivery's history.

Plain data that burnin/accept/run.py fills and the report and RMA bundle writers read; it
imports only the pure decision types, so the writers never depend on the orchestration.
"""

from __future__ import annotations

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

    @property
    def rejected(self) -> list[NodeDecision]:
        return [d for d in self.decisions if not d.accepted]
