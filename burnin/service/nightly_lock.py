"""One nightly per rack at a time, across controllers: a PostgreSQL advisory lock, or a file lock
beside the SQLite store.

The run ledger's claims are not enough on their own: a nightly reads Slurm and picks its nodes
before it can claim them, and two nights picking different golden nodes to revalidate would not
collide on a claim. The lock is taken first, held until the night has given its nodes back, and
dies with its holder (the advisory lock with its session, the flock with its process): a
SIGKILLed nightly never leaves it held.
"""

from __future__ import annotations

import fcntl
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url

from bringup.core.errors import UserError
from bringup.fleet.store import FleetStore


class NightlyBusy(UserError):
    """Another nightly holds the rack."""


def lock_key(rack: str) -> int:
    """The rack's advisory-lock key: a stable signed 32-bit number."""
    return zlib.crc32(f"bringup nightly {rack}".encode()) - 2**31


def lock_file(store_url: str, rack: str) -> Path:
    """The SQLite store's lock file for this rack, beside the database file."""
    database = make_url(store_url).database or ""
    if not database or database == ":memory:":
        raise UserError("the nightly needs a fleet store on disk (a SQLite file or PostgreSQL)")
    return Path(f"{database}.nightly-{rack}.lock")


def _busy(rack: str, holder: str = "") -> NightlyBusy:
    return NightlyBusy(
        f"another nightly of rack {rack} is running{holder}; this one refuses. "
        "It ends by itself; `burnin runs` shows it"
    )


@contextmanager
def nightly_lock(store: FleetStore, rack: str) -> Iterator[None]:
    """Hold the rack's nightly lock for the block, or raise NightlyBusy at once."""
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect() as conn:
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": lock_key(rack)}).scalar()
            conn.commit()
            if not got:
                raise _busy(rack)
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": lock_key(rack)})
                conn.commit()
        return
    path = lock_file(store.url, rack)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            raise _busy(rack, f" ({holder})" if holder else "") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock
