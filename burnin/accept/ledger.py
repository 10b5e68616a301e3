"""Where an acceptance lives in the fleet store: runs and events, no table of its own.

An acceptance is a chain of ``accept`` runs (one per invocation of ``burnin accept``; the first
one's id names the acceptance, later ones carry it in ``params["acceptance"]``), the burn-in
runs it started (``kind="burnin"``, ``params["acceptance"]`` and ``params["iteration"]``:
iteration 0 runs the order's stages, 1.. are the soak's), and at its end one ``acceptance`` event
per node with the decision. An acceptance is complete once one of its ``accept`` runs ended
``done``; until then, running the same command again continues it (iterations whose burn-in run
did not finish are run again under the same number).

Reads only: the orchestration (burnin/accept/run.py) writes through the run ledger and the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from bringup.fleet.models import CheckResult, Event, Node, Run
from bringup.fleet.store import FleetStore
from burnin.accept.decide import ResultRow

ACCEPT_KIND = "accept"
DECISION_EVENT = "acceptance"
# A burn-in run that ended one of these ways ran its iteration to the end (its nodes judged).
FINISHED = frozenset({"done", "failed"})


@dataclass(frozen=True)
class AcceptanceRecord:
    """One acceptance of a delivery on a rack, as its ``accept`` runs recorded it."""

    id: int  # the first accept run's id
    delivery: str
    rack: str
    started_at: datetime
    soak_s: float
    nodes: tuple[str, ...]  # the nodes it tests
    redelivery_of: int | None  # the acceptance whose rejected nodes it re-tests
    complete: bool
    finished_at: datetime | None
    run_ids: tuple[int, ...]  # its accept runs, oldest first
    running: int | None = None  # one of them still running (a live controller), if any


@dataclass(frozen=True)
class IterationRecord:
    """One burn-in run an acceptance started."""

    iteration: int  # 0: the order's stages; 1..: soak iterations
    run_id: int
    status: str
    started_at: datetime
    finished_at: datetime | None
    nodes: tuple[str, ...]

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


@dataclass(frozen=True)
class DecisionRecord:
    """A node's recorded decision (its ``acceptance`` event)."""

    node: str
    acceptance: int
    decision: str  # accepted | rejected
    reasons: tuple[str, ...]
    time: datetime


def acceptances(store: FleetStore, rack: str, delivery: str) -> list[AcceptanceRecord]:
    """Every acceptance of ``delivery`` on ``rack``, oldest first."""
    with store.reading() as s:
        runs = list(
            s.execute(select(Run).where(Run.kind == ACCEPT_KIND, Run.rack == rack).order_by(Run.id)).scalars()
        )
    chains: dict[int, list[Run]] = {}
    for run in runs:
        params = run.params or {}
        if params.get("delivery") != delivery:
            continue
        chains.setdefault(int(params.get("acceptance") or run.id), []).append(run)
    out = []
    for root_id, chain in sorted(chains.items()):
        first = chain[0]
        params = first.params or {}
        done = [r for r in chain if r.status == "done"]
        out.append(
            AcceptanceRecord(
                id=root_id,
                delivery=delivery,
                rack=rack,
                started_at=first.started_at,
                soak_s=float(params.get("soak_s") or 0.0),
                nodes=tuple(str(n) for n in params.get("nodes", ())),
                redelivery_of=params.get("redelivery_of"),
                complete=bool(done),
                finished_at=done[0].finished_at if done else None,
                run_ids=tuple(r.id for r in chain),
                running=next((r.id for r in chain if r.status == "running"), None),
            )
        )
    return out


def iterations(store: FleetStore, rack: str, acceptance: int) -> list[IterationRecord]:
    """The burn-in runs acceptance ``acceptance`` started, oldest first."""
    with store.reading() as s:
        runs = list(
            s.execute(select(Run).where(Run.kind == "burnin", Run.rack == rack).order_by(Run.id)).scalars()
        )
    out = []
    for run in runs:
        params = run.params or {}
        if params.get("acceptance") != acceptance or params.get("iteration") is None:
            continue
        out.append(
            IterationRecord(
                int(params["iteration"]),
                run.id,
                run.status,
                run.started_at,
                run.finished_at,
                tuple(str(n) for n in params.get("nodes", ())),
            )
        )
    return out


def results_of_runs(
    store: FleetStore, run_ids: Sequence[int], *, not_passing: bool = False
) -> list[ResultRow]:
    """Every check result of these runs (``not_passing``: all but the PASSes, which a 72-hour
    soak of a large delivery has by the hundred thousand), oldest first, without evidence."""
    if not run_ids:
        return []
    stmt = (
        select(CheckResult, Node.name)
        .join(Node, Node.id == CheckResult.node_id)
        .where(CheckResult.run_id.in_(list(run_ids)))
        .order_by(CheckResult.id)
    )
    if not_passing:
        stmt = stmt.where(CheckResult.verdict != "PASS")
    with store.reading() as s:
        rows = s.execute(stmt).all()
    return [
        ResultRow(
            r.id,
            name,
            r.run_id,
            r.stage,
            r.check,
            r.verdict,
            tuple(r.findings or ()),
            dict(r.metrics or {}),
            r.time,
            r.evidence_id is not None,
        )
        for r, name in rows
    ]


def stages_of_runs(store: FleetStore, run_ids: Sequence[int]) -> dict[str, frozenset[str]]:
    """Node -> the stages it has a result of in these runs."""
    if not run_ids:
        return {}
    with store.reading() as s:
        rows = s.execute(
            select(Node.name, CheckResult.stage)
            .join(Node, Node.id == CheckResult.node_id)
            .where(CheckResult.run_id.in_(list(run_ids)))
            .distinct()
        ).all()
    out: dict[str, set[str]] = {}
    for name, stage in rows:
        out.setdefault(name, set()).add(stage)
    return {name: frozenset(stages) for name, stages in out.items()}


def evidence_by_id(store: FleetStore, result_ids: Sequence[int]) -> dict[int, str]:
    """Result id -> its raw output (or the note that it was pruned)."""
    if not result_ids:
        return {}
    with store.reading() as s:
        results = list(s.execute(select(CheckResult).where(CheckResult.id.in_(list(result_ids)))).scalars())
    return store.evidence_of(results)


def decisions(store: FleetStore, rack: str, delivery: str) -> list[DecisionRecord]:
    """Every decision recorded for ``delivery`` on the rack's nodes, oldest first; one per node
    and acceptance (an acceptance that crashed after deciding decides again when continued: the
    last word stands)."""
    with store.reading() as s:
        rows = s.execute(
            select(Event, Node.name)
            .join(Node, Node.id == Event.node_id)
            .where(Node.rack == rack, Event.kind == DECISION_EVENT)
            .order_by(Event.id)
        ).all()
    out: dict[tuple[str, int], DecisionRecord] = {}
    for ev, name in rows:
        details = ev.details or {}
        if details.get("delivery") != delivery:
            continue
        acceptance = int(details.get("acceptance") or 0)
        out.pop((name, acceptance), None)  # re-inserted last: the order is the newest word's
        out[(name, acceptance)] = DecisionRecord(
            name,
            acceptance,
            str(details.get("decision", "")),
            tuple(str(r) for r in details.get("reasons", ())),
            ev.time,
        )
    return list(out.values())
