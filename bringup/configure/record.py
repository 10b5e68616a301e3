"""A configure run's outcomes written onto the node records.

- ``provisioned`` -> ``configured`` when every role applied (a run limited by --tags leaves
  the state alone: not everything was configured); so does ``repair``, the way back for a node
  that failed configure once its cause is fixed (``bringup nodes mark-repaired``);
- ``configured`` stays ``configured`` (re-running is how pins change): events and versions only;
- ``golden`` only with --force; it drops to ``configured`` if anything changed (the software
  under the burn-in verdict is not the same any more), else stays golden;
- a failed host -> ``failed`` with role, task and Ansible's message (dpkg's lines) in the
  transition's details (a task past its time limit is a failed task); an unreachable host keeps
  its state and gets an ``unreachable`` event;
- a host the run's overall time limit cut short (``timed-out``) keeps its state with an event
  naming the task it was in, except a golden node that had changed something: half-applied
  software is not what its burn-in judged, so it drops to ``configured``;
- in check mode nothing moves: each node gets a ``configure-check`` event saying what would change.

The versions the play reported go to ``node.hardware["software"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from bringup.configure.outcome import HostOutcome
from bringup.fleet.lifecycle import State
from bringup.fleet.models import Node
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Note, Transition, transition_many

# States a full, successful run moves to ``configured``. Which states a run may start from at
# all is the lifecycle's gate (``Step.CONFIGURE``), applied by ``bringup.fleet.select``.
_TO_CONFIGURED = (State.PROVISIONED.value, State.REPAIR.value)


@dataclass
class ConfigureResult:
    """What happened to one node, for the summary table and --json."""

    node: str
    # configured | applied (--tags) | failed | unreachable | not-run | timed-out | checked | skipped
    result: str
    state: str
    changed: int = 0
    changed_roles: list[str] = field(default_factory=list)
    role: str | None = None
    task: str | None = None
    message: str = ""
    packages: dict[str, str] = field(default_factory=dict)
    reboot_required: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _summary(o: HostOutcome) -> dict[str, Any]:
    return {
        "ok": o.ok,
        "changed": o.changed,
        "skipped": o.skipped,
        "changed_by_role": o.changed_by_role,
        "changed_tasks": o.changed_tasks[:50],
    }


def record_outcome(
    store: FleetStore,
    node: Node,
    outcome: HostOutcome,
    run_id: int,
    *,
    check: bool,
    full: bool,
) -> ConfigureResult:
    """Write one host's outcome onto its node record; returns what happened."""
    return record_outcomes(store, [(node, outcome)], run_id, check=check, full=full)[0]


def record_outcomes(
    store: FleetStore,
    outcomes: Sequence[tuple[Node, HostOutcome]],
    run_id: int,
    *,
    check: bool,
    full: bool,
) -> list[ConfigureResult]:
    """Write every host's outcome onto its node record in one transaction (at fleet size; it was two
    per node), each node's software versions, move or event; returns what happened to each.

    A move the lifecycle refuses under the lock (another process moved the node since it was
    read) leaves that node where it is, said in its result; every other node's write is made."""
    planned = [_plan(node, outcome, run_id, check=check, full=full) for node, outcome in outcomes]
    moves = [w for _, w, _ in planned if isinstance(w, Transition)]
    notes = [w for _, w, _ in planned if isinstance(w, Note)]
    updates = {r.node: {"hardware": hw} for r, _, hw in planned if hw is not None}
    moved = transition_many(store, moves, notes=notes, updates=updates)
    refused = {m.move.node: m for m in moved if not m.done}
    for result, _, _ in planned:
        if (m := refused.get(result.node)) is not None:
            result.state = m.state
            result.message = "; ".join(x for x in (result.message, f"state not changed: {m.error}") if x)
    return [result for result, _, _ in planned]


def _plan(
    node: Node, outcome: HostOutcome, run_id: int, *, check: bool, full: bool
) -> tuple[ConfigureResult, Transition | Note, dict[str, Any] | None]:
    """What one host's outcome writes (pure): its result, its move or event, and its node's
    ``hardware`` with the new software versions (None: unchanged)."""
    name = node.name
    where = f"configure run {run_id}"
    base = ConfigureResult(
        name,
        "",
        node.state,
        changed=outcome.changed,
        changed_roles=outcome.changed_roles,
        role=outcome.role,
        task=outcome.task,
        message=outcome.message,
        packages=outcome.packages,
        reboot_required=outcome.reboot_required,
    )
    if check:
        verb = {"ok": "would change", "failed": "check failed", "unreachable": "unreachable"}
        what = verb.get(outcome.status, outcome.status)
        reason = f"{where} (check mode): {what}"
        if outcome.status == "ok":
            reason += f" {outcome.changed} task(s) in {', '.join(outcome.changed_roles) or 'no role'}"
        elif outcome.message:
            reason += f" in {outcome.role}/{outcome.task}: {outcome.message}"
        base.result = "checked" if outcome.status == "ok" else outcome.status
        return (
            base,
            Note(name, "configure-check", reason, run_id, {**_summary(outcome), **outcome.details}),
            None,
        )

    if outcome.status == "failed":
        reason = f"{where} failed in {outcome.role}, task '{outcome.task}': {outcome.message}"
        base.result, base.state = "failed", State.FAILED.value
        return base, Transition(name, State.FAILED, reason, run_id, outcome.details), None
    if outcome.status == "timed-out" and node.state == State.GOLDEN.value and outcome.changed:
        reason = (
            f"{where} was cut short after changing a golden node: {outcome.message}; it needs a new burn-in"
        )
        base.result, base.state, base.message = "timed-out", State.CONFIGURED.value, outcome.message
        return base, Transition(name, State.CONFIGURED, reason, run_id, _summary(outcome)), None
    if outcome.status in ("unreachable", "not-run", "timed-out"):
        kind = "unreachable" if outcome.status == "unreachable" else "configure"
        reason = f"{where}: {outcome.message or outcome.status} (state unchanged)"
        base.result = outcome.status
        return base, Note(name, kind, reason, run_id, outcome.details), None

    # ok: every task that ran succeeded.
    software = {
        "packages": outcome.packages,
        "reboot_required": outcome.reboot_required,
        "run": run_id,
        "time": datetime.now(timezone.utc).isoformat(),
    }
    hardware = {**(node.hardware or {}), "software": software}
    changes = f"{outcome.changed} change(s) in {', '.join(outcome.changed_roles) or 'no role'}"
    reboot = "; reboot required" if outcome.reboot_required else ""
    details = {**_summary(outcome), "packages": outcome.packages, "reboot_required": outcome.reboot_required}
    write: Transition | Note
    if node.state in _TO_CONFIGURED and full:
        write = Transition(name, State.CONFIGURED, f"{where}: {changes}{reboot}", run_id, details)
        base.state = State.CONFIGURED.value
    elif node.state == State.GOLDEN.value and outcome.changed:
        write = Transition(
            name,
            State.CONFIGURED,
            f"{where} changed a golden node ({changes}): it needs a new burn-in{reboot}",
            run_id,
            details,
        )
        base.state = State.CONFIGURED.value
    else:
        partial = "" if full else " (partial run, --tags: state unchanged)"
        write = Note(name, "configure", f"{where}: {changes}{reboot}{partial}", run_id, details)
    base.result = "applied" if base.state in _TO_CONFIGURED else "configured"
    return base, write, hardware
