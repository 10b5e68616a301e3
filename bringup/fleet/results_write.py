"""A wave of check results into the store, inside the caller's transaction: their evidence
stored once per distinct output (bringup.fleet.evidence), the rows in one INSERT.

At 1,000 nodes a preflight writes some 16,000 results; built as ORM objects and flushed by the
unit of work they cost the controller more CPU than the SQL itself, so the rows go
in as plain dicts, one executemany. A caller that wants the saved rows back (``as_objects``:
one node's few results) gets ORM objects instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from bringup.fleet import evidence
from bringup.fleet.models import CheckResult, utcnow


def write_results(
    session: Session,
    batches: Sequence[tuple[int, Sequence[dict[str, Any]]]],
    run_id: int | None,
    as_objects: bool = False,
) -> list[CheckResult]:
    """Save each (node id, its result rows); the new CheckResults when ``as_objects``, else []."""
    texts = [r.get("evidence") for _, rows in batches for r in rows]
    blob_ids = iter(evidence.store_texts(session, texts, {}))
    now = utcnow()
    values = [
        {
            "run_id": run_id,
            "node_id": node_id,
            "stage": row["stage"],
            "check": row["check"],
            "verdict": row["verdict"],
            "metrics": row.get("metrics") or {},
            "findings": list(row.get("findings") or ()),
            "evidence_id": next(blob_ids),
            "time": row.get("time") or now,
        }
        for node_id, rows in batches
        for row in rows
    ]
    if as_objects:
        objects = [CheckResult(**v) for v in values]
        session.add_all(objects)
        return objects
    if values:
        session.execute(insert(CheckResult.__table__), values)
    return []
