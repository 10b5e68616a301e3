"""Burn-in runs as library calls: the gate decides which nodes start, refusals come back as
skipped outcomes (nothing is sent to them), and bad requests are errors a user can fix."""

from __future__ import annotations

import pytest

from bringup.errors import BadInput
from bringup.fleet.lifecycle import State
from bringup.select import UnknownNodes
from burnin.session import LocalRunRequest, RackRunRequest, run_local, run_rack
from tests.unit.burnin.test_golden import RACK, FleetRack


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
