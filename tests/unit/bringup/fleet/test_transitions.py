"""transition_many: many nodes' lifecycle moves in one transaction, with one move's rules.

A burn-in of 1,000 nodes wrote one transaction per node for the move into ``burnin`` and one per
closing event, and ``burnin golden`` one per move. A batch must keep what ``transition`` promised:
legal moves only (checked under the lock), each an event with reason, actor, run id and details;
and a refused move must not lose the others.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event, func, select

from bringup.core.errors import BadInput
from bringup.fleet.lifecycle import State
from bringup.fleet.models import Event
from bringup.fleet.store import FleetStore, NodeNotFound, StoreError
from bringup.fleet.transitions import Note, Transition, states_of, transition_many
from tests.fleet import walk_to


def _store(url: str, states: dict[str, State]) -> FleetStore:
    store = FleetStore(url)
    for name, state in states.items():
        store.enroll(name, "r01", "p")
        walk_to(store, name, state)
    return store


def _events(store: FleetStore) -> int:
    with store.reading() as s:
        return s.execute(select(func.count()).select_from(Event)).scalar_one()


def _commits(store: FleetStore) -> list[int]:
    seen: list[int] = []
    event.listen(store.engine, "commit", lambda conn: seen.append(1))
    return seen


def test_a_batch_is_one_transaction_and_each_move_is_an_event_with_its_reason(store_url):
    store = _store(store_url, {f"gpu{i}": State.CONFIGURED for i in range(1, 6)})
    run = store.start_run("burnin", "r01")
    commits = _commits(store)
    moves = [Transition(f"gpu{i}", State.BURNIN, f"run {run.id}", run.id, {"i": i}) for i in range(1, 6)]
    moved = transition_many(store, moves, actor="tester")
    assert len(commits) == 1
    assert [m.done for m in moved] == [True] * 5 and [m.state for m in moved] == ["burnin"] * 5
    for i in range(1, 6):
        assert store.get_node(f"gpu{i}").state == "burnin"
        last = store.history(f"gpu{i}")[-1]
        assert (last.kind, last.from_state, last.to_state) == ("transition", "configured", "burnin")
        assert (last.reason, last.actor, last.run_id, last.details) == (
            f"run {run.id}",
            "tester",
            run.id,
            {"i": i},
        )
    assert moved[0].event.id == store.history("gpu1")[-1].id


def test_a_refused_move_is_returned_with_why_and_the_others_are_made(store_url):
    store = _store(store_url, {"gpu1": State.BURNIN, "gpu2": State.CONFIGURED, "gpu3": State.BURNIN})
    before = _events(store)
    moved = transition_many(
        store,
        [
            Transition("gpu1", State.GOLDEN, "passed"),
            Transition("gpu2", State.GOLDEN, "passed"),  # configured -> golden is illegal
            Transition("gpu9", State.GOLDEN, "passed"),  # not in the store
            Transition("gpu3", State.FAILED, "failed"),
        ],
    )
    assert [m.done for m in moved] == [True, False, False, True]
    assert moved[1].event is None and moved[1].state == "configured"
    assert moved[1].error == (
        "node gpu2: illegal transition configured -> golden "
        "(from configured the allowed moves are: burnin, failed, provisioning, retired)"
    )
    assert "no node 'gpu9'" in moved[2].error
    assert [store.get_node(n).state for n in ("gpu1", "gpu2", "gpu3")] == ["golden", "configured", "failed"]
    assert _events(store) == before + 2  # the refused moves wrote nothing


def test_moves_of_one_node_apply_in_order_and_a_serial_names_its_node(store_url):
    store = _store(store_url, {"gpu1": State.CONFIGURED})
    store.update_node("gpu1", serial="SN-1")
    moved = transition_many(
        store,
        [
            Transition("SN-1", State.BURNIN, "start"),
            Transition("gpu1", State.FAILED, "a check failed"),
            Transition("gpu1", State.GOLDEN, "too late"),  # from failed: refused
        ],
    )
    assert [(m.done, m.state) for m in moved] == [(True, "burnin"), (True, "failed"), (False, "failed")]
    assert [(e.from_state, e.to_state) for e in store.history("gpu1")[-2:]] == [
        ("configured", "burnin"),
        ("burnin", "failed"),
    ]
    assert states_of(store, ["SN-1", "gpu1", "nope"]) == {"SN-1": "failed", "gpu1": "failed"}


def test_notes_are_written_beside_the_moves_in_the_same_transaction(store_url):
    store = _store(store_url, {"gpu1": State.BURNIN, "gpu2": State.BURNIN})
    commits = _commits(store)
    moved = transition_many(
        store,
        [Transition("gpu1", State.FAILED, "stage s1 failed")],
        notes=[Note("gpu2", "burnin", "stages s1: PASS", None, {"s1": "PASS"})],
        actor="runner",
    )
    assert len(commits) == 1 and moved[0].done
    note = store.history("gpu2")[-1]
    assert (note.kind, note.reason, note.actor, note.details) == (
        "burnin",
        "stages s1: PASS",
        "runner",
        {"s1": "PASS"},
    )
    assert note.from_state is None and store.get_node("gpu2").state == "burnin"


def test_the_callers_mistakes_write_nothing(store_url):
    store = _store(store_url, {"gpu1": State.CONFIGURED})
    before = _events(store)
    good = Transition("gpu1", State.BURNIN, "start")
    with pytest.raises(BadInput, match="unknown node state 'goldn'"):
        transition_many(store, [good, Transition("gpu1", "goldn", "typo")])
    with pytest.raises(NodeNotFound, match="gpu9"):
        transition_many(store, [good], notes=[Note("gpu9", "burnin", "x")])
    with pytest.raises(StoreError, match="moves, not its notes"):
        transition_many(store, [good], notes=[Note("gpu1", "transition", "x")])
    assert _events(store) == before and store.get_node("gpu1").state == "configured"
    assert transition_many(store, []) == []


def test_two_batches_moving_the_same_node_at_once_cannot_both_succeed(store_url):
    """The state is re-read under the lock: of two writers moving configured -> burnin, one wins."""
    store = _store(store_url, {f"gpu{i}": State.CONFIGURED for i in range(1, 21)})
    moves = [Transition(f"gpu{i}", State.BURNIN, "start") for i in range(1, 21)]
    results: list[list] = []
    barrier = threading.Barrier(2)

    def writer() -> None:
        other = FleetStore(store_url)
        barrier.wait()
        results.append(transition_many(other, moves))
        other.close()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = [sum(m.done for m in r) for r in results]
    assert sorted(done) == [0, 20], done  # one batch made every move, the other was refused each
    loser = next(r for r in results if not any(m.done for m in r))
    assert all("illegal transition burnin -> burnin" in m.error for m in loser)
    transitions = [e for e in store.history("gpu7") if e.to_state == "burnin"]
    assert len(transitions) == 1


def test_updates_are_set_in_the_same_transaction_and_mistakes_write_nothing(store_url):
    """configure's record step sets each node's software versions beside its move or event."""
    store = _store(store_url, {"gpu1": State.PROVISIONED, "gpu2": State.CONFIGURED})
    commits = _commits(store)
    software = {"software": {"packages": {"nvidia-driver": "550.90.07"}, "run": 3}}
    moved = transition_many(
        store,
        [Transition("gpu1", State.CONFIGURED, "configure run 3: 4 change(s)")],
        notes=[Note("gpu2", "configure", "configure run 3: 0 change(s)")],
        updates={"gpu1": {"hardware": software}, "gpu2": {"hardware": software, "hostname": "gpu2.lab"}},
    )
    assert len(commits) == 1 and moved[0].done
    assert store.get_node("gpu1").hardware == software and store.get_node("gpu1").state == "configured"
    assert (store.get_node("gpu2").hardware, store.get_node("gpu2").hostname) == (software, "gpu2.lab")
    before = _events(store)
    with pytest.raises(StoreError, match="cannot set a node's 'state'"):
        transition_many(store, [], updates={"gpu1": {"state": "golden"}})
    with pytest.raises(StoreError, match="'colour'"):
        transition_many(store, [], updates={"gpu1": {"colour": "red"}})
    with pytest.raises(NodeNotFound, match="gpu9"):
        transition_many(store, [Transition("gpu1", State.BURNIN, "x")], updates={"gpu9": {"hostname": "x"}})
    assert _events(store) == before and store.get_node("gpu1").state == "configured"
