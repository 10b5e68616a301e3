"""The default concurrency of the BMC commands: a rack of 256 is one wave,
not four waves of 64; a fleet larger than the bound is worked on MAX_CONCURRENCY at a time."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from bringup.redfish.fanout import FILES_RESERVE, MAX_CONCURRENCY, Task, default_concurrency, fan_out

REPO = Path(__file__).resolve().parents[4]


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


def _room_for(workers: int, soft: int, hard: int) -> tuple[int, int]:
    """room_for in a child process whose open-file limit is (soft, hard): (workers it allows, soft limit after)."""
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, {hard}))\n"
        "from bringup.redfish.fanout import room_for\n"
        f"fits = room_for({workers})\n"
        "print(fits, resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    fits, after = out.stdout.split()
    return int(fits), int(after)


def test_the_open_file_soft_limit_is_raised_to_fit_one_socket_per_worker():
    assert _room_for(300, soft=128, hard=1024) == (300, 300 + FILES_RESERVE)


def test_below_a_low_hard_limit_fewer_bmcs_are_worked_on_at_once():
    assert _room_for(300, soft=128, hard=200) == (200 - FILES_RESERVE, 200)
