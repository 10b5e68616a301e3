"""An index for a rack's latest transitions: (node_id, kind, to_state, id) on events.

`burnin golden` and the reports read, per node, the newest transition and the newest
transition to golden (bringup/fleet/reads.py): max(id) grouped by node over kind =
'transition' [and to_state = 'golden']. With this index both are index-only range scans; with
the node_id index alone every event of the rack's nodes is read. node_id leads the new index,
so the old single-column one goes.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_events_node_kind", "events", ["node_id", "kind", "to_state", "id"])
    op.drop_index("ix_events_node_id", table_name="events")


def downgrade() -> None:
    raise NotImplementedError("the fleet store only moves forward; restore a backup to go back")
