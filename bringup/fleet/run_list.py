"""The runs of the fleet store as `burnin runs` lists them: state, nodes, controller, how each ended.

Listing first marks as abandoned the running runs whose controller is gone (bringup/fleet/runs.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from bringup.fleet.models import Run
from bringup.fleet.runs import RUNNING, holders, sweep_abandoned
from bringup.fleet.store import FleetStore


@dataclass(frozen=True)
class RunView:
    """A run as ``burnin runs`` shows it."""

    id: int
    kind: str
    rack: str | None
    status: str
    actor: str
    nodes: tuple[str, ...]
    held: tuple[str, ...]  # nodes it holds now (a running run)
    host: str | None
    pid: int | None
    started_at: datetime
    finished_at: datetime | None
    heartbeat_at: datetime | None
    end_reason: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "rack": self.rack,
            "status": self.status,
            "actor": self.actor,
            "nodes": list(self.nodes),
            "held": list(self.held),
            "controller": {"host": self.host, "pid": self.pid},
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "heartbeat_at": self.heartbeat_at.isoformat() if self.heartbeat_at else None,
            "end_reason": self.end_reason,
        }


def list_runs(store: FleetStore, rack: str | None = None, *, limit: int | None = 20) -> list[RunView]:
    """Runs newest first (abandoned ones marked first): every running run, then the newest ended
    ones up to ``limit`` in all (None: every run)."""
    sweep_abandoned(store)
    held: dict[int, list[str]] = {}
    for h in holders(store):
        held[h.run_id] = list(h.nodes)
    stmt = select(Run).order_by(Run.id.desc())
    if rack is not None:
        stmt = stmt.where(Run.rack == rack)
    with store.reading() as s:
        running = list(s.execute(stmt.where(Run.status == RUNNING)).scalars())
        rest = select(Run).order_by(Run.id.desc()).where(Run.status != RUNNING)
        if rack is not None:
            rest = rest.where(Run.rack == rack)
        if limit is not None:
            rest = rest.limit(max(0, limit - len(running)))
        ended = list(s.execute(rest).scalars())
    runs = sorted(running + ended, key=lambda r: -r.id)
    return [
        RunView(
            r.id,
            r.kind,
            r.rack,
            r.status,
            r.actor,
            tuple(str(n) for n in (r.params or {}).get("nodes", ()) or held.get(r.id, ())),
            tuple(held.get(r.id, ())),
            r.controller_host,
            r.controller_pid,
            r.started_at,
            r.finished_at,
            r.heartbeat_at,
            r.end_reason,
        )
        for r in runs
    ]
