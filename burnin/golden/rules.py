"""Golden selection: which nodes a training job can trust, and the lifecycle moves that follow.

A node is golden when, for every required stage (by default all of STAGE_ORDER; ``ib`` is
dropped for profiles without HCAs), the stage's latest run passed (every result PASS or WARN,
none UNKNOWN), every one of those results is younger than the maximum age, and the node is not
retired. "Latest run" is per stage: a rack may run ``preflight,gpu,pcie`` and ``ib,nccl`` as two
commands; the maximum age keeps the mix honest.

The rules (``judge``, ``plan_move``) are pure. ``gather`` reads the store and the inventory,
``apply`` records the moves: ``burnin -> golden`` with the run that justified it, and out of
``golden`` when a node stops qualifying (``failed`` after a later failure, ``configured`` when
its results aged out or a required stage has no passing result).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from bringup.core.errors import BadInput
from bringup.fleet.lifecycle import State
from bringup.fleet.models import utcnow
from bringup.fleet.reads import last_transitions
from bringup.fleet.runs import live_holders
from bringup.fleet.transitions import Transition, transition_many
from bringup.profiles.load import Profile
from burnin.result import PASSING, Verdict, verdict_of, worst
from burnin.stages import STAGE_ORDER, parse_stages
from burnin.stages.group import applies

DEFAULT_MAX_AGE = timedelta(days=7)
# Only these states may be (or become) golden; every other one is a reason on its own.
ELIGIBLE_STATES = (State.BURNIN.value, State.GOLDEN.value)
# Node.hardware key of a lemon flag (`burnin lemons --apply`): out of the golden list until an
# operator clears it (`burnin clear-lemon`); see burnin/history/fleet.py.
LEMON_FLAG = "lemon"


class ResultRow(Protocol):
    """What the selection reads of a stored check result (bringup.fleet.models.CheckResult)."""

    stage: str
    check: str
    verdict: str
    time: datetime
    run_id: int | None
    metrics: dict[str, Any]
    findings: list[dict[str, Any]]


# ---- configuration ---------------------------------------------------------------------------

_AGE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([wdhms]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1, "": 86400}


def parse_age(text: str | int | float) -> timedelta:
    """'7d', '36h', '90m', '1w', '3600s', or a bare number of days -> timedelta (must be > 0)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), "d"
    else:
        m = _AGE_RE.match(str(text))
        if not m:
            raise ValueError(f"cannot read the age {text!r}: use a number and a unit, e.g. 7d, 36h, 90m")
        value, unit = float(m.group(1)), m.group(2).lower()
    if value <= 0:
        raise ValueError(f"a maximum age must be positive, got {text!r}")
    return timedelta(seconds=value * _UNIT_SECONDS[unit])


def format_age(age: timedelta) -> str:
    """A maximum age as people write it: '7 d', '36 h', '90 min'."""
    seconds = age.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} d"
    return f"{seconds:g} s"


def required_stages(profile: Profile | None, override: Sequence[str] | None = None) -> tuple[str, ...]:
    """The stages a node must pass: ``override`` as given, else STAGE_ORDER less the group
    stages that do not apply to its profile (burnin.stages.group: ``ib`` for a profile without
    InfiniBand HCAs)."""
    if override:
        return tuple(s for s in STAGE_ORDER if s in override) + tuple(
            s for s in override if s not in STAGE_ORDER
        )
    if profile is not None:
        return tuple(s for s in STAGE_ORDER if applies(s, profile))
    return STAGE_ORDER


def rules_from_vars(
    host_vars: Mapping[str, Any],
    profile: Profile | None,
    max_age: timedelta | None = None,
    stages: Sequence[str] | None = None,
) -> GoldenRules:
    """The rules for one node: command-line values win, then the inventory's ``golden_max_age_days``
    and ``golden_stages`` (list or comma-separated), then the defaults."""
    try:
        if max_age is None and host_vars.get("golden_max_age_days") not in (None, ""):
            max_age = parse_age(host_vars["golden_max_age_days"])
        if not stages and host_vars.get("golden_stages"):
            raw = host_vars["golden_stages"]
            stages = parse_stages(raw if isinstance(raw, str) else [str(s) for s in raw])
    except ValueError as exc:
        raise BadInput(f"inventory variable golden_max_age_days or golden_stages: {exc}") from None
    return GoldenRules(required_stages(profile, stages), max_age or DEFAULT_MAX_AGE)


# ---- the pure rules ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldenRules:
    stages: tuple[str, ...] = STAGE_ORDER
    max_age: timedelta = DEFAULT_MAX_AGE


@dataclass(frozen=True)
class StageStatus:
    """A stage's latest run on one node."""

    stage: str
    verdict: str | None  # worst verdict of that run's results; None: the stage never ran
    run_id: int | None = None
    time: datetime | None = None  # the oldest result of that run (what ages out first)
    results: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Decision:
    node: str
    state: str
    golden: bool
    reasons: tuple[str, ...]  # why not golden (empty when golden)
    stages: dict[str, StageStatus] = field(default_factory=dict)
    run_id: int | None = None  # the newest run among the required stages: the one that justified it
    failed: bool = False  # a required stage's latest run FAILED
    aged_out: bool = False

    @property
    def runs(self) -> dict[str, int | None]:
        return {s: st.run_id for s, st in self.stages.items() if st.verdict is not None}

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def worst_verdict(verdicts: Iterable[str]) -> str:
    """The worst of some stored verdicts, as its string (none at all: UNKNOWN)."""
    return worst(verdict_of(v) for v in verdicts).value


def stage_status(stage: str, rows: Iterable[ResultRow]) -> StageStatus:
    """The stage's results from its newest run (rows of older runs of the same stage are ignored)."""
    mine = [r for r in rows if r.stage == stage]
    if not mine:
        return StageStatus(stage, None)
    runs: dict[int | None, list[ResultRow]] = {}
    for r in mine:
        runs.setdefault(r.run_id, []).append(r)
    if len(runs) == 1:  # the usual case, and at 10,000 nodes x 5 stages worth not comparing
        ((run_id, latest),) = runs.items()
    else:  # the newest run: by its newest result, then by run id (ids only grow)
        run_id, latest = max(runs.items(), key=lambda item: (max(r.time for r in item[1]), item[0] or 0))
    latest.sort(key=lambda r: r.check)
    return StageStatus(
        stage,
        worst_verdict({r.verdict for r in latest}),
        run_id,
        min(r.time for r in latest),
        tuple(latest),
    )


def rows_by_stage(rows: Iterable[ResultRow]) -> dict[str, list[ResultRow]]:
    """Rows grouped by stage (a node's 20-odd rows are read once, not once per stage)."""
    out: dict[str, list[ResultRow]] = {}
    for r in rows:
        out.setdefault(r.stage, []).append(r)
    return out


def first_problem(results: Iterable[ResultRow]) -> str:
    """'gpu_stress: GPU 3 HW slowdown under load -> RESEAT' for the worst result of a stage."""
    bad = sorted((r for r in results if r.verdict not in PASSING), key=lambda r: -verdict_of(r.verdict).rank)
    if not bad:
        return ""
    r = bad[0]
    severity = "critical" if r.verdict == Verdict.FAIL else "warning"
    finding = next((f for f in r.findings or [] if f.get("severity") == severity), None)
    finding = finding or next((f for f in r.findings or [] if f.get("severity") != "info"), None)
    if finding:
        return f"{r.check}: {finding.get('message', '')} -> {finding.get('action', '')}"
    why = (r.metrics or {}).get("reason") or "no finding recorded"
    return f"{r.check}: {why}"


def judge(
    node: str,
    state: str,
    rows: Iterable[ResultRow],
    rules: GoldenRules,
    now: datetime,
    *,
    state_reason: str = "",
    in_run: str | None = None,
    lemon: Mapping[str, Any] | None = None,
) -> Decision:
    """Is this node golden now? Every reason it is not, in the order an operator fixes them.

    ``in_run``: the live run that holds the node now (``Holder.what``): a node in burn-in that a
    run is still testing waits for it. A run that ended, however it ended (interrupted, abandoned:
    its results are real), holds nothing, and the latest results decide. ``lemon``: the node's
    lemon flag (``Node.hardware[LEMON_FLAG]``), which keeps it out until an operator clears it.
    """
    rows = list(rows)
    reasons: list[str] = []
    if state == State.RETIRED.value:
        reasons.append("retired")
    elif state not in ELIGIBLE_STATES:
        reasons.append(f"state {state}" + (f" ({state_reason})" if state_reason else ""))
    elif state == State.BURNIN.value and in_run is not None:
        reasons.append(f"in burn-in now: {in_run}")
    if lemon:
        why = lemon.get("evidence", "see burnin lemons")
        reasons.append(f"flagged a lemon ({why}): `burnin clear-lemon` after the fix")
    by_stage = rows_by_stage(rows)
    stages = {s: stage_status(s, by_stage.get(s, ())) for s in rules.stages}
    failed = aged = False
    for st in stages.values():
        if st.verdict is None:
            reasons.append(f"stage {st.stage} never ran")
        elif st.verdict not in PASSING:
            failed = failed or st.verdict == Verdict.FAIL
            reasons.append(f"stage {st.stage} {st.verdict} (run {st.run_id}): {first_problem(st.results)}")
    ran = [st for st in stages.values() if st.time is not None]
    if ran:
        stalest = min(ran, key=lambda st: st.time)
        if now - stalest.time > rules.max_age:
            aged = True
            reasons.append(
                f"results older than {format_age(rules.max_age)} "
                f"(latest {stalest.stage} result {stalest.time.date().isoformat()})"
            )
    run_ids = [st.run_id for st in ran if st.run_id is not None]
    return Decision(
        node,
        state,
        not reasons,
        tuple(reasons),
        stages,
        max(run_ids) if run_ids else None,
        failed,
        aged,
    )


@dataclass(frozen=True)
class Move:
    node: str
    target: State
    reason: str
    run_id: int | None
    details: dict[str, Any]


def plan_move(decision: Decision, rules: GoldenRules) -> Move | None:
    """The lifecycle move the decision calls for, or None."""
    d = decision
    runs = {s: r for s, r in d.runs.items()}
    if d.golden and d.state == State.BURNIN.value:
        when = min(st.time for st in d.stages.values() if st.time is not None)
        return Move(
            d.node,
            State.GOLDEN,
            f"passed stages {','.join(rules.stages)} (run {d.run_id}); "
            f"oldest result {when.isoformat(timespec='seconds')}, max age {format_age(rules.max_age)}",
            d.run_id,
            {"run_id": d.run_id, "runs": runs, "stages": list(rules.stages)},
        )
    if not d.golden and d.state == State.GOLDEN.value:
        target = State.FAILED if d.failed else State.CONFIGURED
        return Move(
            d.node,
            target,
            f"left golden: {d.reason}",
            d.run_id if d.failed else None,
            {"reasons": list(d.reasons), "runs": runs, "stages": list(rules.stages), "aged_out": d.aged_out},
        )
    return None


# ---- the scheduler's view ------------------------------------------------------------------------

# Slurm states in which it starts no new job on a node (sinfo(1), NODE STATE CODES:
# https://slurm.schedmd.com/sinfo.html#SECTION_NODE-STATE-CODES): DOWN, DRAINED/DRAINING (the
# drain flag), FAIL and FAILING ("unavailable for use per system administrator request"), FUTURE
# (not yet in service), INVAL (registered with a configuration it does not have). A not-responding
# node (the "*" suffix) takes no job either.
NOT_RUN_STATES = frozenset({"down", "fail", "failing", "future", "inval"})


class SchedulerNode(Protocol):
    """What the rule reads of a node as the scheduler sees it (burnin.parsers.slurm.SlurmNode)."""

    name: str
    state: str
    drain: bool
    flags: tuple[str, ...]
    reason: str
    user: str

    @property
    def label(self) -> str: ...


def not_run_by_scheduler(view: Iterable[SchedulerNode]) -> dict[str, str]:
    """Node -> why Slurm will start no job on it (drained by anyone, down, failed, not
    responding), with the reason and who set it as Slurm keeps them; nodes it runs are absent."""
    out: dict[str, str] = {}
    for n in view:
        reason = n.reason if n.reason and n.reason.lower() != "none" else ""
        if n.drain:
            who = f" by {n.user}" if n.user else ""
            out[n.name] = f"{n.label} in Slurm{who}: {reason or 'no reason given'}"
        elif n.state in NOT_RUN_STATES or "not_responding" in n.flags:
            out[n.name] = f"{n.label} in Slurm: {reason or 'not responding'}"
    return out


def held_by_scheduler(decision: Decision, why: str | None) -> Decision:
    """A golden decision for a node the scheduler will not run: out of the export, with why. Its
    lifecycle state is not the scheduler's to change: the move is planned from ``decision``
    (``plan_move``), never from this one, so the node stays golden in the store."""
    if not why or not decision.golden:
        return decision
    return replace(decision, golden=False, reasons=(f"not run by the scheduler: {why}",))


# ---- the store edge ----------------------------------------------------------------------------


# The checks whose raw output the exports read (the HCAs' GUIDs and firmware from ibstat).
EVIDENCE_READ = ("ib_ports",)


@dataclass
class NodeFacts:
    """What the selection and the exports read about one node (gathered from store + inventory)."""

    name: str
    node: Any | None  # bringup.fleet.models.Node, None: in the inventory but not enrolled
    profile: Profile | None
    host_vars: dict[str, Any]
    rows: list[Any]  # latest results (CheckResult)
    in_inventory: bool = True
    state_reason: str = ""  # the last transition's reason
    golden_event: Any | None = None  # the transition that made it golden (bringup.fleet.models.Event)
    in_run: str | None = None  # the live run holding it now, described (bringup.fleet.runs.Holder.what)
    # check -> the raw output of its latest result, for the checks the exports read (ib_ports);
    # the rest stays in the store (FleetStore.evidence)
    evidence: dict[str, str] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return self.node.state if self.node is not None else "not enrolled"


def gather(store: Any, rack: Any, evidence: Sequence[str] = EVIDENCE_READ) -> list[NodeFacts]:
    """Every node of the rack (store or inventory) with its latest results, in rack order, and the
    raw output of the ``evidence`` checks' latest results (none: ``()``)."""
    hosts = {h.name: h for h in rack.hosts}
    facts: list[NodeFacts] = []
    seen = set()
    latest = store.latest_results_of_rack(rack.name)  # one query for the rack, no evidence
    history = last_transitions(store, rack.name)  # never a node's whole history
    for node in store.list_nodes(rack=rack.name):
        seen.add(node.name)
        host = hosts.get(node.name)
        profile = rack.profiles.get(host.profile if host else node.profile)
        fact = NodeFacts(
            node.name,
            node,
            profile,
            dict(host.vars) if host else {},
            latest.get(node.name, []),
            in_inventory=host is not None,
        )
        if node.name in history:
            _note_history(fact, *history[node.name])
        facts.append(fact)
    wanted = [(f, r) for f in facts for r in f.rows if r.check in evidence]
    texts = store.evidence_of([r for _, r in wanted]) if wanted else {}
    for fact, row in wanted:
        if row.id in texts and not row.evidence_pruned_at:
            fact.evidence[row.check] = texts[row.id]
    for name, host in hosts.items():
        if name not in seen:
            facts.append(NodeFacts(name, None, rack.profiles.get(host.profile), dict(host.vars), []))
    _mark_in_run(store, facts)
    return facts


def after_moves(store: Any, rack: str, facts: Sequence[NodeFacts], applied: Sequence[Applied]) -> None:
    """The facts as they stand after ``apply``: the rack's node records re-read in one query, and
    each moved node's last transition (and its last to golden) taken from the event just recorded."""
    done = {a.move.node: a.event for a in applied if a.done}
    if not done:
        return
    nodes = {n.name: n for n in store.list_nodes(rack=rack)}
    for fact in facts:
        if fact.name not in done:
            continue
        event = done[fact.name]
        fact.node = nodes.get(fact.name, fact.node)
        fact.in_run = None
        golden_event = event if event.to_state == State.GOLDEN.value else fact.golden_event
        _note_history(fact, event, golden_event)


def _note_history(fact: NodeFacts, last: Any, golden_event: Any | None) -> None:
    """What the selection reads of a node's history: its last transition, its last to golden."""
    fact.state_reason = last.reason
    fact.golden_event = golden_event


def _mark_in_run(store: Any, facts: Sequence[NodeFacts]) -> None:
    """Each node a live run holds now (its claim), with that run described."""
    now = utcnow()
    held = live_holders(store, [f.name for f in facts if f.node is not None])
    for f in facts:
        if f.name in held:
            f.in_run = held[f.name].what(now)


def decide(
    facts: Sequence[NodeFacts],
    now: datetime,
    max_age: timedelta | None = None,
    stages: Sequence[str] | None = None,
) -> list[tuple[NodeFacts, GoldenRules, Decision]]:
    """Judge every node under its own rules (pure over the gathered facts)."""
    out = []
    for f in facts:
        rules = rules_from_vars(f.host_vars, f.profile, max_age, stages)
        if f.node is None:
            decision = Decision(f.name, f.state, False, ("not enrolled in the fleet store",))
        else:
            decision = judge(
                f.name,
                f.state,
                f.rows,
                rules,
                now,
                state_reason=f.state_reason,
                in_run=f.in_run,
                lemon=(f.node.hardware or {}).get(LEMON_FLAG),
            )
            if not f.in_inventory:
                decision = Decision(
                    f.name,
                    f.state,
                    False,
                    (f"not in the inventory of rack {f.node.rack}", *decision.reasons),
                    decision.stages,
                    decision.run_id,
                    decision.failed,
                    decision.aged_out,
                )
        out.append((f, rules, decision))
    return out


@dataclass
class Applied:
    move: Move
    done: bool
    error: str = ""
    event: Any | None = None


def apply(store: Any, moves: Sequence[Move], actor: str | None = None) -> list[Applied]:
    """Record the moves in one transaction (bringup.fleet.transitions). A move another process
    made impossible meanwhile is reported, not raised, and the others are made."""
    batch = [Transition(m.node, m.target, m.reason, m.run_id, m.details) for m in moves]
    return [
        Applied(move, moved.done, moved.error, moved.event)
        for move, moved in zip(moves, transition_many(store, batch, actor=actor), strict=True)
    ]
