"""Errors of the fleet store, and which database errors are the user's to fix.

A database error is a bug here (a broken constraint, a bad query) unless the store's own state
explains it: a file that is no database or is damaged, one this user may not write, a full disk,
an unreachable server. Those are ``StoreError``s (a ``UserError``: one line, exit 1) that name the
store, its password removed, and say what to do (README.md, "Exit codes").
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, OperationalError

from bringup.core.errors import UserError


class StoreError(UserError, RuntimeError):
    """The store cannot be opened or used (bad URL, newer schema, unknown node)."""


def redact_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - never let a bad URL leak through an error message
        return "<unparseable database URL>"


# What the database says when the fault is the store's, not this program's: a file that is no
# database or is damaged, one this user may not write, a full disk. Each with what to do.
_RESTORE = "restore it from a backup, or give --db another store"
_STORE_FAULTS = (
    ("file is not a database", f"is not a database (damaged, or another file): {_RESTORE}"),
    (
        "database disk image is malformed",
        f"is damaged (database disk image is malformed): {_RESTORE} "
        "(sqlite3 FILE .recover may save what is left)",
    ),
    (
        "readonly database",
        "is read-only here: let this user write the file and its directory, or give --db a store it can write",
    ),
    (
        "read-only transaction",
        "is read-only here (a PostgreSQL standby or a read-only role): give --db the primary",
    ),
    (
        "unable to open database file",
        "cannot be opened: its directory must exist and be writable, or give --db another store",
    ),
    (
        "database or disk is full",
        "could not be written: the disk is full; free space and run the command again",
    ),
    (
        "could not extend file",
        "could not be written: the database server's disk is full; free space and run the command again",
    ),
    (
        "disk i/o error",
        "could not be read or written (disk I/O error): check the disk, then run the command again",
    ),
)


def store_fault(url: str, exc: DBAPIError, opening: bool = False) -> StoreError | None:
    """The error to show the user for a database error the store's state explains, or None for
    one that is a bug here (a constraint broken, a bad query)."""
    text = str(exc.orig).strip()
    lowered = text.lower()
    for needle, what in _STORE_FAULTS:
        if needle in lowered:
            return StoreError(f"fleet store {redact_url(url)} {what}")
    if isinstance(exc, OperationalError):  # DB-API: the database's operation, not the program
        first = text.splitlines()[0] if text else type(exc.orig).__name__
        return StoreError(f"{'cannot open ' if opening else ''}fleet store {redact_url(url)}: {first}")
    return None
