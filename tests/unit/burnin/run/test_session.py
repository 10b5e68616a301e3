"""Burn-in runs as library calls: the gate decides which nodes start, refusals come back as
skipped outcomes (nothing is sent to them), and bad requests are errors a user can fix."""

from __future__ import annotations

import pytest

from bringup.core.errors import BadInput
from bringup.fleet.lifecycle import State
from bringup.fleet.select import UnknownNodes, select
from burnin.run import session
from burnin.run.session import LocalRunRequest, RackRunRequest, run_local, run_rack
from tests.unit.burnin.golden.test_rules import RACK, FleetRack


def test_a_golden_node_is_skipped_without_force_and_nothing_runs(tmp_path):
    fleet = FleetRack(tmp_path)
    fleet.store.transition("gpu002", State.GOLDEN, "test setup")
    request = RackRunRequest(RACK, ["preflight"], nodes=["gpu002"])
    (outcome,) = run_rack(fleet.store, fleet.dir, request)
    assert outcome.node == "gpu002" and not outcome.stages
    assert "golden" in outcome.skipped and "--force" in outcome.skipped
    assert fleet.store.get_node("gpu002").state == State.GOLDEN.value  # not moved to burnin


def test_unknown_nodes_are_refused_before_anything_is_recorded(tmp_path):
    fleet = FleetRack(tmp_path)
    with pytest.raises(UnknownNodes, match="nope"):
        run_rack(fleet.store, fleet.dir, RackRunRequest(RACK, ["preflight"], nodes=["nope"]))


def test_a_local_run_on_a_failed_node_is_refused(tmp_path):
    fleet = FleetRack(tmp_path)
    fleet.store.transition("gpu003", State.FAILED, "test setup")
    with pytest.raises(BadInput, match="gpu003 cannot start a burn-in"):
        run_local(fleet.store, fleet.dir / "profiles", LocalRunRequest(["preflight"], node="gpu003"))


def test_a_local_run_needs_a_profile_or_a_node(tmp_path):
    with pytest.raises(BadInput, match="--profile"):
        run_local(None, tmp_path, LocalRunRequest(["preflight"]))


def test_a_node_moved_after_the_gate_is_skipped_with_why_and_the_others_enter_burnin(tmp_path, monkeypatch):
    """The moves into burnin are one transaction (one per node before). A node another
    process moved after the gate admitted it is refused there, under the lock: it comes back
    skipped with the refusal, and the others still enter burn-in and run."""
    fleet = FleetRack(tmp_path)
    for name in ("gpu001", "gpu002", "gpu003"):
        fleet.store.transition(name, State.FAILED, "test setup")
        fleet.store.transition(name, State.REPAIR, "test setup")

    def select_then_operator(*args, **kwargs):
        selection = select(*args, **kwargs)
        fleet.store.transition("gpu003", State.RETIRED, "decommissioned", actor="operator")
        return selection

    monkeypatch.setattr(session, "select", select_then_operator)
    request = RackRunRequest(RACK, [], nodes=["gpu001", "gpu002", "gpu003"])
    outcomes = {o.node: o for o in run_rack(fleet.store, fleet.dir, request)}
    assert outcomes["gpu003"].skipped == (
        "could not enter burn-in: node gpu003: illegal transition retired -> burnin "
        "(from retired the allowed moves are: none)"
    )
    assert fleet.store.get_node("gpu003").state == "retired"
    for name in ("gpu001", "gpu002"):
        assert not outcomes[name].skipped and outcomes[name].final_state == "burnin"
        moved = [e for e in fleet.store.history(name) if e.to_state == "burnin"][-1]
        assert moved.from_state == "repair" and moved.reason.startswith("burn-in run ")
        assert moved.run_id is not None


A100_40 = [{"slot": f"PCI-E Slot {i}", "model": "NVIDIA A100-SXM4-40GB"} for i in range(1, 9)]


def test_a_node_whose_bmc_lists_other_gpus_than_its_profile_is_refused_naming_both(tmp_path):
    """docs/platforms.md, "Profile from discovery": from the rack and with --local --node."""
    fleet = FleetRack(tmp_path)
    fleet.store.update_node("gpu002", hardware={"gpus": A100_40})
    (outcome,) = run_rack(fleet.store, fleet.dir, RackRunRequest(RACK, ["preflight"], nodes=["gpu002"]))
    assert outcome.skipped.startswith(
        "node gpu002: the BMC lists 8 x NVIDIA A100-SXM4-40GB; its profile h100-sxm-8x400g expects"
    )
    assert not outcome.stages
    with pytest.raises(BadInput, match="its profile h100-sxm-8x400g expects 8 x NVIDIA H100 80GB HBM3"):
        run_local(fleet.store, fleet.dir / "profiles", LocalRunRequest(["preflight"], node="gpu002"))
