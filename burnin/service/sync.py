"""`burnin sync`, the controller side of the health loop: Slurm's drains into the fleet store.

For every node of the rack it reads Slurm's view (one `sinfo` call: state, drain, reason, who set
it and when) and, for a node a health check drained, that node's last health result (one SSH round
trip per node, bounded, through ``bringup.ssh.fanout.fan_out``; a node that does not answer is one
row's note, the others carry on). Then, per drained node:

- a drain not recorded yet is recorded once, as a ``slurm_drain`` event (a drain is its reason and
  the time Slurm says it was set: the same drain seen again is not recorded again);
- drained by a health check (reason ``bringup: <check>: <finding>``) and golden: the node moves
  to ``failed`` with the finding as the reason, so the golden list and its exports drop it;
- drained by an operator (any other reason): recorded as such, and nothing else happens;
- a new health drain whose node result is the one that drained it: that result is kept whole as
  results of stage ``health`` (``health_rows``), so lemons and reliability read the part.

It never touches Slurm: no drain, no resume. ``apply_view`` is the store half, fed the parsed
view, so the benchmark can run it on 1,000 simulated nodes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bringup.fleet.lifecycle import State
from bringup.fleet.models import Event, Node
from bringup.fleet.select import InvalidRack
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Note, Transition, transition_many
from bringup.inventory.rack import load_rack
from bringup.ssh.fanout import DEFAULT_CONCURRENCY, SshTarget, fan_out, target_for_node
from burnin.parsers.slurm import SlurmNode
from burnin.result import verdict_of
from burnin.service import slurm, state
from burnin.service.reasons import DrainOrigin, drain_origin, health_finding

DRAIN_EVENT = "slurm_drain"
ACTOR = "burnin sync"
HEALTH_STAGE = "health"  # the stage of a health result recorded in the store
HEALTH_FETCH_LIMIT_S = 20.0


@dataclass(frozen=True)
class SyncRow:
    node: str
    slurm: str  # Slurm's state as people read it ('idle', 'idle+drain', 'down*'), or 'not in Slurm'
    state_before: str
    state_after: str
    action: str  # what sync did: 'recorded drain', 'failed', 'already recorded', '-'
    origin: str = ""  # whose drain: health, project, operator ('' : not drained)
    reason: str = ""
    user: str = ""
    since: str = ""
    health: dict[str, Any] | None = None  # the node's last health result, in short
    note: str = ""  # e.g. the health result could not be read

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SyncResult:
    rack: str
    rows: list[SyncRow] = field(default_factory=list)

    @property
    def recorded(self) -> int:
        return sum(1 for r in self.rows if "recorded" in r.action and "already" not in r.action)

    @property
    def failed(self) -> list[str]:
        return [r.node for r in self.rows if r.state_after != r.state_before and r.state_after == "failed"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rack": self.rack,
            "recorded": self.recorded,
            "failed": self.failed,
            "nodes": [r.to_dict() for r in self.rows],
        }


def drain_key(node: SlurmNode) -> str:
    """One drain: when Slurm says it was set, and its reason."""
    return f"{node.since.isoformat() if node.since else '-'}|{node.reason}"


def recorded_drains(store: FleetStore, rack: str) -> set[tuple[str, str]]:
    """(node, drain key) of every drain already recorded for the rack: one query."""
    stmt = (
        select(Node.name, Event.details)
        .join(Event, Event.node_id == Node.id)
        .where(Node.rack == rack, Event.kind == DRAIN_EVENT)
    )
    with store.reading() as s:
        return {(name, str((details or {}).get("key", ""))) for name, details in s.execute(stmt)}


def health_brief(report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What sync keeps of a node's last health result."""
    if not report:
        return None
    keys = ("verdict", "failed_check", "finding", "reason", "finished_at", "summary", "slurm")
    return {k: report.get(k) for k in keys if k in report}


def apply_view(
    store: FleetStore,
    rack: str,
    view: Sequence[SlurmNode],
    health: Mapping[str, Mapping[str, Any] | None] | None = None,
    notes: Mapping[str, str] | None = None,
) -> SyncResult:
    """Record the rack's new drains and fail the golden nodes a health check drained: every move
    and drain event of the sync in one transaction (``transition_many``). A move refused under
    the lock (another process moved the node since it was read) leaves that node where it is,
    said in its row; its drain and every other write are still made. The health results kept
    (``health_rows``) are one more transaction, after the moves: written with them, a FAIL would
    fail the golden node first (FleetStore's rule) and sync's own move would be refused."""
    health, notes = health or {}, notes or {}
    by_name = {n.name: n for n in view}
    seen = recorded_drains(store, rack)
    result = SyncResult(rack)
    moves: list[Transition] = []
    events: list[Note] = []
    results: list[tuple[str, list[dict[str, Any]]]] = []
    for node in store.list_nodes(rack=rack):
        name, before = node.name, node.state
        s = by_name.get(name)
        if s is None:
            result.rows.append(SyncRow(name, "not in Slurm", before, before, "-", note=notes.get(name, "")))
            continue
        if not s.drain:
            result.rows.append(SyncRow(name, s.label, before, before, "-", note=notes.get(name, "")))
            continue
        origin = drain_origin(s.reason)
        brief = health_brief(health.get(name))
        since = s.since.isoformat() if s.since else ""
        key = drain_key(s)
        action, after = "already recorded", before
        if (name, key) not in seen:
            # A golden node a health check drained leaves the golden list. Only on a drain seen
            # for the first time: a node someone made golden again after this drain was carried
            # in is theirs to judge. The move and the drain event are written together.
            if origin is DrainOrigin.HEALTH and before == State.GOLDEN.value:
                moves.append(
                    Transition(
                        name,
                        State.FAILED,
                        f"health check drained it in Slurm: {_finding(s, brief)}",
                        details={"slurm_reason": s.reason, "since": since, "health": brief or {}},
                    )
                )
                after = State.FAILED.value
            details = {"key": key, "reason": s.reason, "user": s.user, "since": since, "origin": origin.value}
            if brief:
                details["health"] = brief
            who = {DrainOrigin.HEALTH: "a health check", DrainOrigin.PROJECT: "this project"}.get(
                origin, f"an operator ({s.user or 'unknown user'})"
            )
            events.append(Note(name, DRAIN_EVENT, f"drained in Slurm by {who}: {s.reason}", details=details))
            action = "recorded drain" + ("; golden -> failed" if after != before else "")
            rows = health_rows(health.get(name), s.reason)
            if rows:
                results.append((name, rows))
                action += f"; {len(rows)} health results kept"
        result.rows.append(
            SyncRow(
                name,
                s.label,
                before,
                after,
                action,
                origin.value,
                s.reason,
                s.user,
                since,
                brief,
                notes.get(name, ""),
            )
        )
    refused = {m.move.node: m for m in transition_many(store, moves, notes=events, actor=ACTOR) if not m.done}
    # After the moves: a golden node is already failed by its drain, not again by its results.
    if results:
        store.add_results_many(results)
    for i, row in enumerate(result.rows):
        if row.node in refused:
            m = refused[row.node]
            result.rows[i] = replace(row, state_after=m.state, action=f"{row.action} refused: {m.error}")
    return result


def health_rows(report: Mapping[str, Any] | None, reason: str) -> list[dict[str, Any]]:
    """The health result behind this drain as result rows of stage ``health``, whole (each check's
    verdict, findings, metrics: the GPUs' serials, the Xids), dated when the checks ran: the
    history (lemons, reliability) reads a failure in service as it reads one in burn-in
    (docs/reliability.md). None when the node's last result is not the one that drained it (a
    later run wrote over it): a result that did not ask for this drain is not its evidence."""
    if not report or report.get("reason") != reason or not isinstance(report.get("checks"), list):
        return []
    when = _ran_at(report)
    rows = []
    for check in report["checks"]:
        if not isinstance(check, Mapping) or not check.get("check"):
            continue
        metrics = dict(check.get("metrics") or {})
        if check.get("reason"):
            metrics.setdefault("reason", check["reason"])
        rows.append(
            {
                "stage": HEALTH_STAGE,
                "check": str(check["check"]),
                "verdict": str(verdict_of(str(check.get("verdict", "")))),
                "metrics": metrics,
                "findings": [dict(f) for f in check.get("findings") or [] if isinstance(f, Mapping)],
                "evidence": None,
                "time": when,
            }
        )
    return rows


def _ran_at(report: Mapping[str, Any]) -> datetime | None:
    """When the health run finished (its Unix time, else its ISO time); None: now."""
    try:
        return datetime.fromtimestamp(float(report["finished_at_unix"]), timezone.utc)
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        pass
    try:
        when = datetime.fromisoformat(str(report["finished_at"]))
    except (KeyError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)  # burnin health writes UTC


def _finding(s: SlurmNode, brief: Mapping[str, Any] | None) -> str:
    """The whole finding from the node's own result when it is the one behind this drain (the
    Slurm reason may be cut to 255 bytes), else the reason's."""
    if brief and brief.get("reason") == s.reason and brief.get("finding"):
        return f"{brief.get('failed_check')}: {brief['finding']}"
    return health_finding(s.reason)


# -- the edges: Slurm and the nodes ------------------------------------------------------------------


def fetch_health(targets: Sequence[SshTarget], state_dir: str, concurrency: int) -> tuple[dict, dict]:
    """Each node's last health JSON (name -> dict) and, for those that could not give it, why."""
    path = f"{state_dir.rstrip('/')}/{state.LAST_RESULT}"
    script = f"cat {json.dumps(path)}\n"
    reports: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    for res in fan_out(targets, script, HEALTH_FETCH_LIMIT_S, concurrency):
        if res.error:
            notes[res.name] = f"health result not read: {res.error}"
            continue
        try:
            data = json.loads(res.stdout.decode(errors="replace"))
        except ValueError:
            why = res.stderr.decode(errors="replace").strip().splitlines()
            notes[res.name] = f"health result not read: {why[-1] if why else 'not JSON'}"
            continue
        if isinstance(data, dict):
            reports[res.name] = data
    return reports, notes


def sync_rack(
    store: FleetStore,
    rack: str,
    inventory_dir: Path | None,
    *,
    read_health: bool = True,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> SyncResult:
    """Slurm's view of the rack (and the drained nodes' health results) into the store."""
    loaded, problems = load_rack(rack, inventory_dir)
    if loaded is None:
        raise InvalidRack(rack, problems)
    rack_vars = loaded.hosts[0].vars if loaded.hosts else {}
    view = slurm.cluster_nodes(rack_vars.get("slurm_conf"))
    health: dict[str, dict[str, Any]] = {}
    notes: dict[str, str] = {}
    if read_health:
        drained = {n.name for n in view if n.drain and drain_origin(n.reason) is DrainOrigin.HEALTH}
        nodes = {n.name: n for n in store.list_nodes(rack=rack)}
        targets = [
            target_for_node(h.name, h.vars, loaded.path.parent, nodes[h.name])  # pinned host keys
            for h in loaded.hosts
            if h.name in drained and h.name in nodes
        ]
        state_dir = str(rack_vars.get("burnin_health_state_dir") or state.DEFAULT_STATE_DIR)
        health, notes = fetch_health(targets, state_dir, concurrency)
    return apply_view(store, rack, view, health, notes)
