"""The PXE watchdog: power on, wait for DHCP, retry, then fail with the reason (pure)."""

from __future__ import annotations

import pytest

from bringup.provision.pxe.watchdog import Step, Watchdog, WatchdogPolicy


def test_watchdog_retries_then_fails_with_the_reason():
    dog = Watchdog(WatchdogPolicy(timeout_s=15, retries=2))
    dog.powered_on(0.0)
    assert dog.step(14.9) is Step.WAIT
    assert dog.step(15.0) is Step.RETRY
    dog.powered_on(30.0)
    assert dog.step(44.0) is Step.WAIT and dog.step(45.0) is Step.RETRY
    dog.powered_on(60.0)
    assert dog.step(75.0) is Step.FAIL
    assert dog.attempts == 3
    assert dog.reason().startswith("no DHCP request within 15 s (powered on 3 times")


def test_watchdog_is_done_once_dhcp_is_seen():
    dog = Watchdog(WatchdogPolicy(timeout_s=15, retries=0))
    dog.powered_on(10.0)
    dog.dhcp_seen(13.5)
    assert dog.step(100.0) is Step.DONE and dog.waited() == 3.5
    dog.powered_on(200.0)  # a new power-on forgets the old sighting
    assert dog.step(216.0) is Step.FAIL and "powered on 2 times" in dog.reason()


def test_watchdog_policy_and_order():
    with pytest.raises(ValueError):
        WatchdogPolicy(timeout_s=0)
    with pytest.raises(ValueError):
        WatchdogPolicy(retries=-1)
    with pytest.raises(RuntimeError):
        Watchdog(WatchdogPolicy()).step(0)
