"""The nightly's store writes, one transaction per step of the night rather than one per node
(at fleet size): the tested nodes into ``burnin``, the ones that passed back to ``golden``, and the
night's events (drained, skipped, not run, resumed, kept drained).

``bringup.fleet.transitions.transition_many`` makes them under the nodes' row locks: a move the
lifecycle refuses because another process moved the node after the nightly read it is returned
with its error, not raised, and every other node's move is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from bringup.fleet.transitions import Note, Transition, states_of, transition_many

ACTOR = "burnin nightly"
EVENT = "nightly"


def note(node: str, reason: str, run_id: int | None = None, details: dict | None = None) -> Note:
    """One nightly event, to write with the others of its step (``write_events``)."""
    return Note(node, EVENT, reason, run_id, details)


def write_events(store: FleetStore, events: Sequence[Note]) -> None:
    """The step's events in one transaction."""
    if events:
        transition_many(store, [], notes=events, actor=ACTOR)


def into_burnin(store: FleetStore, run_id: int, names: Sequence[str]) -> dict[str, str]:
    """Move the tested nodes that are not in ``burnin`` into it, in one transaction; returns the
    refused ones, name -> why (the nightly skips them and tests the others)."""
    states = states_of(store, names)
    moves = [
        Transition(n, State.BURNIN, f"nightly run {run_id}: re-test", run_id)
        for n in names
        if states.get(n) != State.BURNIN.value
    ]
    return {m.move.node: m.error for m in transition_many(store, moves, actor=ACTOR) if not m.done}


def back_to_golden(store: FleetStore, run_id: int, passed: Sequence[str], stages: Sequence[str]) -> list[str]:
    """The nodes whose stages all passed and that are still in ``burnin`` move to ``golden``, in
    one transaction; returns those moved. A node someone moved meanwhile stays where they put it."""
    states = states_of(store, passed)
    moves = [
        Transition(n, State.GOLDEN, f"nightly run {run_id}: {','.join(stages)} passed", run_id)
        for n in passed
        if states.get(n) == State.BURNIN.value
    ]
    return [m.move.node for m in transition_many(store, moves, actor=ACTOR) if m.done]
