"""bringup.files: whole files or nothing."""

from __future__ import annotations

import os

import pytest

from bringup import files
from bringup.files import atomic_write


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
