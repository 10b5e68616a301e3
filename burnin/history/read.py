"""The store edge of the history signals: a rack's (or the fleet's) events and the results that
carry signals (FAIL verdicts, kernel_log's Xid counts) over a window, in a fixed number of
queries per 500 nodes; then the pure ``signals.node_signals`` per node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select

from bringup.fleet.models import CheckResult, Event, utcnow
from bringup.fleet.store import FleetStore
from burnin.history.signals import KERNEL_CHECK, NodeSignals, node_signals
from burnin.stages.group import stage_components

_CHUNK = 500


@dataclass
class FleetHistory:
    """Every node's signals over [start, end], with the node records they came from."""

    rack: str | None
    start: datetime
    end: datetime
    nodes: dict[str, Any]  # name -> bringup.fleet.models.Node
    signals: dict[str, NodeSignals]


def read_signals(
    store: FleetStore, rack: str | None, window: timedelta, now: datetime | None = None
) -> FleetHistory:
    end = now or utcnow()
    start = end - window
    nodes = {n.id: n for n in store.list_nodes(rack=rack)}
    events: dict[int, list[Event]] = {}
    results: dict[int, list[CheckResult]] = {}
    ids = list(nodes)
    with store.reading() as s:
        for i in range(0, len(ids), _CHUNK):
            chunk: Sequence[int] = ids[i : i + _CHUNK]
            for ev in s.execute(
                select(Event)
                .where(Event.node_id.in_(chunk), Event.time >= start, Event.time <= end)
                .order_by(Event.id)
            ).scalars():
                events.setdefault(ev.node_id, []).append(ev)
            for r in s.execute(
                select(CheckResult)
                .where(
                    CheckResult.node_id.in_(chunk),
                    CheckResult.time >= start,
                    CheckResult.time <= end,
                    or_(CheckResult.verdict == "FAIL", CheckResult.check == KERNEL_CHECK),
                )
                .order_by(CheckResult.id)
            ).scalars():
                results.setdefault(r.node_id, []).append(r)
    components = stage_components()
    signals = {
        n.name: node_signals(
            n.name,
            events.get(node_id, []),
            results.get(node_id, []),
            start,
            end,
            current=n.state,
            enrolled=n.created_at,
            hardware=n.hardware,
            components=components,
        )
        for node_id, n in nodes.items()
    }
    return FleetHistory(rack, start, end, {n.name: n for n in nodes.values()}, signals)
