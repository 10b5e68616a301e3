"""`bringup lab down --name` removes only what a lab made. Before the fix it removed whatever the
name pointed at, as root: a directory's path (and the directory beside it named `-files`), `..`
(the checkout it ran in), '' (every lab's state); and it left the rack's inventory behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.lab import cli as lab_cli
from bringup.lab.naming import check_lab_name
from bringup.lab.rack import render_inventory
from bringup.lab.state import (
    DEMO_FILES,
    LabNode,
    LabState,
    known_labs,
    remove_lab_inventory,
    teardown_refusals,
)

PXE_STATE = "pxe-lab.json"


def down(*args: str, cwd: Path | None = None):
    return CliRunner().invoke(main, ["lab", "down", *args])


def victims(base: Path) -> list[Path]:
    made = [base / "victim", base / "victim-files", base / "checkout", base / "lab"]
    for d in made:
        d.mkdir(parents=True, exist_ok=True)
        (d / "keep.txt").write_text("mine\n")
    return made


@pytest.mark.parametrize(
    "name",
    ["", "..", ".", "VICTIM", "victim/..", "../victim", "a/b", "-rf", "x" * 41, "lab\n", " lab"],
)
def test_a_name_the_lab_cannot_have_made_is_refused_and_nothing_removed(tmp_path, name):
    made = victims(tmp_path)
    name = str(tmp_path / "victim") if name == "VICTIM" else name
    res = down("--name", name, "--lab-dir", str(tmp_path / "checkout" / ".lab"))
    assert res.exit_code == 2 and "--name" in res.output, res.output
    assert "internal error" not in res.output
    assert all((d / "keep.txt").exists() for d in made)


@pytest.mark.parametrize("name", ["lab", "demo", "d1a2b3c", "c0ffee12", "rack-01", "my_lab", "L" * 40])
def test_names_a_lab_may_have(name):
    assert check_lab_name(name) == name


def _lab_json(state_dir: Path, name: str) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "lab.json").write_text(json.dumps({"name": name}))


def test_a_directory_no_lab_made_is_refused(tmp_path):
    root = tmp_path / "lab"
    (root / "data").mkdir(parents=True)
    (root / "data" / "thesis.tex").write_text("x")
    (why,) = teardown_refusals(root, "data", PXE_STATE)
    assert str(root / "data") in why and "lab.json" in why
    _lab_json(root / "other", "someone-else")
    (why,) = teardown_refusals(root, "other", PXE_STATE)
    assert "someone-else" in why
    _lab_json(root / "mine", "mine")
    assert teardown_refusals(root, "mine", PXE_STATE) == []
    assert teardown_refusals(root, "absent", PXE_STATE) == []


def test_the_demo_files_and_the_pxe_state_only_when_the_lab_made_them(tmp_path):
    root = tmp_path / "lab"
    files = root / "demo-files"
    files.mkdir(parents=True)
    for entry in ("fleet.db", "golden.hostfile", "report.html"):
        (files / entry).write_text("x")
    (files / "inventories").mkdir()
    assert teardown_refusals(root, "demo", PXE_STATE) == []
    (files / "notes.md").write_text("mine")
    (why,) = teardown_refusals(root, "demo", PXE_STATE)
    assert str(files) in why and "notes.md" in why
    (files / "notes.md").unlink()
    (root / "demo-pxe").mkdir()
    assert teardown_refusals(root, "demo", PXE_STATE) == []  # empty: nothing of anyone's in it
    (root / "demo-pxe" / "vms.log").write_text("x")
    (why,) = teardown_refusals(root, "demo", PXE_STATE)
    assert "demo-pxe" in why and PXE_STATE in why
    (root / "demo-pxe" / PXE_STATE).write_text(json.dumps({"name": "demo-pxe"}))
    assert teardown_refusals(root, "demo", PXE_STATE) == []


def test_demo_files_name_what_the_demo_writes():
    from bringup.lab.demo import Demo

    demo = Demo("demo", 2, Path("f.yml"), 0)
    assert {demo.db.name, demo.inventory_dir.name} <= DEMO_FILES


def _state(tmp_path: Path, inventory: Path) -> LabState:
    state_dir = tmp_path / "lab" / "r1"
    state_dir.mkdir(parents=True)
    return LabState(
        name="r1",
        run_id="abcdef",
        prefix="blabcdef",
        state_dir=str(state_dir),
        inventory=str(inventory),
        created_at="2026-01-01T00:00:00+00:00",
        ssh_key=str(state_dir / "id_ed25519"),
        nodes=[LabNode("node01", 0, "10.0.0.2", "02:00:00:00:00:00", "S1", "u", "http://10.1.0.2:8000")],
    )


def test_lab_down_removes_the_inventory_the_lab_wrote_and_no_other(tmp_path):
    inventory = tmp_path / "inventories" / "r1.yml"
    inventory.parent.mkdir()
    state = _state(tmp_path, inventory)
    inventory.write_text(render_inventory(state, inventory, Path(state.state_dir) / "bmc-password", "p"))
    assert remove_lab_inventory(state) == [str(inventory)] and not inventory.exists()
    inventory.write_text("all:\n  hosts: {}\n")  # the operator's own rack of that name
    assert remove_lab_inventory(state) == [] and inventory.exists()


def test_cli_refuses_a_foreign_directory_before_taking_anything_down(tmp_path, monkeypatch):
    monkeypatch.setattr(lab_cli.os, "geteuid", lambda: 0)
    root = tmp_path / "lab"
    (root / "data").mkdir(parents=True)
    (root / "data" / "thesis.tex").write_text("x")
    res = down("--name", "data", "--lab-dir", str(root))
    assert res.exit_code == 1 and "internal error" not in res.output, res.output
    (line,) = [x for x in res.output.splitlines() if x.startswith("error:")]
    assert str(root / "data") in line and (root / "data" / "thesis.tex").exists()


def test_known_labs_are_the_directories_with_a_lab_state(tmp_path):
    root = tmp_path / "lab"
    _lab_json(root / "a", "a")
    _lab_json(root / "b", "b")
    (root / "c").mkdir()
    assert known_labs(root) == ["a", "b"]
    assert known_labs(tmp_path / "none") == []


def test_lab_demo_refuses_a_foreign_directory_before_its_clean_up(tmp_path, monkeypatch):
    """The demo takes down the last demo of its name first: a directory no lab made stays."""
    monkeypatch.setattr(lab_cli.os, "geteuid", lambda: 0)
    root = tmp_path / "lab"
    (root / "data").mkdir(parents=True)
    (root / "data" / "thesis.tex").write_text("x")
    res = CliRunner().invoke(
        main, ["lab", "demo", "--name", "data", "--lab-dir", str(root), "--pxe-vms", "0"]
    )
    assert res.exit_code == 1 and "nothing removed" in res.output, res.output
    assert (root / "data" / "thesis.tex").exists()
