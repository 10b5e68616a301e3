"""`burnin accept` as one call: a delivery's nodes burnt in, soaked, compared with the order and
decided, with the reports and RMA bundles written; or, for a delivery already decided, its
rejected nodes tested again.

``accept_delivery`` works under an ``accept`` run (no claims of its own: each burn-in run it
starts claims its nodes) and keeps all of its state in the fleet store (burnin/accept/ledger.py),
so the same command after a crash or a kill continues the acceptance instead of starting over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bringup.core.errors import UserError
from bringup.fleet.lifecycle import State, Step, may_start, parse_state
from bringup.fleet.models import utcnow
from bringup.fleet.runs import run_ledger, sweep_abandoned
from bringup.fleet.select import select
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Note, Transition, states_of, transition_many
from bringup.inventory.delivery import Delivery, load_delivery
from bringup.ssh.fanout import DEFAULT_CONCURRENCY
from burnin.accept import ledger
from burnin.accept.decide import ACCEPTED, REJECTED, NodeDecision, NodeEvidence, decide_delivery, decide_node
from burnin.accept.order_check import conformance_of, delivery_problems
from burnin.accept.outcome import (
    AcceptanceResult,
    ConformanceRow,
    HistoryEntry,
    IterationSummary,
    NodeFacts,
    delivery_roster,
)
from burnin.accept.report import write_outputs
from burnin.accept.soak import SoakPlan, failed_nodes, run_soak, still_in
from burnin.plan.partners import Candidate, choose_partners
from burnin.run.session import Progress, RackRunRequest, run_rack
from burnin.stages import is_group_stage


class NothingToTest(UserError):
    """The delivery was decided and none of its rejected nodes can be tested again now."""

    def __init__(self, message: str, accepted: bool):
        super().__init__(message)
        self.accepted = accepted


class AcceptanceRunning(UserError):
    """Another controller is running this acceptance now."""


@dataclass(frozen=True)
class AcceptRequest:
    rack: str
    delivery: str  # a name under inventories/deliveries/ or a path
    soak_s: float | None = None  # --soak; None: the order's soak
    overrides: Sequence[str] = ()  # --set KEY=VALUE for the burn-in stages
    concurrency: int = DEFAULT_CONCURRENCY
    out_dir: Path | None = None  # where the reports and bundles go (None: not written)


@dataclass
class AcceptProgress:
    on_line: Callable[[str], None] | None = None  # what the acceptance is doing now
    burnin: Progress | None = None  # the burn-in runs' own progress

    def line(self, text: str) -> None:
        if self.on_line is not None:
            self.on_line(text)


@dataclass(frozen=True)
class AcceptPlan:
    acceptance: int | None  # None: a new acceptance (its id is its first run's)
    nodes: tuple[str, ...]
    soak_s: float
    redelivery_of: int | None
    waiting: dict[str, str]
    partners: tuple[str, ...] = ()  # proven nodes beside the tested ones in the group stages
    notes: tuple[str, ...] = ()  # a profile short of partners


_WAIT_HINT = (
    "still failed: once the vendor has fixed it, `bringup nodes mark-repaired {node}` and discover it again"
)


def plan_acceptance(
    store: FleetStore, request: AcceptRequest, delivery: Delivery, hosts: Sequence[str]
) -> AcceptPlan:
    """Continue an unfinished acceptance, re-test the rejected nodes of a decided one, or start."""
    sweep_abandoned(store)  # a controller that died leaves its run running until this
    history = ledger.acceptances(store, request.rack, delivery.name)
    if history and history[-1].running is not None:
        raise AcceptanceRunning(
            f"acceptance #{history[-1].id} of delivery {delivery.name} on rack {request.rack} is running now "
            f"(run {history[-1].running}: `burnin runs`); wait for it, or stop it with `burnin runs abort "
            f"{history[-1].running}` and run this again to continue it"
        )
    soak_s = request.soak_s if request.soak_s is not None else float(delivery.acceptance.soak)
    if history and not history[-1].complete:
        last = history[-1]
        return _with_partners(
            store,
            delivery,
            request.rack,
            hosts,
            AcceptPlan(last.id, last.nodes, last.soak_s, last.redelivery_of, {}),
        )
    if not history:
        return _with_partners(
            store, delivery, request.rack, hosts, AcceptPlan(None, tuple(hosts), soak_s, None, {})
        )
    latest = {d.node: d for d in ledger.decisions(store, request.rack, delivery.name)}
    rejected = sorted(n for n, d in latest.items() if d.decision == REJECTED and n in hosts)
    untested = [h for h in hosts if h not in latest]  # joined the rack after the last acceptance
    ready, waiting = [], {}
    for name in rejected:
        state = parse_state(store.get_node(name).state)
        if may_start(Step.BURNIN, state):
            ready.append(name)
        else:
            waiting[name] = _WAIT_HINT.format(node=name) if state is State.FAILED else f"{state.value}"
    todo = ready + untested
    if todo:
        return _with_partners(
            store,
            delivery,
            request.rack,
            hosts,
            AcceptPlan(None, tuple(todo), soak_s, history[-1].id, waiting),
        )
    if waiting:
        lines = "; ".join(f"{n}: {why}" for n, why in waiting.items())
        raise NothingToTest(
            f"delivery {delivery.name}: no rejected node can be tested again ({lines})", False
        )
    when = history[-1].finished_at.date().isoformat() if history[-1].finished_at else "?"
    raise NothingToTest(
        f"delivery {delivery.name} on rack {request.rack}: every node was accepted "
        f"(acceptance #{history[-1].id}, {when}); nothing to test again",
        True,
    )


_PARTNER = "accepted or golden partner"


def _with_partners(
    store: FleetStore, delivery: Delivery, rack: str, hosts: Sequence[str], plan: AcceptPlan
) -> AcceptPlan:
    """The plan with the partners its group stages need (burnin/plan/partners.py, as the
    nightly's): for a re-delivery, ``partner_count`` per profile of the nodes tested; for a first
    acceptance, only for a profile with a single node to test (the others meet each other).
    Candidates: the delivery's accepted nodes of that profile (still in burnin or golden), then
    the rack's golden nodes. A node whose profile has no node to meet in the group stages, even
    with the partners, is not tested: it waits, neither tested alone nor rejected."""
    group = [s for s in (*delivery.acceptance.stages, *delivery.acceptance.soak_stages) if is_group_stage(s)]
    if not group:
        return plan
    nodes = {n.name: n for n in store.list_nodes(rack=rack)}
    profile = {name: nodes[name].profile if name in nodes else "" for name in hosts}
    tested = [Candidate(n, profile.get(n, "")) for n in plan.nodes]
    counts = Counter(t.profile for t in tested)
    if plan.redelivery_of is None:
        tested = [t for t in tested if counts[t.profile] < 2]  # the others meet each other
    if not tested:
        return plan
    latest = {d.node: d.decision for d in ledger.decisions(store, rack, delivery.name)}
    proven = (State.BURNIN.value, State.GOLDEN.value)
    accepted = [n for n in hosts if latest.get(n) == ACCEPTED and n in nodes and nodes[n].state in proven]
    golden = [n for n in hosts if n in nodes and nodes[n].state == State.GOLDEN.value and n not in accepted]
    candidates = [Candidate(n, profile[n]) for n in [*accepted, *golden] if n not in plan.nodes]
    choice = choose_partners(tested, candidates, noun=_PARTNER)
    alone = {p for p, (got, _want) in choice.short.items() if got + counts[p] < 2}
    waiting = dict(plan.waiting)
    for t in tested:
        if t.profile in alone:
            waiting[t.name] = (
                f"too few partners: the group stages ({', '.join(dict.fromkeys(group))}) need another "
                f"node of profile {t.profile or '-'}, and no accepted node of the delivery nor golden "
                "node of the rack is free; it waits (not rejected) until one is"
            )
    todo = tuple(n for n in plan.nodes if n not in waiting)
    if not todo:
        lines = "; ".join(f"{n}: {why}" for n, why in waiting.items())
        raise NothingToTest(f"delivery {delivery.name}: no node can be tested now ({lines})", False)
    notes = tuple(line for p, line in zip(choice.short, choice.notes, strict=True) if p not in alone)
    return replace(plan, nodes=todo, waiting=waiting, partners=tuple(choice.chosen), notes=notes)


def accept_delivery(
    store: FleetStore, inventory_dir: Path, request: AcceptRequest, progress: AcceptProgress | None = None
) -> AcceptanceResult:
    """Accept (or reject) the delivery's nodes on the rack; see the module docstring."""
    progress = progress or AcceptProgress()
    delivery = load_delivery(request.delivery, inventory_dir)
    selection = select(store, request.rack, inventory_dir, None, Step.DISCOVER)
    hosts = [h.name for h in selection.hosts]
    plan = plan_acceptance(store, request, delivery, hosts)
    stages = tuple(delivery.acceptance.stages)
    soak_stages = tuple(delivery.acceptance.soak_stages)
    params = {
        "delivery": delivery.name,
        "acceptance": plan.acceptance,
        "nodes": list(plan.nodes),
        "soak_s": plan.soak_s,
        "redelivery_of": plan.redelivery_of,
        "stages": list(stages),
        "soak_stages": list(soak_stages),
    }
    with run_ledger(store, ledger.ACCEPT_KIND, request.rack, params=params) as run:
        acceptance = plan.acceptance or run.id
        record = next(a for a in ledger.acceptances(store, request.rack, delivery.name) if a.id == acceptance)
        if plan.acceptance:
            progress.line(
                f"continuing acceptance #{acceptance} (started {record.started_at:%Y-%m-%d %H:%M} UTC, "
                f"soak {plan.soak_s:.0f} s as it began)"
            )
        for line in plan.notes:
            progress.line(line)
        if plan.partners:
            progress.line(f"group stages beside {len(plan.partners)} partner(s): {', '.join(plan.partners)}")
        skipped = _burn_in(store, inventory_dir, request, acceptance, plan, stages, progress)
        soak = SoakPlan(record.started_at, plan.soak_s, soak_stages)
        _soak(store, inventory_dir, request, acceptance, plan, soak, progress)
        result = _decide(store, delivery, request.rack, hosts, acceptance, record, plan, skipped, run.id)
        if request.out_dir is not None:
            result.outputs = [str(p) for p in write_outputs(result, request.out_dir)]
        run.finish("done")
    return result


def _tags(acceptance: int, iteration: int) -> dict[str, int]:
    return {"acceptance": acceptance, "iteration": iteration}


def _burn_in(
    store: FleetStore,
    inventory_dir: Path,
    request: AcceptRequest,
    acceptance: int,
    plan: AcceptPlan,
    stages: Sequence[str],
    progress: AcceptProgress,
) -> dict[str, str]:
    """Iteration 0, the order's stages, unless a finished run already did it; the nodes the gate
    refused, with why."""
    if any(i.iteration == 0 and i.finished for i in ledger.iterations(store, request.rack, acceptance)):
        return {}
    progress.line(f"burn-in: stages {', '.join(stages)} on {len(plan.nodes)} node(s)")
    run = RackRunRequest(
        request.rack,
        list(stages),
        list(plan.nodes),
        request.concurrency,
        overrides=request.overrides,
        tags=_tags(acceptance, 0),
        partners=plan.partners,
        single_keep_going=True,  # every finding for the vendor, and the pcie stage's PCI tree
    )
    outcomes = run_rack(store, inventory_dir, run, progress.burnin)
    return {o.node: o.skipped for o in outcomes if o.skipped}


def _soak(
    store: FleetStore,
    inventory_dir: Path,
    request: AcceptRequest,
    acceptance: int,
    accept_plan: AcceptPlan,
    plan: SoakPlan,
    progress: AcceptProgress,
) -> None:
    nodes = accept_plan.nodes

    def load() -> tuple[list[ledger.IterationRecord], list[str]]:
        done = ledger.iterations(store, request.rack, acceptance)
        rows = ledger.results_of_runs(store, [i.run_id for i in done], not_passing=True)
        states = {n: parse_state(store.get_node(n).state) for n in nodes}
        out = [n for n, s in states.items() if not may_start(Step.BURNIN, s)]
        tested_first = ledger.stages_of_runs(store, [i.run_id for i in done if i.iteration == 0])
        never = [n for n in nodes if n not in tested_first]  # refused or unreachable at iteration 0
        return done, still_in(nodes, rows, [*out, *never])

    def one(number: int, names: list[str]) -> None:
        run = RackRunRequest(
            request.rack,
            list(plan.stages),
            names,
            request.concurrency,
            overrides=request.overrides,
            tags=_tags(acceptance, number),
            partners=accept_plan.partners,
        )
        run_rack(store, inventory_dir, run, progress.burnin)

    def told(number: int, names: list[str]) -> None:
        left = max(0.0, (plan.end - utcnow()).total_seconds())
        progress.line(
            f"soak iteration {number}: {', '.join(plan.stages)} on {len(names)} node(s), {left:.0f} s left"
        )

    run_soak(plan, load, one, utcnow, told)


def _decide(
    store: FleetStore,
    delivery: Delivery,
    rack: str,
    hosts: Sequence[str],
    acceptance: int,
    record: ledger.AcceptanceRecord,
    plan: AcceptPlan,
    skipped: dict[str, str],
    run_id: int,
) -> AcceptanceResult:
    iterations = ledger.iterations(store, rack, acceptance)
    iteration_of = {i.run_id: i.iteration for i in iterations}
    tested = set(plan.nodes)  # the partners' results in these runs judge nobody
    rows = [
        r for r in ledger.results_of_runs(store, list(iteration_of), not_passing=True) if r.node in tested
    ]
    first_failed = failed_nodes(rows)
    by_node: dict[str, list[ledger.ResultRow]] = {}
    for row in rows:
        by_node.setdefault(row.node, []).append(row)
    first_stages = ledger.stages_of_runs(store, [i.run_id for i in iterations if i.iteration == 0])
    latest = store.latest_results_of_rack(rack)
    decisions: list[NodeDecision] = []
    conformance: list[ConformanceRow] = []
    facts: dict[str, NodeFacts] = {}
    for name in plan.nodes:
        node = store.get_node(name)
        reasons, parts = conformance_of(delivery, node, latest.get(name, []))
        conformance.extend(parts)
        evidence = NodeEvidence(
            name,
            node.serial,
            reasons,
            skipped.get(name, ""),
            by_node.get(name, []),
            tuple(delivery.acceptance.stages),
            first_stages.get(name, frozenset()),
        )
        decisions.append(decide_node(evidence, iteration_of))
    record_decisions(store, delivery.name, acceptance, decisions, run_id)
    for name in plan.nodes:
        node = store.get_node(name)
        facts[name] = NodeFacts(name, node.serial, node.state, node.profile, dict(node.hardware or {}))
    history = [
        HistoryEntry(d.node, d.acceptance, d.decision, d.reasons, d.time)
        for d in ledger.decisions(store, rack, delivery.name)
    ]
    last_word = {h.node: h.decision for h in history}
    records = [store.get_node(h) for h in hosts]
    problems = delivery_problems(delivery, records)
    roster = delivery_roster(
        tuple(delivery.nodes.serials or ()), [(n.name, n.serial) for n in records], history, plan.waiting
    )
    wanted = [r.result_id for d in decisions if not d.accepted for r in d.reasons if r.result_id is not None]
    summaries = tuple(
        IterationSummary(
            i.iteration,
            i.run_id,
            i.status,
            i.started_at,
            i.finished_at,
            i.nodes,
            tuple(sorted(n for n, run in first_failed.items() if run == i.run_id)),
        )
        for i in iterations
    )
    return AcceptanceResult(
        delivery=delivery.name,
        description=delivery.description,
        rack=rack,
        acceptance_id=acceptance,
        started_at=record.started_at,
        finished_at=utcnow(),
        soak_s=plan.soak_s,
        stages=tuple(delivery.acceptance.stages),
        soak_stages=tuple(delivery.acceptance.soak_stages),
        redelivery_of=plan.redelivery_of,
        tested=plan.nodes,
        decisions=tuple(decisions),
        delivery_decision=decide_delivery(
            last_word, delivery.nodes.count, delivery.acceptance.min_accepted_fraction, problems
        ),
        conformance=tuple(conformance),
        iterations=summaries,
        history=tuple(history),
        nodes=facts,
        evidence=ledger.evidence_by_id(store, wanted),
        waiting=dict(plan.waiting),
        roster=roster,
    )


def record_decisions(
    store: FleetStore, delivery: str, acceptance: int, decisions: Sequence[NodeDecision], run_id: int
) -> None:
    """Each decision as its node's event, and each rejected node out of the way to golden
    (failed), all in one transaction. A rejected node already failed or retired is not moved; one
    in repair (or not yet discovered) stays where it is: the lifecycle refuses its move, and its
    decision event says rejected."""
    states = states_of(store, [d.node for d in decisions])
    events, moves = [], []
    for decision in decisions:
        lines = [r.line() for r in decision.reasons]
        what = f"delivery {delivery}, acceptance #{acceptance}: {decision.decision}"
        details = {
            "delivery": delivery,
            "acceptance": acceptance,
            "decision": decision.decision,
            "reasons": lines,
        }
        events.append(
            Note(
                decision.node,
                ledger.DECISION_EVENT,
                what + (f": {lines[0]}" if lines else ""),
                run_id,
                details,
            )
        )
        if not decision.accepted and states.get(decision.node) not in (
            State.FAILED.value,
            State.RETIRED.value,
        ):
            moves.append(Transition(decision.node, State.FAILED, what + f": {lines[0]}", run_id))
    transition_many(store, moves, notes=events)  # a refused move is returned, not raised: ignored
