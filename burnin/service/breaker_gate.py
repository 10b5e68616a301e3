"""The drain's pass through the fleet-wide circuit breaker: find the node's partition and its
size in Slurm, ask the store (where every node's drains meet, bringup/fleet/breaker.py) with the
rule of burnin/service/breaker.py, and say whether to hold the drain.

Only `burnin health --breaker-db URL` consults it. When the store or Slurm cannot answer, the
node drains as it would without the breaker (the problem is kept): a store outage must not keep
a GPU that fell off the bus in service (docs/in-service.md, "The circuit breaker").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.exc import SQLAlchemyError

from bringup.core.errors import UserError
from bringup.fleet import breaker as records
from bringup.fleet.store import FleetStore
from burnin.service import slurm
from burnin.service.breaker import BreakerSettings, Gate, decide, held_message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateOutcome:
    allowed: bool
    message: str  # "" when allowed; why it is held and how to resume otherwise
    tripped_now: bool = False


def gate_drain(
    store: FleetStore,
    node: str,
    check: str,
    partition: str,
    size: int,
    settings: BreakerSettings,
    now: datetime | None = None,
) -> GateOutcome:
    """One node's drain for ``check`` through the breaker of (partition, check)."""
    passage = records.pass_drain(
        store,
        partition,
        check,
        node,
        window_s=settings.window_s,
        allow=lambda drained: decide(drained, size, settings) is Gate.ALLOW,
        now=now,
    )
    if passage.allowed:
        return GateOutcome(True, "")
    message = held_message(check, partition, passage.drained_in_window, size, settings)
    if passage.tripped_now:
        log.warning("circuit breaker tripped: %s", message)
    return GateOutcome(False, message, passage.tripped_now)


def hold(
    node: str,
    check: str,
    settings: BreakerSettings,
    db_url: str,
    slurm_conf: str | None,
    problems: list[str],
) -> str:
    """The Slurm action to report when the breaker holds this drain; "" to drain."""
    try:
        partition, size = slurm.partition_of(node, slurm_conf)
        store = FleetStore(db_url)
        try:
            outcome = gate_drain(store, node, check, partition, size, settings)
        finally:
            store.close()
    except (UserError, OSError, SQLAlchemyError) as exc:
        problems.append(f"circuit breaker not consulted, drained as without it: {exc}")
        return ""
    if outcome.allowed:
        return ""
    problems.append(f"circuit breaker: {outcome.message}")
    return outcome.message
