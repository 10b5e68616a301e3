"""`burnin nightly`: the scheduled re-test of repaired nodes (docs/in-service.md, "The nightly").

One night of one rack, in order:

1. the rack's nightly lock (``nightly_lock``: a second nightly refuses), then runs whose
   controller is gone are marked abandoned;
2. Slurm's view, the store's states and the inventory's profiles into a plan
   (``nightly_plan.plan_night``): the nodes to test, their golden partners (of each tested
   node's own profile; a profile short of them is a note of the night), and the golden nodes a
   dead nightly left drained (given back now);
3. a ``nightly`` run in the ledger claiming the tested nodes and the partners;
4. out of service without killing work: each is drained with ``bringup nightly run N`` (an
   operator's drain is left as it is), then waited for while jobs still run on it, up to
   ``drain_timeout_s``; one still busy is skipped (an event) and given back. With a reservation
   (the operator's maintenance reservation) nothing is drained before the test, so the night is
   refused before any node is touched unless the reservation covers every node it would hold;
5. burn-in: the single-node stages on the tested nodes, then the group stages (ib, nccl) on the
   tested nodes that passed so far plus the partners: the ib stage pairs them with proven ports,
   the nccl stage has golden nodes beside them, so a repaired node is tested at scale without a
   second suspect in its group. A tested node that passes every stage becomes golden;
6. back to Slurm, whatever happened in 5 (``nightly_plan.return_action``): resumed when golden and
   drained by this project, kept drained with the finding as the reason when failed or not
   proven, an operator's drain left alone;
7. the night's HTML and JUnit reports, one line per node, and ``--notify CMD`` fed the summary
   as JSON on its stdin.

Killed with SIGKILL, a night leaves its drains behind with its run id in the reason: the next
night finds them (its run no longer alive) and re-tests or gives back those nodes (step 2).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select as sql_select

from bringup.core.errors import UserError
from bringup.fleet.models import Run, utcnow
from bringup.fleet.runs import RUNNING, ActiveRun, run_ledger, sweep_abandoned
from bringup.fleet.select import InvalidRack
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Note, states_of
from bringup.inventory.rack import Rack, load_rack
from bringup.profiles.load import apply_overrides
from bringup.ssh.fanout import DEFAULT_CONCURRENCY, target_for_node
from burnin.result import PASSING, Verdict
from burnin.run.session import previous_check_time
from burnin.service import nightly_slurm, slurm
from burnin.service.nightly_idle import DEFAULT_PARTITION, idle_tests
from burnin.service.nightly_lock import nightly_lock
from burnin.service.nightly_moves import ACTOR, back_to_golden, into_burnin, note, write_events
from burnin.service.nightly_plan import (
    NightPlan,
    NodeView,
    Pick,
    Return,
    nightly_reason,
    nightly_run_of,
    outside_reservation,
    plan_idle,
    plan_night,
    return_action,
)
from burnin.service.reasons import DrainOrigin, drain_origin
from burnin.stages import STAGE_ORDER, is_group_stage
from burnin.stages.beside import run_beside_partners
from burnin.stages.jobs import BurninOutcome, NodeJob
from burnin.stages.launch import group_settings
from burnin.stages.runner import BurninRun, record_for

NOTIFY_TIMEOUT_S = 60.0
_PASSED = {v.value for v in PASSING}


class OutsideReservation(UserError):
    """The night would hold nodes its reservation does not cover (it drains nothing inside one)."""

    def __init__(self, reservation: str, nodes: Sequence[str]) -> None:
        self.reservation, self.nodes = reservation, list(nodes)
        super().__init__(
            f"reservation {reservation!r} does not cover {', '.join(sorted(nodes))}, which the night would"
            " test or hold as partners: inside a reservation nothing is drained, so a user's job could"
            " land on them mid-test; add them to the reservation or run without --reservation"
            " (the night then drains them)"
        )


@dataclass(frozen=True)
class NightlyRequest:
    rack: str
    stages: Sequence[str] = STAGE_ORDER
    revalidate_pct: float = 0.0
    partners: int | None = None  # None: one per tested node, at least 2 (nightly_plan.partner_count)
    drain_timeout_s: float = 3600.0
    reservation: str | None = None  # the operator's maintenance reservation: no drain before
    overrides: Sequence[str] = ()
    concurrency: int = DEFAULT_CONCURRENCY
    report_dir: Path | None = None
    notify: str | None = None  # a shell command fed the summary as JSON
    poll_s: float = 5.0
    idle: bool = False  # --idle: preemptible jobs on idle golden nodes instead of the night
    idle_partition: str | None = None  # default: inventory slurm_idle_partition, else bringup-idle
    idle_timeout_s: float = 7200.0  # a test job not ended by then is cancelled (not run)


@dataclass
class NightRow:
    node: str
    role: str  # tested, partner, given back, kept drained, skipped
    why: str = ""
    state_before: str = ""
    state_after: str = ""
    verdict: str = ""  # the burn-in's verdict ('' : not burnt in)
    slurm: str = ""  # what the night did in Slurm: resume, keep drained, left alone, -
    finding: str = ""

    def line(self) -> str:
        state = (
            self.state_after
            if self.state_after == self.state_before
            else f"{self.state_before} -> {self.state_after}"
        )
        parts = [f"{self.node}: {self.role}", state]
        if self.verdict:
            parts.append(self.verdict)
        if self.slurm:
            parts.append(f"slurm: {self.slurm}")
        if self.finding:
            parts.append(self.finding)
        return "; ".join(parts)


@dataclass
class NightlyResult:
    rack: str
    run_id: int | None = None
    rows: list[NightRow] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    notified: str = ""  # how --notify went
    notes: list[str] = field(default_factory=list)  # the plan's: a profile short of golden partners

    @property
    def exit_code(self) -> int:
        """0: every tested node came back golden (or nothing to test); 1: some did not."""
        return 1 if any(r.role in ("tested", "idle") and r.state_after != "golden" for r in self.rows) else 0

    def summary(self) -> dict[str, Any]:
        return {
            "rack": self.rack,
            "run": self.run_id,
            "exit": self.exit_code,
            "nodes": [asdict(r) for r in self.rows],
            "lines": [r.line() for r in self.rows],
            "reports": self.reports,
            "notes": self.notes,
        }


Say = Callable[[str], None]


def live_runs(store: FleetStore) -> set[int]:
    with store.reading() as s:
        return set(s.execute(sql_select(Run.id).where(Run.status == RUNNING)).scalars())


def rack_views(store: FleetStore, rack: Rack, view: dict[str, Any]) -> list[NodeView]:
    latest = store.latest_results_of_rack(rack.name)
    nodes = {n.name: n for n in store.list_nodes(rack=rack.name)}
    out = []
    for h in rack.hosts:
        if h.name not in nodes:
            continue
        times = [r.time for r in latest.get(h.name, [])]
        proven = max(times) if times else None
        out.append(NodeView(h.name, nodes[h.name].state, view.get(h.name), proven, h.profile))
    return out


def run_nightly(
    store: FleetStore, inventory_dir: Path | None, req: NightlyRequest, say: Say | None = None
) -> NightlyResult:
    """One night of ``req.rack`` (see the module's docstring). Raises NightlyBusy when another holds it."""
    say = say or (lambda _line: None)
    rack, problems = load_rack(req.rack, inventory_dir)
    if rack is None:
        raise InvalidRack(req.rack, problems)
    conf = (rack.hosts[0].vars if rack.hosts else {}).get("slurm_conf")
    result = NightlyResult(req.rack)
    with nightly_lock(store, req.rack):
        sweep_abandoned(store, actor=ACTOR)
        reservation = None
        if req.reservation and not req.idle:  # before any node is touched
            reservation = nightly_slurm.check_reservation(req.reservation, conf)
        view = nightly_slurm.view(conf)
        plan = plan_night(
            rack_views(store, rack, view),
            live_runs(store),
            revalidate_pct=req.revalidate_pct,
            partners=req.partners,
        )
        if reservation is not None and (outside := outside_reservation(plan, reservation.nodes)):
            raise OutsideReservation(reservation.name, outside)
        states = states_of(
            store, [n for n, _ in plan.skipped] + [p.node for p in (*plan.give_back, *plan.keep)]
        )
        for name, why in plan.skipped:
            result.rows.append(NightRow(name, "skipped", why, *(states[name],) * 2))
        events: list[Note] = []
        try:
            for pick in plan.give_back:  # golden nodes a dead night left drained
                state = states[pick.node]
                row = NightRow(pick.node, "given back", pick.note, state, state)
                row.slurm = _give_back(pick.node, state, view.get(pick.node), 0, conf, "", events)
                result.rows.append(row)
            for pick in plan.keep:  # failed under a dead night, its bare drain left: the finding added
                state, s = states[pick.node], view.get(pick.node)
                dead = nightly_run_of(s.reason) if s is not None else None
                finding = stored_finding(store, pick.node, dead)
                row = NightRow(pick.node, "kept drained", pick.note, state, state, finding=finding)
                row.slurm = _give_back(pick.node, state, s, dead or 0, conf, finding, events)
                result.rows.append(row)
        finally:
            write_events(store, events)
        if req.idle:
            _idle_night(
                store,
                rack,
                req,
                plan_idle(rack_views(store, rack, view), req.revalidate_pct),
                conf,
                result,
                say,
            )
        elif not plan.tested:
            say("nothing to test tonight")
        else:
            result.notes = list(plan.notes)
            for line in plan.notes:
                say(line)
            _night(store, rack, req, plan, conf, result, say)
        write_reports(store, rack, req, result, inventory_dir)
    if req.notify:
        result.notified = notify(req.notify, result.summary())
    return result


def _night(
    store: FleetStore,
    rack: Rack,
    req: NightlyRequest,
    plan: NightPlan,
    conf: str | None,
    result: NightlyResult,
    say: Say,
) -> None:
    params = {
        "stages": list(req.stages),
        "tested": [p.node for p in plan.tested],
        "partners": [p.node for p in plan.partners],
        "revalidate_pct": req.revalidate_pct,
        "reservation": req.reservation,
        "set": list(req.overrides),
    }
    with run_ledger(store, "nightly", req.rack, nodes=plan.nodes, params=params, actor=ACTOR) as run:
        result.run_id = run.id
        rows = {p.node: NightRow(p.node, "tested", p.note or str(p.why)) for p in plan.tested}
        rows |= {p.node: NightRow(p.node, "partner", str(p.why)) for p in plan.partners}
        for name, state in states_of(store, rows).items():
            rows[name].state_before = rows[name].state_after = state
        result.rows.extend(rows.values())
        findings: dict[str, str] = {}
        try:
            ready = _take_out(store, run, plan.nodes, req, conf, rows, say)
            tested = [p.node for p in plan.tested if p.node in ready]
            partners = [p.node for p in plan.partners if p.node in ready]
            refused = into_burnin(store, run.id, tested) if tested else {}
            for name, why in refused.items():  # moved meanwhile by another process: not tested
                rows[name].role, rows[name].finding = "skipped", f"not moved into burnin: {why}"
            tested = [n for n in tested if n not in refused]
            if tested:
                outcomes = _burn_in(store, rack, run, req, tested, partners, say)
                for o in outcomes.values():
                    if o.node in rows and o.node in tested:
                        rows[o.node].verdict = o.verdict.value
                        findings[o.node] = first_finding(o)
                run.finish("failed" if any(rows[n].verdict not in _PASSED for n in tested) else "done")
        finally:  # whatever happened: every node held goes back to Slurm as its state says
            now = nightly_slurm.view(conf)
            states = states_of(store, rows)
            events: list[Note] = []
            try:
                for name, row in rows.items():
                    row.state_after = states.get(name, row.state_after)
                    row.finding = row.finding or findings.get(name, "")
                    if row.state_after != "golden" and not row.finding and row.role == "tested":
                        row.finding = "not burnt in"
                    row.slurm = _give_back(
                        name, row.state_after, now.get(name), run.id, conf, row.finding, events
                    )
            finally:  # what was given back is recorded, also when Slurm refused a later node
                write_events(store, events)


def _idle_night(
    store: FleetStore,
    rack: Rack,
    req: NightlyRequest,
    picks: list[Pick],
    conf: str | None,
    result: NightlyResult,
    say: Say,
) -> None:
    """--idle: each idle golden node tested by a preemptible job; a preempted test is not run."""
    if not picks:
        say("no idle golden node to test")
        return
    names = [p.node for p in picks]
    partition = req.idle_partition or (rack.hosts[0].vars if rack.hosts else {}).get("slurm_idle_partition")
    params = {
        "idle": True,
        "stages": list(req.stages),
        "nodes": names,
        "partition": partition or DEFAULT_PARTITION,
    }
    with run_ledger(store, "nightly", req.rack, nodes=names, params=params, actor=ACTOR) as run:
        result.run_id = run.id
        states = states_of(store, names)
        rows = {n: NightRow(n, "idle", "idle golden node", *(states[n],) * 2) for n in names}
        result.rows.extend(rows.values())
        outcomes = idle_tests(
            store,
            rack,
            run,
            names,
            req.stages,
            req.overrides,
            partition or DEFAULT_PARTITION,
            conf,
            req.idle_timeout_s,
            req.poll_s,
            say,
        )
        now = nightly_slurm.view(conf)
        states = states_of(store, names)
        events: list[Note] = []
        try:
            for o in outcomes:
                row = rows[o.node]
                row.verdict, row.finding = o.verdict, o.finding
                row.state_after = states[o.node]
                row.slurm = _give_back(
                    o.node, row.state_after, now.get(o.node), run.id, conf, o.finding, events
                )
        finally:
            write_events(store, events)
        run.finish("failed" if any(r.state_after != "golden" for r in rows.values()) else "done")


def _take_out(
    store: FleetStore,
    run: ActiveRun,
    names: list[str],
    req: NightlyRequest,
    conf: str | None,
    rows: dict[str, NightRow],
    say: Say,
) -> list[str]:
    """Drain (unless a reservation) and wait for running jobs: the nodes ready to test."""
    if req.reservation:
        return list(names)
    now = nightly_slurm.view(conf)
    reason = nightly_reason(run.id)
    drained: list[Note] = []
    try:
        for name in names:
            s = now.get(name)
            if s is None or (s.drain and drain_origin(s.reason) is DrainOrigin.OPERATOR):
                continue  # not in Slurm, or an operator's drain: never rewritten
            slurm.drain(name, reason, conf)
            drained.append(note(name, f"drained for nightly run {run.id}", run.id))
    finally:  # the drains made are recorded, also when Slurm refused a later one
        write_events(store, drained)
    say(f"drained {len(names)} node(s); waiting for their jobs (up to {req.drain_timeout_s:g} s)")
    ready, busy = nightly_slurm.wait_idle(names, conf, req.drain_timeout_s, req.poll_s)
    why = f"still running jobs after {req.drain_timeout_s:g} s: skipped tonight"
    for name in busy:
        rows[name].finding = why
        rows[name].role = "skipped" if rows[name].role == "tested" else rows[name].role
    write_events(store, [note(name, f"nightly run {run.id}: {why}", run.id) for name in busy])
    return ready


def _burn_in(
    store: FleetStore,
    rack: Rack,
    run: ActiveRun,
    req: NightlyRequest,
    tested: list[str],
    partners: list[str],
    say: Say,
) -> dict[str, BurninOutcome]:
    """All the stages: single-node ones on the tested nodes, then the group ones beside the partners."""
    jobs: dict[str, NodeJob] = {}
    nodes = {n.name: n for n in store.list_nodes(rack=rack.name)}
    for name in [*tested, *partners]:
        host, node = rack.host(name), nodes[name]
        profile = apply_overrides(rack.profiles[host.profile], req.overrides)
        target = target_for_node(name, host.vars, rack.path.parent, node)
        record = record_for(node.hardware, previous_check_time(store, name, "bmc_event_log"))
        jobs[name] = NodeJob(name, profile, target, record)
    settings = group_settings(rack.hosts[0].vars if rack.hosts else {}, slurm_reservation=req.reservation)

    def make_run(stages: list[str], beside: frozenset[str]) -> BurninRun:
        if not any(is_group_stage(s) for s in stages):
            say(f"stages {','.join(stages)} on {', '.join(tested)}")
        # the ib pairs and nccl anchors (GroupContext.partners)
        return BurninRun(
            store,
            run.id,
            stages,
            req.concurrency,
            True,
            group_settings=settings,
            on_group_progress=say,
            partners=beside,
        )

    def told(still: list[str], beside: list[str]) -> None:
        group = ",".join(s for s in req.stages if is_group_stage(s))
        say(f"stages {group} on {', '.join(still)} beside golden {', '.join(beside) or '(none)'}")

    outcomes = run_beside_partners(make_run, jobs, req.stages, tested, partners, told)
    passed = [n for n in tested if (o := outcomes.get(n)) is not None and o.stages and o.verdict in PASSING]
    back_to_golden(store, run.id, passed, req.stages)
    return outcomes


def first_finding(o: BurninOutcome) -> str:
    """'<check>: <finding>' of the first failing (else unknown) result of a node's burn-in."""
    for wanted in (Verdict.FAIL, Verdict.UNKNOWN):
        for s in o.stages:
            for r in s.results:
                if r.verdict is wanted:
                    f = next((f for f in r.findings if f.severity.value != "info"), None)
                    return f"{r.check}: {f.message if f else r.reason or wanted.value}"
    return ""


def stored_finding(store: FleetStore, name: str, run_id: int | None) -> str:
    """``first_finding``'s line from the results ``run_id`` recorded for the node (a dead run's,
    which never gave its nodes back)."""
    order = {stage: i for i, stage in enumerate(STAGE_ORDER)}
    results = sorted(
        (r for r in store.latest_results(name) if r.run_id == run_id),
        key=lambda r: (order.get(r.stage, len(order)), r.id),
    )
    for wanted in (Verdict.FAIL.value, Verdict.UNKNOWN.value):
        for r in results:
            if r.verdict == wanted:
                f = next((f for f in r.findings or [] if f.get("severity") != "info"), None)
                return f"{r.check}: {f['message'] if f else wanted}"
    return ""


def _give_back(
    name: str, state: str, s: Any, run_id: int, conf: str | None, finding: str, events: list[Note]
) -> str:
    """Do in Slurm what ``return_action`` says for the node; an event (added to ``events``, which
    the caller writes with the rest of its step) when something changed."""
    act = return_action(state, s, run_id, finding)
    if act.action is Return.RESUME:
        nightly_slurm.resume(name, conf)
        events.append(note(name, f"resumed in Slurm ({state}; drain was {s.reason!r})"))
    elif act.action is Return.KEEP:
        slurm.drain(name, act.reason, conf)
        events.append(note(name, f"kept drained: {act.reason}"))
    return f"{act.action.value}" + (f" ({act.note})" if act.note else "")


def write_reports(
    store: FleetStore, rack: Rack, req: NightlyRequest, result: NightlyResult, inventory_dir: Path | None
) -> None:
    """The night's HTML page (with the rack's reliability section, as `burnin report --html`)
    and JUnit XML under ``req.report_dir``."""
    if req.report_dir is None or result.run_id is None:
        return
    from burnin.report import collect
    from burnin.report.html import render_html
    from burnin.report.junit import render_junit
    from burnin.report.reliability import fleet_section

    req.report_dir.mkdir(parents=True, exist_ok=True)
    report = collect(store, rack, utcnow(), None, list(req.stages))
    html = render_html(report, [fleet_section(store, rack.name, inventory_dir, report.made_at, loaded=rack)])
    base = req.report_dir / f"nightly-{rack.name}-run{result.run_id}"
    for suffix, text in ((".html", html), (".xml", render_junit(report))):
        path = base.with_suffix(suffix)
        path.write_text(text)
        result.reports.append(str(path))


def notify(command: str, summary: dict[str, Any]) -> str:
    """Feed the summary as JSON to ``command`` (a shell line): how it went, in words."""
    try:
        proc = subprocess.run(
            command,
            shell=True,
            input=json.dumps(summary),
            text=True,
            capture_output=True,
            timeout=NOTIFY_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"notify: did not finish in {NOTIFY_TIMEOUT_S:g} s"
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return f"notify: exited {proc.returncode}: {lines[-1] if lines else 'no output'}"
    return "notify: sent"
