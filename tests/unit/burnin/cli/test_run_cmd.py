"""`burnin run` refuses bad input before it records anything, and a run on nodes another live run
holds refuses with the holder named."""

from __future__ import annotations

from bringup.fleet import runs
from bringup.fleet.models import Run
from tests.unit.burnin.golden.test_rules import RACK, FleetRack


def run_count(fleet: FleetRack) -> int:
    with fleet.store.reading() as s:
        return s.query(Run).count()


def test_a_bad_set_starts_no_run_and_moves_no_node(tmp_path):
    """Before: the run record was opened (and the first node moved to burnin) before --set was
    read, so a typo left a run `running` for ever."""
    fleet = FleetRack(tmp_path)
    fleet.store.transition("gpu001", "failed", "test setup")
    fleet.store.transition("gpu001", "repair", "test setup")
    res = fleet.run("run", "--rack", RACK, "--stages", "preflight", "--set", "diag.stress_minutes=[")
    assert res.exit_code != 0 and "--set diag.stress_minutes" in res.output
    assert run_count(fleet) == 0
    assert fleet.store.get_node("gpu001").state == "repair"


def test_a_run_on_held_nodes_refuses_naming_the_holder(tmp_path):
    fleet = FleetRack(tmp_path)
    holder = runs.start_run(fleet.store, "configure", RACK, nodes=["gpu002"])
    res = fleet.run("run", "--rack", RACK, "--nodes", "gpu001,gpu002", "--stages", "preflight")
    assert res.exit_code == 1, res.output
    assert f"gpu002 is held by configure run {holder.id}" in res.output
    assert "--wait" in res.output and f"burnin runs abort {holder.id}" in res.output
    assert run_count(fleet) == 1


def test_wait_takes_a_duration(tmp_path):
    fleet = FleetRack(tmp_path)
    res = fleet.run("run", "--rack", RACK, "--stages", "preflight", "--wait", "soon")
    assert res.exit_code == 2 and "--wait" in res.output


def test_wait_says_what_it_waits_for_then_refuses_when_the_bound_runs_out(tmp_path):
    fleet = FleetRack(tmp_path)
    holder = runs.start_run(fleet.store, "configure", RACK, nodes=["gpu002"])
    res = fleet.run("run", "--rack", RACK, "--nodes", "gpu002", "--stages", "preflight", "--wait", "1s")
    assert res.exit_code == 1, res.output
    assert f"waiting: gpu002 is held by configure run {holder.id}" in res.stderr
    assert f"gpu002 is held by configure run {holder.id}" in res.output.split("waiting:")[-1]
