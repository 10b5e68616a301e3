"""`bringup store prune`: drop the raw evidence of old results, keep what was concluded.

A result older than the cut-off loses its evidence (the link to its blob; ``evidence_pruned_at``
says when, so wherever evidence is shown it says it was pruned); its verdict, metrics and
findings stay, and so do events and runs. A blob no other result points at is deleted. A run's
own output (Ansible's) older than the cut-off is replaced by a line saying it was pruned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, delete, exists, func, select, update

from bringup.core.errors import BadInput
from bringup.fleet.evidence import pruned_note
from bringup.fleet.models import CheckResult, EvidenceBlob, Run, utcnow
from bringup.fleet.store import FleetStore

_AGE = re.compile(r"^\s*(\d+)\s*([wdh])\s*$", re.IGNORECASE)
_UNIT = {"w": timedelta(weeks=1), "d": timedelta(days=1), "h": timedelta(hours=1)}


def parse_older_than(text: str) -> timedelta:
    """'180d', '26w', '48h' -> timedelta; anything else (or zero) is BadInput."""
    m = _AGE.match(text)
    if not m or int(m.group(1)) == 0:
        raise BadInput(
            f"--older-than {text!r}: give a positive whole number of weeks, days or hours (180d, 26w, 48h)"
        )
    return int(m.group(1)) * _UNIT[m.group(2).lower()]


@dataclass(frozen=True)
class PruneOutcome:
    cutoff: datetime
    results: int  # results whose evidence was (or would be) dropped
    blobs: int  # blobs deleted (no result points at them any more)
    stored_bytes: int  # compressed bytes those blobs held
    raw_bytes: int  # what they held uncompressed
    runs: int  # runs whose own output was dropped
    run_bytes: int
    dry_run: bool


def prune(
    store: FleetStore, older_than: timedelta, *, dry_run: bool = False, now: datetime | None = None
) -> PruneOutcome:
    """Drop the evidence of results (and runs) from before ``now - older_than``; with
    ``dry_run``, only say what would go. One transaction: all of it or none."""
    if older_than <= timedelta(0):
        raise ValueError("the age to prune from must be positive")
    now = now or utcnow()
    cutoff = now - older_than
    old = and_(CheckResult.time < cutoff, CheckResult.evidence_id.is_not(None))
    # a blob a younger result still points at stays
    kept = exists().where(CheckResult.evidence_id == EvidenceBlob.id, CheckResult.time >= cutoff)
    with store.session() as s:
        results = s.execute(select(func.count()).select_from(CheckResult).where(old)).scalar_one()
        freed = select(EvidenceBlob.id).where(
            EvidenceBlob.id.in_(select(CheckResult.evidence_id).where(old)), ~kept
        )
        blobs, stored, raw = s.execute(
            select(
                func.count(),
                func.coalesce(func.sum(func.length(EvidenceBlob.data)), 0),
                func.coalesce(func.sum(EvidenceBlob.size), 0),
            ).where(EvidenceBlob.id.in_(freed))
        ).one()
        old_runs = and_(
            Run.started_at < cutoff, Run.evidence.is_not(None), ~Run.evidence.startswith("(evidence pruned")
        )
        runs, run_bytes = s.execute(
            select(func.count(), func.coalesce(func.sum(func.length(Run.evidence)), 0)).where(old_runs)
        ).one()
        if not dry_run:
            ids = list(s.execute(freed).scalars())
            s.execute(
                update(CheckResult).where(old).values(evidence_id=None, evidence_pruned_at=now),
                execution_options={"synchronize_session": False},
            )
            for i in range(0, len(ids), 500):
                s.execute(delete(EvidenceBlob).where(EvidenceBlob.id.in_(ids[i : i + 500])))
            s.execute(
                update(Run).where(old_runs).values(evidence=pruned_note(now)),
                execution_options={"synchronize_session": False},
            )
    return PruneOutcome(cutoff, results, blobs, int(stored), int(raw), runs, int(run_bytes), dry_run)
