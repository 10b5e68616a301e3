"""The nightly's lifecycle writes were one transaction per node (each tested node into
burnin, each back to golden, each drained/resumed/not-run event); now one per step of the night,
on a real store. A move refused because the node is elsewhere is returned, the others made."""

from __future__ import annotations

import pytest

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from burnin.service.nightly_moves import ACTOR, EVENT, back_to_golden, into_burnin, note, write_events
from tests.fleet import walk_to
from tests.writes import write_transactions


@pytest.fixture
def store(store_url):
    store = FleetStore(store_url)
    for name, state in (
        ("n1", State.GOLDEN),
        ("n2", State.GOLDEN),
        ("n3", State.BURNIN),
        ("n4", State.GOLDEN),
    ):
        store.enroll(name, "r01", "h100-sxm-8x400g")
        walk_to(store, name, state)
    store.transition("n2", State.FAILED, "test")
    store.transition("n2", State.REPAIR, "repaired")
    store.transition("n4", State.RETIRED, "decommissioned", actor="operator")  # since the plan read it
    yield store
    store.close()


def moves(store: FleetStore, name: str, run_id: int) -> list[tuple[str, str, str]]:
    return [(e.from_state, e.to_state, e.actor) for e in store.history(name) if e.run_id == run_id]


def test_the_tested_nodes_move_into_burnin_in_one_transaction_and_a_refused_one_is_returned(store):
    run = store.start_run("nightly", "r01")
    with write_transactions(store) as writes:
        refused = into_burnin(store, run.id, ["n1", "n2", "n3", "n4"])
    assert len(writes) == 1, writes
    assert list(refused) == ["n4"] and "retired" in refused["n4"]
    assert moves(store, "n1", run.id) == [("golden", "burnin", ACTOR)]
    assert moves(store, "n2", run.id) == [("repair", "burnin", ACTOR)]
    assert moves(store, "n3", run.id) == []  # already in burnin: no move
    assert store.get_node("n4").state == "retired"
    assert store.history("n1")[-1].reason == f"nightly run {run.id}: re-test"


def test_the_nodes_that_passed_go_back_to_golden_in_one_transaction(store):
    run = store.start_run("nightly", "r01")
    into_burnin(store, run.id, ["n1", "n2"])
    store.transition("n2", State.FAILED, "an operator failed it during the night", actor="operator")
    with write_transactions(store) as writes:
        moved = back_to_golden(store, run.id, ["n1", "n2", "n3"], ["preflight", "gpu"])
    assert len(writes) == 1, writes
    assert moved == ["n1", "n3"]
    assert [store.get_node(n).state for n in ("n1", "n2", "n3")] == ["golden", "failed", "golden"]
    assert store.history("n3")[-1].reason == f"nightly run {run.id}: preflight,gpu passed"


def test_a_steps_events_are_one_transaction(store):
    run = store.start_run("nightly", "r01")
    events = [note(n, f"drained for nightly run {run.id}", run.id) for n in ("n1", "n2", "n3")]
    with write_transactions(store) as writes:
        write_events(store, events)
        write_events(store, [])  # nothing to write: no transaction
    assert len(writes) == 1, writes
    for name in ("n1", "n2", "n3"):
        last = store.history(name)[-1]
        assert (last.kind, last.reason, last.actor, last.run_id) == (
            EVENT,
            f"drained for nightly run {run.id}",
            ACTOR,
            run.id,
        )
