"""Evidence stored once per distinct output, compressed, apart from the results.

- evidence_blobs: one row per distinct text (sha256 unique), zlib-compressed;
- check_results.evidence_id points at its blob; check_results.evidence_pruned_at says when
  `bringup store prune` dropped it;
- every existing check_results.evidence moves into blobs (in batches, so a store with years of
  history is never read into memory at once), then the column goes.

Blobs are written with the codec spelled out here (zlib, level 6), not through
bringup/fleet/evidence.py, so this revision stays what it was if that module changes.
"""

from __future__ import annotations

import hashlib
import zlib

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BATCH = 500


def upgrade() -> None:
    op.create_table(
        "evidence_blobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("codec", sa.String(16), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    with op.batch_alter_table("check_results") as t:
        t.add_column(sa.Column("evidence_id", sa.Integer, nullable=True))
        t.add_column(sa.Column("evidence_pruned_at", sa.DateTime(timezone=True), nullable=True))
    _move_evidence(op.get_bind())
    with op.batch_alter_table("check_results") as t:
        t.drop_column("evidence")
        t.create_foreign_key("fk_check_results_evidence_id", "evidence_blobs", ["evidence_id"], ["id"])
        t.create_index("ix_check_results_evidence_id", ["evidence_id"])


def _move_evidence(conn: sa.Connection) -> None:
    results = sa.table(
        "check_results", sa.column("id", sa.Integer), sa.column("evidence", sa.Text), sa.column("evidence_id")
    )
    blobs = sa.table(
        "evidence_blobs",
        sa.column("id", sa.Integer),
        sa.column("sha256", sa.String),
        sa.column("size", sa.Integer),
        sa.column("codec", sa.String),
        sa.column("data", sa.LargeBinary),
    )
    known: dict[str, int] = {}  # sha256 -> blob id (a hash and an int per distinct output)
    last = 0
    while True:
        rows = conn.execute(
            sa.select(results.c.id, results.c.evidence)
            .where(results.c.id > last, results.c.evidence.is_not(None))
            .order_by(results.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        links = []
        for result_id, text in rows:
            raw = text.encode("utf-8", "surrogatepass")
            key = hashlib.sha256(raw).hexdigest()
            if key not in known:
                known[key] = conn.execute(
                    blobs.insert()
                    .values(sha256=key, size=len(raw), codec="zlib", data=zlib.compress(raw, 6))
                    .returning(blobs.c.id)
                ).scalar_one()
            links.append({"rid": result_id, "bid": known[key]})
        conn.execute(
            results.update()
            .where(results.c.id == sa.bindparam("rid"))
            .values(evidence_id=sa.bindparam("bid")),
            links,
        )
        last = rows[-1][0]


def downgrade() -> None:
    raise NotImplementedError("the fleet store only moves forward; restore a backup to go back")
