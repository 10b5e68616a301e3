"""The fleet-wide circuit breaker (docs/in-service.md, "The circuit breaker"):

- breakers: one row per (partition, check), locked by every drain that consults it; tripped_at
  set while it holds drains, reset_at/reset_by from `burnin breaker reset`;
- breaker_drains: each drain allowed or held, with its node and time, indexed for the window.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "breakers",
        sa.Column("partition", sa.String(128), primary_key=True),
        sa.Column("check", sa.String(64), primary_key=True),
        sa.Column("tripped_at", UTC),
        sa.Column("reset_at", UTC),
        sa.Column("reset_by", sa.String(128)),
    )
    op.create_table(
        "breaker_drains",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("partition", sa.String(128), nullable=False),
        sa.Column("check", sa.String(64), nullable=False),
        sa.Column("node", sa.String(128), nullable=False),
        sa.Column("at", UTC, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
    )
    op.create_index("ix_breaker_drains_window", "breaker_drains", ["partition", "check", "at"])


def downgrade() -> None:
    raise NotImplementedError("the fleet store only moves forward; restore a backup to go back")
