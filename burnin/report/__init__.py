"""Rack reports: what the burn-in found, for people (HTML) and for CI systems (JUnit XML).

``collect`` reads the store and the inventory (the only I/O here) into a ``RackReport``; the
renderers in ``html`` and ``junit`` are pure functions of it. A report never changes a node's
state: it shows whether each node qualifies as golden under the same rules as ``burnin golden``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from bringup.fleet.reads import collector_paused
from burnin.golden.rules import Decision, NodeFacts, StageStatus, decide, gather, rows_by_stage, stage_status
from burnin.result import PASSING, Verdict
from burnin.stages import STAGE_ORDER
from burnin.stages.group import PORT_CHART, SOAK_CHART, drawn_as

EVIDENCE_LIMIT = 6000  # characters of raw evidence per result in a report; the store keeps more
# The worst problems whose raw evidence a report carries; the rest are listed with their findings
# and the command that shows theirs (a fleet with a few hundred warnings stays a readable page).
EVIDENCE_SHOWN = 200


@dataclass(frozen=True)
class IbPortBar:
    node: str
    port: str
    gbps: float
    partner: str = ""
    floor_gbps: float | None = None
    verdict: str = ""

    @property
    def below_floor(self) -> bool:
        if self.verdict:
            return self.verdict not in PASSING
        return self.floor_gbps is not None and self.gbps < self.floor_gbps

    @property
    def low_not_blamed(self) -> bool:
        """Measured below the floor, yet passed: blame by agreement put the fault on the other
        end of the link it was measured on, not on this port."""
        return not self.below_floor and self.floor_gbps is not None and self.gbps < self.floor_gbps


@dataclass(frozen=True)
class NcclPoint:
    index: int
    busbw_gbps: float | None
    wrong: int = 0
    seconds: float | None = None
    verdict: str = ""

    @property
    def bad(self) -> bool:
        return self.wrong > 0 or self.verdict in (Verdict.FAIL, Verdict.UNKNOWN) or self.busbw_gbps is None


@dataclass(frozen=True)
class NcclSeries:
    node: str
    points: tuple[NcclPoint, ...]
    floor_gbps: float | None = None


@dataclass
class NodeReport:
    name: str
    state: str
    profile: str
    serial: str | None
    golden: bool
    reasons: tuple[str, ...]
    stages: dict[str, StageStatus]  # every stage in the report's columns
    required: tuple[str, ...]
    rows: list[Any] = field(default_factory=list)  # latest result of every check


@dataclass
class RackReport:
    rack: str
    made_at: datetime
    store: str
    stages: tuple[str, ...]
    nodes: list[NodeReport]
    ib: list[IbPortBar]
    nccl: list[NcclSeries]
    # result id -> its raw output, read from the store for the problems alone (reports show the
    # evidence of what failed, warned or was unknown; a clean PASS's stays in the store)
    evidence: dict[int, str] = field(default_factory=dict)
    # (node, port, why) of the IB ports whose check measured nothing (the heat map draws them grey)
    ib_missing: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def golden(self) -> list[NodeReport]:
        return [n for n in self.nodes if n.golden]

    @cached_property
    def problems(self) -> list[tuple[NodeReport, Any]]:
        """(node, result) for every latest result that is not a clean PASS, worst first."""
        not_clean = frozenset(Verdict) - {Verdict.PASS}
        out = [(n, r) for n in self.nodes for r in n.rows if r.verdict in not_clean]
        return sorted(
            out, key=lambda nr: (-Verdict(nr[1].verdict).rank, nr[0].name, nr[1].stage, nr[1].check)
        )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _drawn_row(rows: Sequence[Any], chart: str) -> Any | None:
    """The latest result of the group stage whose report section draws ``chart``, if any."""
    stage = drawn_as(chart)
    return None if stage is None else next((r for r in rows if stage.owns(r.stage, r.check)), None)


def _ib_ports(rows: Sequence[Any]) -> dict[str, Any]:
    """The latest ib/ib_bandwidth result's metrics per port (the stage drawn as PORT_CHART):
    {port: {"gbps": ...}} (also accepted under a "ports" key); anything else in the metrics is
    ignored."""
    row = _drawn_row(rows, PORT_CHART)
    if row is None or not isinstance(row.metrics, dict):
        return {}
    ports = row.metrics.get("ports") if isinstance(row.metrics.get("ports"), dict) else row.metrics
    return {str(p): v for p, v in ports.items() if isinstance(v, dict)}


def ib_unmeasured(node: str, rows: Sequence[Any]) -> list[tuple[str, str, str]]:
    """(node, port, why) of the ports the ib_bandwidth check judged without a figure."""
    return [
        (node, port, " ".join(str(v.get(k)) for k in ("verdict", "status") if v.get(k)) or "no figure")
        for port, v in sorted(_ib_ports(rows).items())
        if _number(v.get("gbps")) is None and v.get("verdict")
    ]


def ib_bars(node: str, rows: Sequence[Any], floor: float | None) -> list[IbPortBar]:
    """Per-port bandwidth from the latest ib/ib_bandwidth result (ports without a figure left out)."""
    bars = []
    for port, value in sorted(_ib_ports(rows).items()):
        if _number(value.get("gbps")) is None:
            continue
        bars.append(
            IbPortBar(
                node,
                str(port),
                _number(value["gbps"]) or 0.0,
                str(value.get("partner") or ""),
                _number(value.get("floor_gbps")) or floor,
                str(value.get("verdict") or ""),
            )
        )
    return bars


def nccl_series(node: str, rows: Sequence[Any], floor: float | None) -> NcclSeries | None:
    """The bus bandwidth of each iteration of the latest nccl/nccl_soak result (the stage drawn
    as SOAK_CHART), and the floor it was judged against."""
    row = _drawn_row(rows, SOAK_CHART)
    if row is None or not isinstance(row.metrics, dict):
        return None
    points = []
    for i, it in enumerate(row.metrics.get("iterations") or []):
        if not isinstance(it, dict):
            continue
        index = it.get("index")
        points.append(
            NcclPoint(
                int(index) if isinstance(index, int) else i,
                _number(it.get("busbw_gbps")),
                int(it.get("wrong") or 0) if isinstance(it.get("wrong"), (int, float)) else 0,
                _number(it.get("seconds")),
                str(it.get("verdict") or ""),
            )
        )
    if not points:
        return None
    # The floor the soak was judged against (a `--set` override included), else the profile's.
    judged_floor = _number(row.metrics.get("floor_gbps"))
    return NcclSeries(
        node,
        tuple(sorted(points, key=lambda p: p.index)),
        judged_floor if judged_floor is not None else floor,
    )


def _floor(fact: NodeFacts, chart: str) -> float | None:
    """The floor the stage drawn as ``chart`` holds this node's profile to (None: none known)."""
    stage = drawn_as(chart)
    return None if stage is None or fact.profile is None else stage.report_floor(fact.profile)


def _stages(stages: Sequence[str], rows: Sequence[Any], decision: Decision) -> dict[str, StageStatus]:
    """Every column's status: the judged stages as the decision has them, the rest from the rows."""
    if all(s in decision.stages for s in stages):
        return {s: decision.stages[s] for s in stages}
    by_stage = rows_by_stage(rows)
    return {s: decision.stages.get(s) or stage_status(s, by_stage.get(s, ())) for s in stages}


def build_report(
    rack: str,
    judged: Sequence[tuple[NodeFacts, Any, Decision]],
    made_at: datetime,
    store: str,
) -> RackReport:
    """The report of judged nodes (pure)."""
    seen = {r.stage for f, _, _ in judged for r in f.rows}
    stages = tuple(STAGE_ORDER) + tuple(sorted(seen - set(STAGE_ORDER)))
    nodes, ib, nccl, missing = [], [], [], []
    for fact, rules, decision in judged:
        node = fact.node
        nodes.append(
            NodeReport(
                fact.name,
                fact.state,
                node.profile if node is not None else (fact.profile.name if fact.profile else "-"),
                node.serial if node is not None else None,
                decision.golden,
                decision.reasons,
                _stages(stages, fact.rows, decision),
                tuple(rules.stages),
                list(fact.rows),
            )
        )
        ib += ib_bars(fact.name, fact.rows, _floor(fact, PORT_CHART))
        missing += ib_unmeasured(fact.name, fact.rows)
        series = nccl_series(fact.name, fact.rows, _floor(fact, SOAK_CHART))
        if series is not None:
            nccl.append(series)
    return RackReport(rack, made_at, store, stages, nodes, ib, nccl, ib_missing=missing)


def collect(
    store: Any,
    rack: Any,
    now: datetime,
    max_age: timedelta | None = None,
    stages: Sequence[str] | None = None,
) -> RackReport:
    """Read the rack's nodes and results from the store and judge them (no state changes)."""
    from bringup.fleet.store import redact_url

    with collector_paused():
        judged = decide(gather(store, rack, evidence=()), now, max_age, stages)
        report = build_report(rack.name, judged, now, redact_url(store.url))
        shown = [r for _, r in report.problems[:EVIDENCE_SHOWN]]
        texts = store.evidence_of(shown)
        report.evidence = {r.id: texts.get(r.id, "") for r in shown}  # "": the result kept none
    return report


def clip_evidence(text: str | None, limit: int = EVIDENCE_LIMIT) -> tuple[str, bool]:
    """The evidence's last ``limit`` characters (tools print the verdict last) and whether it was cut."""
    text = text or ""
    if len(text) <= limit:
        return text, False
    return text[-limit:], True
