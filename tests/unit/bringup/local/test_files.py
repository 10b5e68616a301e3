"""bringup.local.files: whole files or nothing."""

from __future__ import annotations

import fcntl
import os

import pytest

from bringup.core.errors import UserError
from bringup.local import files
from bringup.local.files import atomic_write


def test_atomic_write_replaces_whole_and_keeps_the_mode(tmp_path):
    path = tmp_path / "golden.hosts"
    atomic_write(path, "a slots=8\n")
    os.chmod(path, 0o640)
    atomic_write(path, "b slots=8\n")
    assert path.read_text() == "b slots=8\n" and (path.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["golden.hosts"]
    atomic_write(tmp_path / "new" / "dir" / "list", "x\n")
    assert (tmp_path / "new" / "dir" / "list").read_text() == "x\n"


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "golden.hosts"
    path.write_text("old slots=8\n")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, "new slots=8\n")
    assert path.read_text() == "old slots=8\n"
    assert [p.name for p in tmp_path.iterdir()] == ["golden.hosts"]


def test_an_unwritable_path_is_a_user_error_naming_the_file(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be\n")
    with pytest.raises(files.WriteError) as err:
        atomic_write(blocker / "golden.hosts", "x\n")
    assert isinstance(err.value, UserError) and isinstance(err.value, OSError)
    assert str(err.value).startswith(f"cannot write {blocker / 'golden.hosts'}: ")
    assert isinstance(err.value.__cause__, OSError)


def test_flocked_excludes_a_second_holder_until_released(tmp_path):
    lock = tmp_path / "sub" / "x.lock"
    with files.flocked(lock):
        assert lock.exists()
        fd = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again
    finally:
        os.close(fd)
