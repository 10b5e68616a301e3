"""History written with its own dates: a node's past imported from another system (a ticket
tracker, an older inventory tool) or simulated (``benchmarks/lemons.py``), through the store's
own API so every rule of it still holds (legal transitions only, a golden node's FAIL result
fails it), each event then dated to when it happened.

The store stamps an event with the time it is written; ``DatedWriter`` moves the events one call
wrote, and only those (the node's events newer than before the call), to the date given, in one
more transaction. It is for back-filling history, not for live commands: those happen now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import func, select, update

from bringup.core.errors import UserError
from bringup.fleet.lifecycle import State
from bringup.fleet.models import CheckResult, Event, Node
from bringup.fleet.store import FleetStore

T = TypeVar("T")


class UndatedTime(UserError, ValueError):
    """A date without a time zone: the store keeps UTC-aware times."""


class DatedWriter:
    """The store's writes, each dated: ``enroll``, ``transition``, ``record_event``, ``add_result``."""

    def __init__(self, store: FleetStore):
        self.store = store

    @contextmanager
    def at(self, key: str, when: datetime) -> Iterator[None]:
        """Events of node ``key`` written inside the block happened at ``when``."""
        if when.tzinfo is None:
            raise UndatedTime(f"{key}: {when.isoformat()} has no time zone (give UTC-aware times)")
        with self.store.reading() as s:
            node_id = s.execute(select(Node.id).where(Node.name == key)).scalar()
            last = s.execute(select(func.max(Event.id))).scalar() or 0
        yield
        with self.store.session() as s:
            if node_id is None:  # enrolled inside the block
                node_id = s.execute(select(Node.id).where(Node.name == key)).scalar_one()
                s.execute(update(Node).where(Node.id == node_id).values(created_at=when))
            s.execute(update(Event).where(Event.node_id == node_id, Event.id > last).values(time=when))

    def _dated(self, key: str, when: datetime, write: Callable[[], T]) -> T:
        with self.at(key, when):
            return write()

    def enroll(self, name: str, rack: str, profile: str, when: datetime, **kw: Any) -> Node:
        """Enrolled at ``when`` (its enrolment event and ``created_at``)."""
        node, _ = self._dated(name, when, lambda: self.store.enroll(name, rack, profile, **kw))
        return node

    def transition(self, key: str, target: str | State, reason: str, when: datetime, **kw: Any) -> Event:
        return self._dated(key, when, lambda: self.store.transition(key, target, reason, **kw))

    def record_event(self, key: str, kind: str, reason: str, when: datetime, **kw: Any) -> Event:
        return self._dated(key, when, lambda: self.store.record_event(key, kind, reason, **kw))

    def add_result(
        self, key: str, stage: str, check: str, verdict: str, when: datetime, **kw: Any
    ) -> CheckResult:
        """A result at ``when``; a golden node it fails leaves golden at ``when`` too."""
        return self._dated(
            key, when, lambda: self.store.add_result(key, stage, check, verdict, time=when, **kw)
        )
