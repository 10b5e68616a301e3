"""Putting fleet-store nodes where a test needs them."""

from __future__ import annotations

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore

HAPPY_PATH = (
    State.ENROLLED,
    State.DISCOVERED,
    State.PROVISIONING,
    State.PROVISIONED,
    State.CONFIGURED,
    State.BURNIN,
    State.GOLDEN,
)


def walk_to(
    store: FleetStore, name: str, target: State | str, reason: str = "test setup", actor: str | None = None
) -> None:
    """Move ``name`` from its state along the happy path to ``target``, one legal move at a time."""
    current = HAPPY_PATH.index(State(store.get_node(name).state))
    for state in HAPPY_PATH[current + 1 : HAPPY_PATH.index(State(target)) + 1]:
        store.transition(name, state, reason, actor=actor)
