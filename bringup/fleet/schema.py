"""The fleet store's schema version: Alembic revisions in ``migrations/versions``, applied on open.

Revisions are numbered ``0001``, ``0002``, ... and chained one after another, so the head is the
highest number among the file names: opening a store that is already current costs one small
query and does not import Alembic at all. A store made before Alembic (a ``meta`` table with
schema_version 1 and no ``alembic_version``) is stamped ``0001`` and upgraded from there.

Every upgrade runs in one transaction (both engines have transactional DDL), so a failed
migration leaves the store as it was. On SQLite, foreign keys are off while it runs: Alembic's
batch mode rebuilds a table by copying it, and dropping the old copy must not cascade.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import Connection, inspect, text

from bringup.core.errors import UserError

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


class SchemaError(UserError, RuntimeError):
    """The store's schema is newer than this bringup, foreign, or a migration failed."""


def known_revisions() -> list[str]:
    """The revision ids this bringup ships, oldest first (from the file names)."""
    return sorted(
        m.group(1) for p in (MIGRATIONS_DIR / "versions").iterdir() if (m := _REVISION_FILE.match(p.name))
    )


def head() -> str:
    return known_revisions()[-1]


def current_revision(conn: Connection) -> str | None:
    """The store's revision: None for an empty database, ``0001`` for a pre-Alembic store."""
    tables = set(inspect(conn).get_table_names())
    if "alembic_version" in tables:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    if "meta" in tables:
        legacy = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
        if legacy == "1":
            return "0001"
        raise SchemaError(f"the store's schema_version is {legacy!r} but it has no Alembic revision")
    if "nodes" in tables:
        raise SchemaError("database has bringup tables but no schema version; refusing to guess")
    return None


def upgrade(conn: Connection, where: str) -> str | None:
    """Bring the store on ``conn`` (inside its transaction) to the head revision.

    Returns the revision it started from when it upgraded, None when it was current.
    ``where`` names the store in messages (its URL without the password).
    """
    target = head()
    current = current_revision(conn)
    if current == target:
        return None
    if current is not None and current not in known_revisions():
        raise SchemaError(
            f"fleet store {where} has schema revision {current}, newer than this bringup understands "
            f"({target}); upgrade bringup instead of using an older one"
        )
    from alembic import command  # imported only when there is something to do: it is slow
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = conn
    if current == "0001" and not inspect(conn).has_table("alembic_version"):
        command.stamp(config, "0001")
    try:
        command.upgrade(config, target)
    except UserError:
        raise
    except Exception as exc:
        raise SchemaError(
            f"upgrading fleet store {where} from {current or 'empty'} to {target} failed: {exc}"
        ) from exc
    return current or "empty"
