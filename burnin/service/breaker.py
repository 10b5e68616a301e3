"""The fleet-wide circuit breaker's rule (pure): may one more node of a partition be drained for
a check, or has that check drained too large a share of the partition in the window?

A rule that is wrong (a threshold a new driver crosses on every GPU, a tool that prints
something new) fails on every node at once, and every node drains itself. The breaker caps
that: within ``window_s``, at most ``cap`` distinct nodes of a partition drain for one check;
the drain that would go past it trips the breaker for that check, and from then on every node
failing it is held (reported, not drained) until a person resets it (`burnin breaker reset`),
as NVSentinel's breaker stays tripped until reset
(https://docs.nvidia.com/nvsentinel/components/circuit-breaker.md). The store counts the drains
and keeps the tripped state (bringup/fleet/breaker.py); this module only decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

DEFAULT_SHARE = 0.10  # of the partition's nodes, in one window, for one check
DEFAULT_MIN_NODES = 2  # a small partition may still lose this many (8 nodes x 10% is 0)
DEFAULT_WINDOW_S = 600.0
HELD_PREFIX = "held by the circuit breaker"  # how a held drain's Slurm action starts


class Gate(str, Enum):
    ALLOW = "allow"  # drain it: still under the cap
    TRIP = "trip"  # this drain would pass the cap: hold it and trip the breaker

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class BreakerSettings:
    share: float = DEFAULT_SHARE
    min_nodes: int = DEFAULT_MIN_NODES
    window_s: float = DEFAULT_WINDOW_S

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1:
            raise ValueError(f"breaker share must be in (0, 1], not {self.share}")
        if self.min_nodes < 1:
            raise ValueError(f"breaker min_nodes must be at least 1, not {self.min_nodes}")
        if self.window_s <= 0:
            raise ValueError(f"breaker window must be positive, not {self.window_s}")


def cap(partition_size: int, settings: BreakerSettings) -> int:
    """How many distinct nodes may drain for one check in one window: the share of the
    partition (rounded down), never under ``min_nodes``, never over the partition."""
    share = math.floor(partition_size * settings.share + 1e-9)  # 1,000 x 0.1 is 100, not 99
    return max(0, min(max(settings.min_nodes, share), partition_size))


def decide(drained_in_window: int, partition_size: int, settings: BreakerSettings) -> Gate:
    """``drained_in_window``: distinct nodes of the partition already drained for this check
    within the window (since the last reset). One more is allowed while it stays within the cap."""
    return Gate.ALLOW if drained_in_window + 1 <= cap(partition_size, settings) else Gate.TRIP


def reset_command(check: str, partition: str) -> str:
    return f"burnin breaker reset {check} --partition {partition}"


def held_message(check: str, partition: str, drained: int, size: int, settings: BreakerSettings) -> str:
    """What a held node says (its Slurm action, the log): why, and how to resume draining."""
    return (
        f"{HELD_PREFIX}: check {check} is suspect in partition {partition} "
        f"({drained} of {size} nodes drained for it within {settings.window_s:g} s, cap "
        f"{cap(size, settings)}); not drained. Fix the check, then: {reset_command(check, partition)}"
    )
