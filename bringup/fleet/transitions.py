"""Lifecycle moves of many nodes in one transaction: ``transition_many``.

``FleetStore.transition`` is one transaction per move; a burn-in of 1,000 nodes moved each into
``burnin`` and wrote each closing event on its own, and ``burnin golden`` recorded each node
entering golden on its own. Here a batch of moves (and plain events beside them) is one
transaction with the same rules as one move: the nodes are read under a row lock (PostgreSQL
``SELECT ... FOR UPDATE``, in id order so two batches cannot deadlock; SQLite's ``BEGIN
IMMEDIATE``), each move is checked against the state under that lock (bringup.fleet.lifecycle),
and each one made is an Event with its reason, actor, run id and details.

A move the lifecycle refuses (another process moved the node meanwhile), or one naming a node
the store does not have, is REFUSED, not raised: it is returned with the error naming node,
state and the allowed moves, and every other move of the batch is still made. Moves of one node
apply in the order given, each from the state the previous one left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from bringup.fleet.lifecycle import IllegalTransition, State, is_allowed, parse_state
from bringup.fleet.models import Event, Node
from bringup.fleet.store import FleetStore, NodeNotFound, StoreError, default_actor


@dataclass(frozen=True)
class Transition:
    """One node to move: what ``FleetStore.transition`` takes."""

    node: str  # inventory name or serial
    target: State | str
    reason: str
    run_id: int | None = None
    details: dict[str, Any] | None = None


@dataclass(frozen=True)
class Note:
    """A plain event (not a move) written in the same transaction: what ``record_event`` takes."""

    node: str
    kind: str
    reason: str
    run_id: int | None = None
    details: dict[str, Any] | None = None


@dataclass
class Moved:
    """What became of one move: its event, or why it was refused; ``state`` is the node's state
    after the batch as this move saw it (the state it stayed in when refused)."""

    move: Transition
    event: Event | None
    state: str = ""
    error: str = ""

    @property
    def done(self) -> bool:
        return self.event is not None


def transition_many(
    store: FleetStore,
    moves: Sequence[Transition],
    *,
    notes: Sequence[Note] = (),
    actor: str | None = None,
    updates: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Moved]:
    """Make ``moves`` and write ``notes`` in one transaction; one ``Moved`` per move, in order.
    ``updates``: node -> plain fields to set first in the same transaction (what
    ``FleetStore.update_node`` sets: hardware, serial...; never the state).

    A refused move (illegal from the node's state under the lock, or an unknown node) is
    returned with its error and the others are made. A bad target state (BadInput), a note or
    an update for an unknown node (NodeNotFound) or an update of a field nodes do not have
    (StoreError) writes nothing: those are the caller's mistakes."""
    targets = [parse_state(m.target) for m in moves]  # a bad state name: nothing is written
    if any(n.kind == "transition" for n in notes):
        raise StoreError("transitions are recorded by transition_many's moves, not its notes")
    updates = updates or {}
    for fields in updates.values():
        for name in fields:
            if name == "state" or not hasattr(Node, name):
                raise StoreError(f"transition_many cannot set a node's {name!r}")
    if not moves and not notes and not updates:
        return []
    actor = actor or default_actor()
    keys = sorted({m.node for m in moves} | {n.node for n in notes} | set(updates))
    with store.session() as s:
        nodes = _locked(s, keys)
        missing = sorted(({n.node for n in notes} | set(updates)) - nodes.keys())
        if missing:
            raise NodeNotFound(
                f"no node {missing[0]!r} in the fleet store (enrolled by inventory name or serial)"
            )
        for key, fields in updates.items():
            for name, value in fields.items():
                setattr(nodes[key], name, value)
        out = []
        for move, target in zip(moves, targets, strict=True):
            node = nodes.get(move.node)
            if node is None:
                out.append(Moved(move, None, "", f"no node {move.node!r} in the fleet store"))
                continue
            current = parse_state(node.state)
            if not is_allowed(current, target):
                out.append(
                    Moved(move, None, current.value, str(IllegalTransition(node.key, current, target)))
                )
                continue
            node.state = target.value
            event = _event(s, node, "transition", move.reason, actor, move.run_id, move.details)
            event.from_state, event.to_state = current.value, target.value
            out.append(Moved(move, event, target.value))
        for note in notes:
            _event(s, nodes[note.node], note.kind, note.reason, actor, note.run_id, note.details)
        return out


def states_of(store: FleetStore, keys: Iterable[str]) -> dict[str, str]:
    """Each node's state by the key asked (inventory name or serial), in one query; a key no
    node has is absent."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    stmt = select(Node).where(or_(Node.name.in_(keys), Node.serial.in_(keys)))
    with store.reading() as s:
        found = list(s.execute(stmt).scalars())
    by_key = {n.serial: n.state for n in found if n.serial} | {n.name: n.state for n in found}
    return {k: by_key[k] for k in keys if k in by_key}


def _locked(s: Session, keys: Sequence[str]) -> dict[str, Node]:
    """The nodes named by inventory name or serial, read under their row locks in id order."""
    stmt = select(Node).where(or_(Node.name.in_(keys), Node.serial.in_(keys))).order_by(Node.id)
    found = list(s.execute(stmt.with_for_update()).scalars())
    return {n.serial: n for n in found if n.serial} | {n.name: n for n in found}


def _event(
    s: Session,
    node: Node,
    kind: str,
    reason: str,
    actor: str,
    run_id: int | None,
    details: dict[str, Any] | None,
) -> Event:
    event = Event(
        node_id=node.id, run_id=run_id, kind=kind, reason=reason, actor=actor, details=details or {}
    )
    s.add(event)
    return event
