"""`bringup configure` before Ansible runs: which nodes it refuses, and why (no lab needed)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bringup.cli.main import main
from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from tests.fleet import walk_to
from tests.inventories import write_rack


def make_rack(tmp_path: Path) -> tuple[Path, Path]:
    hosts = {f"gpu{i}": {"bmc_address": f"10.0.0.{i}", "rack_unit": i} for i in (1, 2, 3)}
    return write_rack(tmp_path / "inventories", "r09", hosts), tmp_path / "fleet.db"


def run(inv: Path, db: Path, *args: str):
    return CliRunner().invoke(main, ["--db", str(db), "--inventory-dir", str(inv), "configure", *args])


def test_refuses_when_no_node_may_be_configured(tmp_path):
    inv, db = make_rack(tmp_path)
    store = FleetStore.open(str(db))
    store.enroll("gpu1", "r09", "h100-sxm-8x400g", rack_unit=1)
    store.enroll("gpu2", "r09", "h100-sxm-8x400g", rack_unit=2)
    walk_to(store, "gpu2", State.GOLDEN, "test")
    result = run(inv, db, "--rack", "r09", "--json")
    assert result.exit_code == 4, result.output  # refused by the gate (README, "Exit codes")
    summary = json.loads(result.output[: result.output.rindex("}") + 1])
    by_node = {n["node"]: n for n in summary["nodes"]}
    assert by_node["gpu1"]["message"] == "enrolled: not discovered yet: run `bringup discover` first"
    assert "--force" in by_node["gpu2"]["message"] and by_node["gpu2"]["state"] == "golden"
    assert "enroll it" in by_node["gpu3"]["message"]
    assert "no node of rack r09 can be configured" in result.output
    assert store.list_nodes(rack="r09")[0].state == "enrolled"  # nothing moved
    assert not [r for r in _runs(store)]  # and no run was started


def _runs(store):
    from sqlalchemy import select

    from bringup.fleet.models import Run

    with store.reading() as s:
        return list(s.execute(select(Run)).scalars())


def test_rejects_unknown_tags_and_nodes(tmp_path):
    inv, db = make_rack(tmp_path)
    bad_tag = run(inv, db, "--rack", "r09", "--tags", "base,nvidia-driver")
    assert bad_tag.exit_code == 2 and "unknown role(s) nvidia-driver" in bad_tag.output
    bad_node = run(inv, db, "--rack", "r09", "--nodes", "gpu1,gpu7")
    assert bad_node.exit_code == 2 and "not in rack r09: gpu7" in bad_node.output
    bad_batch = run(inv, db, "--rack", "r09", "--batch", "0")
    assert bad_batch.exit_code == 2
