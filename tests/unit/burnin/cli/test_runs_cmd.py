"""`burnin runs` lists runs and how each ended; `burnin runs abort N` ends one."""

from __future__ import annotations

import json
import subprocess

from sqlalchemy import update

from bringup.fleet import runs
from bringup.fleet.models import Run
from tests.unit.burnin.golden.test_rules import RACK, FleetRack


def test_runs_lists_state_nodes_controller_and_marks_abandoned_ones(tmp_path):
    fleet = FleetRack(tmp_path)
    done = runs.start_run(fleet.store, "burnin", RACK, nodes=["gpu001"], params={"nodes": ["gpu001"]})
    runs.end_run(fleet.store, done.id, "failed")
    gone = runs.start_run(fleet.store, "burnin", RACK, nodes=["gpu002"], params={"nodes": ["gpu002"]})
    child = subprocess.Popen(["true"])
    child.wait()
    with fleet.store.session() as s:
        s.execute(update(Run).where(Run.id == gone.id).values(controller_pid=child.pid))
    live = runs.start_run(fleet.store, "configure", RACK, nodes=["gpu003", "gpu004"])

    res = fleet.run("runs", "--rack", RACK, "--json")
    assert res.exit_code == 0, res.output
    shown = {r["id"]: r for r in json.loads(res.stdout)}
    assert [r["id"] for r in json.loads(res.stdout)] == [live.id, gone.id, done.id]  # newest first
    assert shown[done.id]["status"] == "failed" and shown[done.id]["nodes"] == ["gpu001"]
    assert shown[gone.id]["status"] == "abandoned" and "is gone" in shown[gone.id]["end_reason"]
    assert shown[live.id]["status"] == "running" and shown[live.id]["held"] == ["gpu003", "gpu004"]
    assert shown[live.id]["controller"] == {"host": runs.this_host(), "pid": live.controller_pid}

    res = fleet.run("runs", "--rack", RACK)
    assert res.exit_code == 0, res.output
    for word in ("running", "abandon", "failed", "gpu002"):  # (a narrow terminal folds long cells)
        assert word in res.stdout, res.stdout
    assert json.loads(fleet.run("runs", "--rack", "elsewhere", "--json").stdout) == []


def test_abort_ends_a_run_and_frees_its_nodes(tmp_path):
    fleet = FleetRack(tmp_path)
    run = runs.start_run(fleet.store, "burnin", RACK, nodes=["gpu001"])
    res = fleet.run("runs", "abort", str(run.id), "--reason", "stuck on a dead switch")
    assert res.exit_code == 0, res.output
    assert f"burnin run {run.id} aborted" in res.stderr and "stuck on a dead switch" in res.stderr
    assert fleet.store.get_run(run.id).status == "aborted"
    (event,) = [e for e in fleet.store.history("gpu001") if e.kind == "run-aborted"]
    assert "stuck on a dead switch" in event.reason
    assert runs.holders(fleet.store) == []
    res = fleet.run("runs", "abort", str(run.id), "--reason", "again")
    assert res.exit_code == 1 and "already ended: aborted" in res.output
    assert fleet.run("runs", "abort", str(run.id)).exit_code == 2  # --reason is required
