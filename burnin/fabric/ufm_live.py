"""The I/O edge of ``burnin fabric ufm-events``: the event log file, the cabling plan, and the
ib stage's results (a results file, or the store's newest result of each node the log's cables
reach), then the pure judgement (burnin/fabric/ufm.py). A problem with an input is a ``UfmError``
or ``PlanError`` naming it.
"""

from __future__ import annotations

import json
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bringup.fleet.store import FleetStore
from burnin.fabric.plan import Plan, load_plan
from burnin.fabric.ufm import CleanLoad, UfmError, UfmReport, clean_loads, judge_events, parse_ufm_events


def zone_of(name: str | None) -> tzinfo:
    """The zone UFM's timestamps are in (they carry none): UTC unless named ('America/Los_Angeles')."""
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UfmError(f"--tz {name}: not a time zone name ({exc})") from None


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UfmError(f"{path}: cannot read the {what}: {exc}") from None


def loads_from_file(path: Path) -> list[CleanLoad]:
    """A results file: a JSON list of ``{node, check, time, metrics}`` (one store row each)."""
    try:
        rows = json.loads(_read(path, "ib-stage results"))
    except json.JSONDecodeError as exc:
        raise UfmError(f"{path}: not a JSON list of results: {exc}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise UfmError(f"{path}: not a JSON list of results")
    return clean_loads(rows)


def loads_from_store(store: FleetStore, nodes: set[str]) -> list[CleanLoad]:
    """The newest ib-stage result of each of ``nodes`` the store knows (others are skipped)."""
    known = {n.name for n in store.list_nodes()}
    rows: list[dict[str, Any]] = []
    for node in sorted(nodes & known):
        rows += [
            {"node": node, "check": r.check, "time": r.time, "metrics": r.metrics}
            for r in store.latest_results(node)
        ]
    return clean_loads(rows)


def ufm_report(
    events: Path,
    plan_path: Path | None,
    results: Path | None,
    store: FleetStore | None,
    *,
    zone: str | None = None,
    flaps: int = 3,
    window_s: int = 600,
) -> UfmReport:
    plan: Plan | None = load_plan(plan_path) if plan_path else None
    parsed = parse_ufm_events(
        _read(events, "UFM event log"), str(events), plan.switch_by_guid() if plan else {}, zone_of(zone)
    )
    loads = loads_from_file(results) if results else []
    if store is not None:
        first = judge_events(parsed, plan, flaps=flaps, window_s=window_s)
        nodes = {c.hca_end.device for c in first.cases if c.hca_end is not None}
        loads += loads_from_store(store, nodes)
    return judge_events(parsed, plan, loads, flaps=flaps, window_s=window_s)
