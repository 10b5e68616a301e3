#!/usr/bin/env python3
"""What the run ledger costs a big run: claiming N nodes, a refusal, a heartbeat, the abandoned
sweep, ending the run; and how many racing processes get the same nodes (must be exactly one).

Usage: .venv/bin/python benchmarks/run_claims.py [--nodes 1000] [--racers 8] [--db URL]

Default store: a fresh SQLite file in a temporary directory; ``--db postgresql://...`` measures
PostgreSQL (the database must be empty: one holding nodes or other tables is refused,
benchmarks/fleet_sim/bench_db.py). Prints the median of 5 of each operation.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fleet_sim.bench_db import refuse_unless_fresh  # noqa: E402
from bringup.fleet import runs  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    took = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def _race(url: str, names: list[str], barrier, out) -> None:
    store = FleetStore(url)
    barrier.wait()
    try:
        runs.start_run(store, "burnin", "bench", nodes=names)
        out.put("won")
    except runs.NodesBusy:
        out.put("refused")
    barrier.wait()  # the winner stays alive until all have tried


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--racers", type=int, default=8)
    ap.add_argument("--db", default=None)
    args = ap.parse_args()
    if args.db:
        refuse_unless_fresh(args.db)
    tmp = tempfile.TemporaryDirectory()
    url = args.db or f"sqlite:///{Path(tmp.name) / 'fleet.db'}"
    store = FleetStore(url)
    names = [f"n{i:05d}" for i in range(args.nodes)]
    for name in names:
        store.enroll(name, "bench", "p")
    engine = store.engine.dialect.name

    def claim_and_end() -> None:
        run = runs.start_run(store, "burnin", "bench", nodes=names)
        runs.end_run(store, run.id, "done")

    print(f"store: {engine}, {args.nodes} nodes")
    print(f"start a run claiming all {args.nodes} nodes, then end it: {timed(claim_and_end) * 1000:.1f} ms")
    holder = runs.start_run(store, "burnin", "bench", nodes=names)

    def refused() -> None:
        try:
            runs.start_run(store, "burnin", "bench", nodes=names)
        except runs.NodesBusy:
            return
        raise AssertionError("a second run got claimed nodes")

    print(f"a second run on them refused (names the holder): {timed(refused) * 1000:.1f} ms")
    beat = runs.Heartbeat(store, holder.id, 10, lambda status, reason: None)
    print(f"one heartbeat write: {timed(beat.renew) * 1000:.1f} ms")
    print(f"abandoned sweep with 1 live run: {timed(lambda: runs.sweep_abandoned(store)) * 1000:.1f} ms")
    print(f"live holders of all nodes: {timed(lambda: runs.live_holders(store, names)) * 1000:.1f} ms")
    runs.end_run(store, holder.id, "done")

    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(args.racers), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(url, names, barrier, out)) for _ in range(args.racers)]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    print(
        f"{args.racers} processes racing for the same {args.nodes} nodes: {results.count('won')} won, "
        f"{results.count('refused')} refused"
    )
    store.close()


if __name__ == "__main__":
    main()
