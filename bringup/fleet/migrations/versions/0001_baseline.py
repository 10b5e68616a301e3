"""The schema as the hand-rolled migrations left it (schema_version 1).

A store made before Alembic has exactly these tables and a ``meta`` row schema_version=1; it is
stamped at this revision and upgraded from here. The tables are spelled out, not taken from
models.py, so this revision stays what it was when the models change.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(256), nullable=False),
    )
    op.create_table(
        "nodes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("serial", sa.String(128), unique=True),
        sa.Column("rack", sa.String(128), nullable=False),
        sa.Column("profile", sa.String(128), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("bmc_address", sa.String(256)),
        sa.Column("bmc_vendor", sa.String(32)),
        sa.Column("rack_unit", sa.Integer),
        sa.Column("hostname", sa.String(256)),
        sa.Column("ip", sa.String(64)),
        sa.Column("macs", sa.JSON, nullable=False),
        sa.Column("hardware", sa.JSON, nullable=False),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("updated_at", UTC, nullable=False),
    )
    op.create_index("ix_nodes_rack", "nodes", ["rack"])
    op.create_index("ix_nodes_state", "nodes", ["state"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("rack", sa.String(128)),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("evidence", sa.Text),
        sa.Column("started_at", UTC, nullable=False),
        sa.Column("finished_at", UTC),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("node_id", sa.Integer, sa.ForeignKey("nodes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id")),
        sa.Column("time", UTC, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("from_state", sa.String(32)),
        sa.Column("to_state", sa.String(32)),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("details", sa.JSON, nullable=False),
    )
    op.create_index("ix_events_node_id", "events", ["node_id"])
    op.create_table(
        "check_results",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id")),
        sa.Column("node_id", sa.Integer, sa.ForeignKey("nodes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("stage", sa.String(32), nullable=False),
        sa.Column("check", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("findings", sa.JSON, nullable=False),
        sa.Column("evidence", sa.Text),
        sa.Column("time", UTC, nullable=False),
    )
    op.create_index("ix_check_results_run_id", "check_results", ["run_id"])
    op.create_index("ix_results_node_check", "check_results", ["node_id", "stage", "check"])
    op.bulk_insert(
        sa.table("meta", sa.column("key", sa.String), sa.column("value", sa.String)),
        [{"key": "schema_version", "value": "1"}],
    )


def downgrade() -> None:
    raise NotImplementedError("the fleet store only moves forward; restore a backup to go back")
