"""The fleet database holds the whole fleet's history (BMC addresses, serials,
findings): created by the tool, it and its directory are for its owner only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from bringup.fleet.store import FleetStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_database_and_directory_are_owner_only(tmp_path: Path):
    old = os.umask(0o022)  # the usual umask, under which the file used to come out 0644
    try:
        db_dir = tmp_path / "data" / "bringup"
        store = FleetStore.open(str(db_dir / "fleet.db"))
        store.enroll("gpu001", "r01", "h100-sxm-8x400g", bmc_address="10.0.0.1", rack_unit=1)
        open_files = {f.name: _mode(f) for f in db_dir.iterdir()}  # -wal and -shm exist while open
        store.close()
    finally:
        os.umask(old)
    assert _mode(db_dir) == 0o700
    assert _mode(db_dir.parent) == 0o700  # every directory the tool created
    assert {"fleet.db", "fleet.db-wal", "fleet.db-shm"} <= set(open_files)
    assert open_files == dict.fromkeys(open_files, 0o600), open_files


def test_existing_database_mode_is_left_alone(tmp_path: Path):
    db = tmp_path / "fleet.db"
    FleetStore.open(str(db)).close()
    db.chmod(0o640)  # the operator's choice (a group that reads reports)
    FleetStore.open(str(db)).close()
    assert _mode(db) == 0o640


def test_existing_directory_mode_is_left_alone(tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    FleetStore.open(str(shared / "fleet.db")).close()
    assert _mode(shared) == 0o755
