"""`burnin remediate`: carry out the ladder's next rung on the rack's failed nodes
(docs/in-service.md, "Remediation").

For every node of the rack the store has in ``failed`` whose Slurm drain is this project's (a
health check's or the nightly's; an operator's drain is theirs and never touched), it reads what
it failed (the newest FAIL result since it was last golden: its check and its findings' actions),
what was tried (the ``remediation`` events) and whether Slurm shows a job on it, and asks the pure
ladder (``remediate_ladder.plan``) for the next step. An ACT step is carried out through an edge
(SSH ``nvidia-smi -r``, the configure playbook, a BMC power cycle); each one is a ``remediation``
event, and a rung whose command worked moves the node ``failed -> repair`` in the same
transaction, so the nightly re-tests it (``burnin nightly`` selects ``repair``) and resumes it
only when it passes: never straight back to golden. The node stays drained meanwhile.

The edges are injectable (``Edges``): tests drive the whole flow with stand-ins.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bringup.core.errors import UserError
from bringup.fleet import breaker as breakers
from bringup.fleet.lifecycle import State
from bringup.fleet.models import Event, Node
from bringup.fleet.select import InvalidRack
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Note, Transition, transition_many
from bringup.inventory.rack import Rack, load_rack
from burnin.parsers.slurm import SlurmNode
from burnin.result import Action, Severity, verdict_of
from burnin.service import slurm
from burnin.service.nightly_lock import nightly_lock
from burnin.service.reasons import DrainOrigin, drain_origin
from burnin.service.remediate_ladder import Attempt, Decision, Failure, Policy, Rung, Step, plan

EVENT = "remediation"
ACTOR = "burnin remediate"
OPT_IN_VAR = "burnin_remediate"  # the rack inventory's setting that opts it in (or --enable)
RESET_LIMIT_S = 120.0
POWER_LIMIT_S = 900.0
_BUSY = ("alloc", "mix", "comp", "draining")  # Slurm states with a job on the node


class NotOptedIn(UserError, RuntimeError):
    """Remediation acts on nodes in service: it runs only when the operator opted in."""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str


Edge = Callable[[str], Outcome]


@dataclass(frozen=True)
class Edges:
    """The three ways to act on a node, each given the node's name."""

    reset_gpu: Edge
    reconfigure: Edge
    power_cycle: Edge

    def for_rung(self, rung: Rung) -> Edge:
        return {Rung.RESET_GPU: self.reset_gpu, Rung.RECONFIGURE: self.reconfigure}.get(
            rung, self.power_cycle
        )


@dataclass(frozen=True)
class Row:
    node: str
    decision: str
    rung: str
    check: str
    why: str
    done: str = ""  # what happened ('' on a dry run or when nothing was carried out)
    state_after: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RemediateResult:
    rack: str
    dry_run: bool
    rows: list[Row] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rack": self.rack, "dry_run": self.dry_run, "nodes": [r.to_dict() for r in self.rows]}


def failure_of(history: Sequence[Any], results: Sequence[Any]) -> Failure | None:
    """What the node failed: the newest FAIL result since it was last golden, its critical
    findings' actions; None when no such result is kept (nothing says what would fix it)."""
    golden = [e.time for e in history if e.kind == "transition" and e.to_state == State.GOLDEN.value]
    since = _aware(max(golden)) if golden else None
    fails = [
        r
        for r in results
        if verdict_of(r.verdict).value == "FAIL" and (since is None or _aware(r.time) >= since)
    ]
    if not fails:
        return None
    newest = max(fails, key=lambda r: (_aware(r.time), r.id or 0))
    actions = []
    for f in newest.findings or []:
        if f.get("severity") == Severity.CRITICAL.value:
            try:
                actions.append(Action(f.get("action", "")))
            except ValueError:
                continue
    return Failure(newest.check, tuple(actions))


def attempts_since(store: FleetStore, since: datetime) -> list[Attempt]:
    """Every rung carried out fleet-wide since ``since`` (the ``remediation`` events that acted)."""
    stmt = (
        select(Node.name, Event.time, Event.details)
        .join(Event, Event.node_id == Node.id)
        .where(Event.kind == EVENT, Event.time >= since)
    )
    out = []
    with store.reading() as s:
        for name, when, details in s.execute(stmt):
            d = details or {}
            if not d.get("acted"):
                continue
            try:
                rung = Rung(d.get("rung"))
            except ValueError:
                continue
            out.append(Attempt(name, _aware(when), str(d.get("check", "")), rung))
    return out


def busy_reason(s: SlurmNode | None) -> str:
    """Why the node may not be touched now ('' : it may): a job on it, not drained, not in Slurm."""
    if s is None:
        return "not in Slurm: cannot tell that no job runs on it"
    if not s.drain:
        return "not drained in Slurm: a job could land on it"
    if s.state.startswith(_BUSY):
        return f"a job runs on it (Slurm: {s.label})"
    return ""


def remediate_rack(
    store: FleetStore,
    rack: str,
    inventory_dir: Path | None,
    *,
    dry_run: bool,
    enabled: bool = False,
    policy: Policy | None = None,
    edges: Edges | None = None,
    view: Sequence[SlurmNode] | None = None,
    now: datetime | None = None,
) -> RemediateResult:
    """Plan (and unless ``dry_run``, carry out) the next rung for each failed node of the rack.
    Acting needs ``enabled`` or the rack's ``burnin_remediate: true`` (NotOptedIn otherwise)."""
    policy = policy or Policy()
    now = now or datetime.now(timezone.utc)
    loaded, problems = load_rack(rack, inventory_dir)
    if loaded is None:
        raise InvalidRack(rack, problems)
    rack_vars = loaded.hosts[0].vars if loaded.hosts else {}
    if not dry_run and not (enabled or opted_in(rack_vars)):
        raise NotOptedIn(
            f"rack {rack}: remediation is opt-in: pass --enable, or set {OPT_IN_VAR}: true in the "
            "rack's inventory (--dry-run shows the plan without it)"
        )
    # The rack's nightly lock: a node the nightly holds (under test, a partner) may be failed
    # mid-night; it is not touched until the night has given it back. Two remediations of one
    # rack exclude each other too (the second refuses). A dry run changes nothing, takes no lock.
    with nullcontext() if dry_run else nightly_lock(store, rack):
        return _plan_and_act(store, loaded, rack_vars, dry_run, policy, edges, view, now)


def _plan_and_act(
    store: FleetStore,
    loaded: Rack,
    rack_vars: Mapping[str, Any],
    dry_run: bool,
    policy: Policy,
    edges: Edges | None,
    view: Sequence[SlurmNode] | None,
    now: datetime,
) -> RemediateResult:
    rack = loaded.name
    if view is None:
        view = slurm.cluster_nodes(rack_vars.get("slurm_conf"))
    by_name = {n.name: n for n in view}
    result = RemediateResult(rack, dry_run)
    latest = store.latest_results_of_rack(rack)
    failed: list[tuple[str, Failure, str]] = []
    for node in store.list_nodes(rack=rack, state=State.FAILED):
        s = by_name.get(node.name)
        if s is not None and s.drain and drain_origin(s.reason) is DrainOrigin.OPERATOR:
            result.rows.append(Row(node.name, "skip", "", "", f"drained by an operator: {s.reason}"))
            continue
        failure = failure_of(store.history(node.name), latest.get(node.name, []))
        if failure is None:
            result.rows.append(
                Row(node.name, str(Decision.PERSON), str(Rung.PERSON), "", "no FAIL result says what failed")
            )
            continue
        failed.append((node.name, failure, busy_reason(s)))
    window = max(policy.node_window_s, policy.fleet_window_s, policy.history_s)
    tried = attempts_since(store, now - timedelta(seconds=window))
    tripped = frozenset(b.check for b in breakers.states(store, tripped_only=True))
    steps = plan(failed, tried, now, tripped=tripped, policy=policy)
    if not dry_run:
        edges = edges or default_edges(store, loaded)
    for step in steps:
        if dry_run or step.decision is not Decision.ACT:
            result.rows.append(_row(step))
            if not dry_run and step.decision is Decision.PERSON:
                _say_person(store, step)
            continue
        assert edges is not None and step.rung is not None
        try:
            outcome = edges.for_rung(step.rung)(step.node)
        except (UserError, OSError, subprocess.SubprocessError) as exc:
            # A rung that could not be carried out is a failed rung (the next run escalates);
            # the other nodes still get theirs.
            outcome = Outcome(False, str(exc))
        result.rows.append(_record(store, step, outcome))
    return result


def _row(step: Step, done: str = "", after: str = "") -> Row:
    return Row(step.node, str(step.decision), str(step.rung or ""), step.check, step.why, done, after)


def _details(step: Step, acted: bool, outcome: Outcome | None) -> dict[str, Any]:
    d: dict[str, Any] = {"rung": str(step.rung or ""), "check": step.check, "acted": acted, "why": step.why}
    if outcome is not None:
        d.update(ok=outcome.ok, message=outcome.message)
    return d


def _record(store: FleetStore, step: Step, outcome: Outcome) -> Row:
    """The action as a ``remediation`` event; when it worked, failed -> repair with it (one
    transaction), so the nightly re-tests the node before it is resumed."""
    rung = str(step.rung)
    said = "done" if outcome.ok else "failed"
    note = Note(step.node, EVENT, f"{rung} {said}: {outcome.message}", details=_details(step, True, outcome))
    moves = []
    if outcome.ok:
        moves.append(
            Transition(
                step.node, State.REPAIR, f"remediated ({rung}): {step.why}", details={"remediation": rung}
            )
        )
    moved = transition_many(store, moves, notes=[note], actor=ACTOR)
    if moved and not moved[0].done:
        return _row(step, f"{rung} done, move refused: {moved[0].error}", moved[0].state)
    after = State.REPAIR.value if outcome.ok else State.FAILED.value
    return _row(step, f"{rung} {said}: {outcome.message}", after)


def _say_person(store: FleetStore, step: Step) -> None:
    """One event when the ladder stops for a node's failure (not one per run)."""
    for e in reversed(store.history(step.node)):
        if e.kind == "transition":
            break  # the node moved since: this stop is new
        if e.kind == EVENT and (e.details or {}).get("rung") == Rung.PERSON.value:
            return
    transition_many(
        store,
        [],
        notes=[Note(step.node, EVENT, f"needs a person: {step.why}", details=_details(step, False, None))],
        actor=ACTOR,
    )


def opted_in(loaded_vars: Mapping[str, Any]) -> bool:
    value = loaded_vars.get(OPT_IN_VAR)
    return value is True or str(value).lower() in ("true", "yes", "on", "1")


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)  # the store keeps UTC


# -- the edges: SSH, the configure playbook, the BMC ------------------------------------------


def default_edges(store: FleetStore, rack: Rack) -> Edges:
    """The real edges for this rack: each takes a node name and says what happened."""
    inventory_dir = rack.path.parent

    def reset_gpu(name: str) -> Outcome:
        from bringup.ssh.fanout import fan_out, target_for_node

        target = target_for_node(name, rack.host(name).vars, inventory_dir, store.get_node(name))
        (res,) = list(fan_out([target], "nvidia-smi -r\n", RESET_LIMIT_S, 1))
        text = (res.stdout + res.stderr).decode(errors="replace").strip().splitlines()
        last = text[-1] if text else ""
        if res.error or res.rc != 0:
            return Outcome(False, f"nvidia-smi -r: {res.error or f'exit {res.rc}'} {last}".strip())
        return Outcome(True, f"nvidia-smi -r: {last or 'done'}")

    def reconfigure(name: str) -> Outcome:
        # The configure playbook on this node, without `bringup configure`'s lifecycle moves: its
        # gate refuses a failed node, and a configured node would leave the nightly's path.
        from bringup.configure.hostkeys import pinned_hosts
        from bringup.configure.inventory import build_inventory, host_vars
        from bringup.configure.runner import run_playbook

        host, node = rack.host(name), store.get_node(name)
        hv = {name: host_vars(name, host.vars, inventory_dir, rack.profiles[host.profile], node.ip)}
        with pinned_hosts(hv, {name: node}) as pinned:
            res = run_playbook(build_inventory(rack.name, pinned), [name])
        outcome = res.outcomes.get(name)
        status = outcome.status if outcome else res.status
        return Outcome(
            res.rc == 0 and status not in ("failed", "unreachable", "timed-out"), f"configure: {status}"
        )

    def power_cycle(name: str) -> Outcome:
        argv = [sys.executable, "-m", "bringup", "--db", store.url, "--inventory-dir", str(inventory_dir)]
        argv += ["power", "cycle", "--rack", rack.name, "--nodes", name, "--json"]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=POWER_LIMIT_S)
        except subprocess.TimeoutExpired:
            return Outcome(False, f"power cycle: no answer in {POWER_LIMIT_S:g} s")
        try:
            rows = json.loads(proc.stdout)
            row = rows["rows"][0] if isinstance(rows, dict) else rows[0]
        except (ValueError, KeyError, IndexError, TypeError):
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            return Outcome(
                False, f"power cycle: exit {proc.returncode}: {lines[-1] if lines else 'no output'}"
            )
        if not row.get("ok"):
            err = row.get("error") or {}
            return Outcome(False, f"power cycle: {err.get('kind', 'error')}: {err.get('message', '')}")
        return Outcome(True, f"power cycle: {row.get('before')} -> {row.get('after')}")

    return Edges(reset_gpu, reconfigure, power_cycle)
