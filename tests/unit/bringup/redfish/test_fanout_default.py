"""The default concurrency of the BMC commands (issue 18 item 4): a rack of 256 is one wave,
not four waves of 64; a fleet larger than the bound is worked on MAX_CONCURRENCY at a time."""

from __future__ import annotations

import threading
import time

from bringup.redfish.fanout import MAX_CONCURRENCY, Task, default_concurrency, fan_out


def test_by_default_every_bmc_of_a_256_node_rack_is_worked_on_at_once():
    # Each task waits until all 256 are running: in waves of 64 the barrier never fills and
    # every task fails with BrokenBarrierError.
    barrier = threading.Barrier(256, timeout=20)
    outcomes = fan_out([Task(f"gpu{i:03d}", barrier.wait) for i in range(256)])
    assert [o.error for o in outcomes if not o.ok] == []


def test_the_default_is_bounded_for_a_larger_fleet():
    count = MAX_CONCURRENCY + 88
    lock, running, peak = threading.Lock(), [0], [0]

    def one() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1

    outcomes = fan_out([Task(f"gpu{i:04d}", one) for i in range(count)])
    assert all(o.ok for o in outcomes) and len(outcomes) == count
    assert 1 < peak[0] <= MAX_CONCURRENCY
    assert default_concurrency(count) == MAX_CONCURRENCY and default_concurrency(3) == 3


def test_an_explicit_concurrency_still_wins():
    lock, running, peak = threading.Lock(), [0], [0]

    def one() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    fan_out([Task(f"gpu{i:02d}", one) for i in range(40)], concurrency=4)
    assert peak[0] <= 4
