"""`bringup lab down --name N` on a real lab: it removes the lab, its state and the rack inventory
`lab up` wrote (left behind before), and nothing beside them: a directory of the operator's next
to the lab state, and a name that is a path, are left alone."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from bringup.lab import network
from bringup.lab.naming import LabNames
from bringup.lab.rack import run_id_for
from tests.lab.conftest import require_root

pytestmark = pytest.mark.lab

BIN = Path(sys.executable).parent


def bringup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "bringup"), *args], capture_output=True, text=True, timeout=600)


def test_lab_down_removes_what_the_lab_made_and_nothing_else(tmp_path: Path) -> None:
    require_root()
    name = f"k{uuid.uuid4().hex[:7]}"
    lab_dir, inv = tmp_path / "lab", tmp_path / "inventories"
    mine = lab_dir / "notes"  # the operator's, beside the lab's state
    mine.mkdir(parents=True)
    (mine / "keep.txt").write_text("mine\n")
    common = ["--inventory-dir", str(inv), "lab"]
    try:
        up = bringup(*common, "up", "--nodes", "1", "--name", name, "--lab-dir", str(lab_dir))
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        assert (inv / f"{name}.yml").is_file()
        refused = bringup(*common, "down", "--name", str(lab_dir / name), "--lab-dir", str(lab_dir))
        assert refused.returncode == 2 and (lab_dir / name / "lab.json").is_file(), refused.stderr
        foreign = bringup(*common, "down", "--name", "notes", "--lab-dir", str(lab_dir))
        assert foreign.returncode == 1 and "nothing removed" in foreign.stderr, foreign.stderr
    finally:
        down = bringup(*common, "down", "--name", name, "--lab-dir", str(lab_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    assert not (inv / f"{name}.yml").exists(), "lab down left the rack's inventory behind"
    assert not (lab_dir / name).exists()
    assert (mine / "keep.txt").read_text() == "mine\n"
    assert network.netns_names(LabNames(run_id_for(name)).prefix) == []
