"""One nightly per rack: the second refuses while the first holds the lock, on SQLite (a file
lock) and PostgreSQL (an advisory lock); a holder killed with SIGKILL leaves no lock behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from bringup.fleet.store import FleetStore
from burnin.service.nightly_lock import NightlyBusy, nightly_lock

HOLD = """
import sys, time
from bringup.fleet.store import FleetStore
from burnin.service.nightly_lock import nightly_lock
with nightly_lock(FleetStore(sys.argv[1]), "r1"):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_nightly_of_the_rack_refuses_another_rack_does_not(store_url):
    first, second = FleetStore(store_url), FleetStore(store_url)  # two controllers
    with nightly_lock(first, "r1"):
        with (
            pytest.raises(NightlyBusy, match="another nightly of rack r1 is running"),
            nightly_lock(second, "r1"),
        ):
            pass
        with nightly_lock(second, "r2"):
            pass
    with nightly_lock(second, "r1"):  # released
        pass


def test_a_killed_holder_leaves_no_lock(store_url):
    FleetStore(store_url)  # the schema, before the holder opens it
    proc = subprocess.Popen([sys.executable, "-c", HOLD, store_url], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(NightlyBusy), nightly_lock(FleetStore(store_url), "r1"):
            pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 30  # PostgreSQL notices the dead session's socket close
    while True:
        try:
            with nightly_lock(FleetStore(store_url), "r1"):
                break
        except NightlyBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
