"""Runs that end, one run per node, pinned SSH host keys, the latest-result index.

- runs: how a run ended (status, end_reason) and whose it is (controller host and pid, a
  heartbeat), so a run whose controller died is found and marked abandoned;
- claims: one row per node held by a running run (the primary key makes a second claim fail);
- nodes.ssh_host_keys: the keys the node's installer reported, to connect to nothing else;
- check_results: (node_id, stage, check, id) so the newest result per check is an index range.

Runs left ``running`` by an older bringup stay as they are: they have no controller or
heartbeat, and the run ledger treats such a run as abandoned when it next looks.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("nodes") as t:
        t.add_column(sa.Column("ssh_host_keys", sa.JSON, nullable=False, server_default="[]"))
    with op.batch_alter_table("runs") as t:
        t.add_column(sa.Column("end_reason", sa.Text))
        t.add_column(sa.Column("controller_host", sa.String(256)))
        t.add_column(sa.Column("controller_pid", sa.Integer))
        t.add_column(sa.Column("heartbeat_at", UTC))
        t.create_index("ix_runs_status", ["status"])
    op.create_table(
        "claims",
        sa.Column("node_id", sa.Integer, sa.ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("claimed_at", UTC, nullable=False),
    )
    op.create_index("ix_claims_run_id", "claims", ["run_id"])
    with op.batch_alter_table("check_results") as t:
        t.drop_index("ix_results_node_check")
        t.create_index("ix_results_latest", ["node_id", "stage", "check", "id"])
    # An older bringup reads this row and refuses the store by name ("newer than this bringup
    # understands") instead of failing on a missing column. It stays at 2: Alembic keeps the
    # revision from here on.
    op.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("the fleet store only moves forward; restore a backup to go back")
