"""Files shared between processes: written so that a reader, or a crash, never sees half of
one (``atomic_write``), and held so that two processes never build one at once (``flocked``)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bringup.core.errors import UserError


class WriteError(UserError, OSError):
    """A file could not be written (a read-only or missing directory, a full disk)."""


@contextlib.contextmanager
def flocked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` (created if needed); released on exit or crash."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Write the whole file or nothing: a temp file in the same directory, fsync, rename, so a
    reader sees the old list or the new one, never half of one. ``WriteError`` if it cannot."""
    path = Path(path)
    try:
        _write(path, text)
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
