"""The PXE watchdog (pure): a node that never asks for DHCP is power-cycled again, then failed.

About one delivered server in ten does not boot the first time (unplugged or miswired cable,
a BMC fault, a NIC that does not show up). After each power-on the node gets ``timeout_s`` to
send its first DHCP request; without one it is power-cycled again, up to ``retries`` times,
then it fails with "no DHCP request within N s".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from bringup.core.errors import BadInput


class Step(str, Enum):
    WAIT = "wait"  # keep waiting for the first DHCP request
    RETRY = "retry"  # power-cycle again
    FAIL = "fail"  # out of retries
    DONE = "done"  # the node asked: the watchdog's job is over


@dataclass(frozen=True)
class WatchdogPolicy:
    timeout_s: float = 180.0
    retries: int = 2

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise BadInput(f"the DHCP timeout must be positive, got {self.timeout_s!r}")
        if self.retries < 0:
            raise BadInput(f"the retry count must be 0 or more, got {self.retries!r}")


class Watchdog:
    """Feed it power-ons and DHCP sightings with a clock value; ask it what to do next."""

    def __init__(self, policy: WatchdogPolicy):
        self.policy = policy
        self.attempts = 0  # power-ons so far
        self._powered_at: float | None = None
        self.dhcp_at: float | None = None

    def powered_on(self, now: float) -> None:
        self.attempts += 1
        self._powered_at = now
        self.dhcp_at = None

    def dhcp_seen(self, now: float) -> None:
        if self._powered_at is not None and self.dhcp_at is None:
            self.dhcp_at = now

    @property
    def deadline(self) -> float | None:
        """When the current attempt runs out (None before the first power-on)."""
        return None if self._powered_at is None else self._powered_at + self.policy.timeout_s

    def step(self, now: float) -> Step:
        if self._powered_at is None:
            raise RuntimeError("the watchdog was asked before the node was powered on")
        if self.dhcp_at is not None:
            return Step.DONE
        if now < self._powered_at + self.policy.timeout_s:
            return Step.WAIT
        return Step.RETRY if self.attempts <= self.policy.retries else Step.FAIL

    def reason(self) -> str:
        """The failure, in the operator's words."""
        cycles = self.attempts
        return (
            f"no DHCP request within {self.policy.timeout_s:g} s "
            f"(powered on {cycles} time{'s' if cycles != 1 else ''}: check the provisioning cable, "
            "the NIC's PXE setting and the BMC's boot override)"
        )

    def waited(self) -> float | None:
        """Seconds from the last power-on to the first DHCP request, once seen."""
        if self._powered_at is None or self.dhcp_at is None:
            return None
        return self.dhcp_at - self._powered_at
