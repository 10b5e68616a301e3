#!/usr/bin/env python3
"""Lifecycle writes at fleet size: one transaction per move against one per batch.

Usage: .venv/bin/python benchmarks/transitions.py [--counts 1000,10000]

For each N, two fresh SQLite stores of N configured nodes. In one, every node is moved into
``burnin`` and then given its closing ``burnin`` event one ``FleetStore.transition`` /
``record_event`` at a time (what a burn-in did before); in the other, the same writes as two
``transition_many`` calls (bringup.fleet.transitions). Printed: CPU and wall ms per node of each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bringup.fleet.lifecycle import State  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402
from bringup.fleet.transitions import Note, Transition, transition_many  # noqa: E402

PATH_TO_CONFIGURED = ("discovered", "provisioning", "provisioned", "configured")


def fleet(directory: Path, n: int) -> tuple[FleetStore, list[str]]:
    store = FleetStore(f"sqlite:///{directory / 'fleet.db'}")
    names = [f"gpu{i:05d}" for i in range(1, n + 1)]
    for name in names:
        store.enroll(name, "r01", "h100-sxm-8x400g")
    for state in PATH_TO_CONFIGURED:
        transition_many(store, [Transition(name, state, "benchmark setup") for name in names])
    return store, names


def one_by_one(store: FleetStore, names: list[str], run_id: int) -> None:
    for name in names:
        store.transition(name, State.BURNIN, f"burn-in run {run_id}: preflight", run_id=run_id)
    for name in names:
        store.record_event(
            name, "burnin", "stages preflight: PASS", run_id=run_id, details={"preflight": "PASS"}
        )


def batched(store: FleetStore, names: list[str], run_id: int) -> None:
    reason = f"burn-in run {run_id}: preflight"
    transition_many(store, [Transition(name, State.BURNIN, reason, run_id) for name in names])
    notes = [Note(name, "burnin", "stages preflight: PASS", run_id, {"preflight": "PASS"}) for name in names]
    transition_many(store, [], notes=notes)


def measure(n: int, how: Callable[[FleetStore, list[str], int], None]) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="bringup-transitions-") as tmp:
        store, names = fleet(Path(tmp), n)
        run = store.start_run("burnin", "r01")
        wall0, cpu0 = time.monotonic(), time.process_time()
        how(store, names, run.id)
        wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
        store.close()
    return 1000 * cpu / n, 1000 * wall / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000")
    args = parser.parse_args()
    print("lifecycle writes of a burn-in (move into burnin + closing event), SQLite, per node")
    print(f"{'nodes':>6} {'one by one: CPU ms':>19} {'wall ms':>8} {'batched: CPU ms':>16} {'wall ms':>8}")
    for n in (int(c) for c in args.counts.split(",")):
        old_cpu, old_wall = measure(n, one_by_one)
        new_cpu, new_wall = measure(n, batched)
        print(f"{n:>6} {old_cpu:>19.2f} {old_wall:>8.2f} {new_cpu:>16.2f} {new_wall:>8.2f}")


if __name__ == "__main__":
    main()
