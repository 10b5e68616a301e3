"""A provision run claims its nodes like any run: one that another live run holds (a burn-in, a
configure) is refused before anything is powered or recorded, and the run's ending is recorded."""

from __future__ import annotations

import pytest

from bringup.fleet import runs
from bringup.provision.orchestrator import Orchestrator
from tests.unit.bringup.provision.test_orchestrator import FakeBackend, discover, env, selection, states

__all__ = ["env"]  # the fixture, used by name


def test_a_provision_run_refuses_nodes_another_run_holds(env):
    _, inv, store = env
    discover(store)
    holder = runs.start_run(store, "burnin", "r01", nodes=["gpu002"])
    backend = FakeBackend()
    before = states(store)
    with pytest.raises(runs.NodesBusy, match=f"gpu002 is held by burnin run {holder.id}"):
        Orchestrator(store, backend, rack="r01").run(selection(inv, store).targets, {})
    assert backend.batches == [] and states(store) == before  # nothing powered, nothing moved


def test_a_provision_run_releases_its_claims_however_it_ends(env):
    _, inv, store = env
    discover(store)
    orch = Orchestrator(store, FakeBackend(), rack="r01")
    orch.run(selection(inv, store, only=["gpu001"]).targets, {})
    run = store.get_run(orch.run_id)
    assert run.status == "ok" and run.controller_pid is not None
    assert runs.holders(store) == []
