"""An HCA port's error counters around one load (``perfquery -x`` or sysfs, read before and
after each round of the ``ib`` stage): each counter's change, and the ports whose own link
counters rose. Pure; burnin.checks.ib_load judges them with the bandwidth (docs/burnin.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from burnin.parsers.perfquery import ERROR_COUNTERS, is_saturated
from burnin.plan.ib_pairs import PortKey

# Counters that count faults of the port's own link (its cable, transceivers, the switch port).
LINK_COUNTERS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "LocalLinkIntegrityErrors",
    "PortRcvErrors",
    "ExcessiveBufferOverrunErrors",
)


@dataclass(frozen=True)
class CounterChange:
    name: str
    before: int | None
    after: int | None
    saturated: bool = False  # at its maximum before or after: a rise cannot be seen
    went_down: bool = False  # cleared or wrapped during the round

    @property
    def delta(self) -> int | None:
        if self.before is None or self.after is None or self.saturated or self.went_down:
            return None
        return self.after - self.before


def counter_changes(before: Mapping[str, int] | None, after: Mapping[str, int] | None) -> list[CounterChange]:
    """The error counters of one port around one round."""
    before, after = before or {}, after or {}
    changes = []
    for name in ERROR_COUNTERS:
        b, a = before.get(name), after.get(name)
        saturated = any(v is not None and is_saturated(name, v) for v in (b, a))
        went_down = b is not None and a is not None and a < b and not saturated
        changes.append(CounterChange(name, b, a, saturated, went_down))
    return changes


def counter_bad_ports(counters: Mapping[PortKey, list[list[CounterChange]]]) -> set[PortKey]:
    """Ports whose own link counters rose: bad whatever their bandwidth."""
    return {
        key
        for key, rounds in counters.items()
        if any(c.name in LINK_COUNTERS and c.delta for changes in rounds for c in changes)
    }
