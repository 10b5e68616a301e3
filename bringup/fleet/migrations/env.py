"""Alembic's environment for the fleet store.

The store runs the migrations itself (``bringup.fleet.schema.upgrade``) and hands over its open
connection, inside the transaction it holds. Run by hand (``alembic -c
bringup/fleet/migrations/alembic.ini ...``, e.g. to write a new revision), it connects to
``BRINGUP_DB`` or the default store the way every command does.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from bringup.fleet.models import Base
from bringup.fleet.store import resolve_db_url

config = context.config
connection = config.attributes.get("connection")


def _run(conn) -> None:  # noqa: ANN001 - a SQLAlchemy Connection
    # render_as_batch: SQLite alters a table by copying it; Alembic's batch mode does that.
    context.configure(connection=conn, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    _run(connection)
else:
    with create_engine(resolve_db_url()).connect() as conn:
        _run(conn)
        conn.commit()
