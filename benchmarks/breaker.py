#!/usr/bin/env python3
"""The circuit breaker in simulation: a rule that fails on every node of a partition, every node
asking the store at once whether it may drain (the path `burnin health --breaker-db` takes,
burnin.service.breaker_gate.gate_drain). How many drain (must be the cap), how many are held,
and how long the decisions take.

Usage: .venv/bin/python benchmarks/breaker.py [--nodes 1000] [--procs 16] [--threads 4] [--db URL]

Each of ``--procs`` processes is a group of nodes with its own connection to the store, and
runs its nodes ``--threads`` at a time. Default store: a fresh SQLite file in a temporary
directory; ``--db postgresql://...`` measures PostgreSQL (the database must be empty,
benchmarks/fleet_sim/bench_db.py). The profile defaults: 10 % of the partition, at least 2, 10
minutes (burnin/service/breaker.py).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fleet_sim.bench_db import refuse_unless_fresh  # noqa: E402
from bringup.fleet import breaker as records  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402
from burnin.service.breaker import BreakerSettings, cap  # noqa: E402
from burnin.service.breaker_gate import gate_drain  # noqa: E402

CHECK, PARTITION = "gpu_ecc", "gpu"


def _group(url: str, nodes: list[str], size: int, threads: int, barrier, out) -> None:
    store = FleetStore(url)
    settings = BreakerSettings()

    def ask(node: str) -> tuple[bool, float]:
        start = time.perf_counter()
        allowed = gate_drain(store, node, CHECK, PARTITION, size, settings).allowed
        return allowed, time.perf_counter() - start

    barrier.wait()  # every group starts at once: the rule fails everywhere at the same moment
    with ThreadPoolExecutor(max_workers=threads) as pool:
        out.put(list(pool.map(ask, nodes)))
    store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--db", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{tmp}/fleet.db"
        if args.db:
            refuse_unless_fresh(url)
        FleetStore(url).close()  # the schema, before the racers open it
        nodes = [f"gpu{i:05d}" for i in range(args.nodes)]
        groups = [nodes[i :: args.procs] for i in range(args.procs)]
        ctx = multiprocessing.get_context("spawn")
        barrier, out = ctx.Barrier(args.procs + 1), ctx.Queue()
        procs = [
            ctx.Process(target=_group, args=(url, g, args.nodes, args.threads, barrier, out)) for g in groups
        ]
        for p in procs:
            p.start()
        barrier.wait()
        start = time.perf_counter()
        answers = [a for _ in procs for a in out.get()]
        wall = time.perf_counter() - start
        for p in procs:
            p.join()
        store = FleetStore(url)
        (state,) = records.states(store)
        store.close()
    drained = sum(1 for allowed, _ in answers if allowed)
    took = sorted(t for _, t in answers)
    want = cap(args.nodes, BreakerSettings())
    engine = url.split(":", 1)[0]
    print(
        f"{args.nodes} nodes failing {CHECK} at once, {args.procs} processes x {args.threads} threads, {engine}"
    )
    print(f"drained {drained} (cap {want}), held {args.nodes - drained}; store says drained {state.drained}, "
          f"held {state.held}, tripped {state.tripped}")  # fmt: skip
    print(
        f"wall {wall:.2f} s; a decision: median {statistics.median(took) * 1000:.1f} ms, "
        f"p99 {took[int(len(took) * 0.99) - 1] * 1000:.1f} ms, max {took[-1] * 1000:.1f} ms"
    )
    return 0 if drained == want == state.drained and state.held == args.nodes - want else 1


if __name__ == "__main__":
    sys.exit(main())
