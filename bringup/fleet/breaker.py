"""The circuit breaker's records in the fleet store: where the drains of every node meet.

A node about to drain for a check asks ``pass_drain`` first. In one transaction it locks the
breaker's row of (partition, check) (PostgreSQL: ``SELECT ... FOR UPDATE`` on a row made by an
``INSERT ... ON CONFLICT DO NOTHING``; SQLite: the store's ``BEGIN IMMEDIATE`` takes the write
lock up front), counts the distinct nodes drained for that check in the window since the last
reset, and lets the caller's rule decide (burnin/service/breaker.py, passed in: the store does
not judge). So a thousand nodes failing at once are decided one after another, each seeing the
drains before it, and no more than the cap get through. A tripped breaker holds every later
drain of that check until ``reset`` (docs/in-service.md, "The circuit breaker").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from bringup.fleet.models import Breaker, BreakerDrain, utcnow
from bringup.fleet.store import FleetStore, StoreError, default_actor

DRAINED = "drained"
HELD = "held"


@dataclass(frozen=True)
class Passage:
    """What the breaker said to one drain."""

    allowed: bool
    drained_in_window: int  # distinct nodes drained for the check in the window, before this one
    tripped_now: bool = False  # this drain tripped it
    tripped_at: datetime | None = None


@dataclass(frozen=True)
class BreakerState:
    partition: str
    check: str
    tripped_at: datetime | None
    reset_at: datetime | None
    reset_by: str | None
    drained: int  # distinct nodes drained for it since the last reset (or ever)
    held: int  # distinct nodes held since it tripped

    @property
    def tripped(self) -> bool:
        return self.tripped_at is not None


def _locked_breaker(s: Session, partition: str, check: str) -> Breaker:
    dialect = s.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    s.execute(insert(Breaker).values(partition=partition, check=check).on_conflict_do_nothing())
    stmt = (
        select(Breaker)
        .where(Breaker.partition == partition, Breaker.check == check)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return s.execute(stmt).scalar_one()


def _drained_nodes(s: Session, partition: str, check: str, since: datetime | None) -> set[str]:
    stmt = select(BreakerDrain.node).where(
        BreakerDrain.partition == partition, BreakerDrain.check == check, BreakerDrain.outcome == DRAINED
    )
    if since is not None:
        stmt = stmt.where(BreakerDrain.at >= since)
    return set(s.execute(stmt.distinct()).scalars())


def pass_drain(
    store: FleetStore,
    partition: str,
    check: str,
    node: str,
    *,
    window_s: float,
    allow: Callable[[int], bool],
    now: datetime | None = None,
) -> Passage:
    """May ``node`` drain for ``check``? ``allow(drained_in_window)`` is the rule; the drain is
    recorded (drained or held) in the same transaction that counted, under the breaker's lock."""
    with store.session() as s:
        breaker = _locked_breaker(s, partition, check)
        now = now or utcnow()  # read under the lock, so the decisions' times are in their order
        since = now - timedelta(seconds=window_s)
        if breaker.reset_at is not None and breaker.reset_at > since:
            since = breaker.reset_at
        drained = _drained_nodes(s, partition, check, since)
        if breaker.tripped_at is not None:
            s.add(BreakerDrain(partition=partition, check=check, node=node, at=now, outcome=HELD))
            return Passage(False, len(drained), tripped_at=breaker.tripped_at)
        # A node drained again for the same check within the window adds nothing to the share.
        if node in drained or allow(len(drained)):
            s.add(BreakerDrain(partition=partition, check=check, node=node, at=now, outcome=DRAINED))
            return Passage(True, len(drained))
        breaker.tripped_at = now
        s.add(BreakerDrain(partition=partition, check=check, node=node, at=now, outcome=HELD))
        return Passage(False, len(drained), tripped_now=True, tripped_at=now)


def states(store: FleetStore, tripped_only: bool = False) -> list[BreakerState]:
    """Every breaker (or the tripped ones) with its counts, partition and check order."""
    with store.reading() as s:
        breakers = list(s.execute(select(Breaker).order_by(Breaker.partition, Breaker.check)).scalars())
        out = []
        for b in breakers:
            if tripped_only and b.tripped_at is None:
                continue
            drained = len(_drained_nodes(s, b.partition, b.check, b.reset_at))
            held = 0
            if b.tripped_at is not None:
                held = s.execute(
                    select(func.count(BreakerDrain.node.distinct())).where(
                        BreakerDrain.partition == b.partition,
                        BreakerDrain.check == b.check,
                        BreakerDrain.outcome == HELD,
                        BreakerDrain.at >= b.tripped_at,
                    )
                ).scalar_one()
            out.append(
                BreakerState(b.partition, b.check, b.tripped_at, b.reset_at, b.reset_by, drained, held)
            )
        return out


def reset(store: FleetStore, partition: str, check: str, actor: str | None = None) -> BreakerState:
    """Close the breaker: drains of ``check`` go through again, counted afresh from now."""
    now = utcnow()
    with store.session() as s:
        stmt = select(Breaker).where(Breaker.partition == partition, Breaker.check == check).with_for_update()
        breaker = s.execute(stmt).scalars().first()
        if breaker is None:
            raise StoreError(f"no circuit breaker for check {check!r} in partition {partition!r}")
        was = breaker.tripped_at
        breaker.tripped_at, breaker.reset_at, breaker.reset_by = None, now, actor or default_actor()
        return BreakerState(partition, check, was, now, breaker.reset_by, 0, 0)
