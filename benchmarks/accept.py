#!/usr/bin/env python3
"""`burnin accept` at delivery scale: what the soak reads between iterations, and the decision.

Usage: .venv/bin/python benchmarks/accept.py [--nodes 512] [--iterations 144] [--checks 8] [--failing 50]
       (quick try: --nodes 32 --iterations 10)

A SQLite fleet store holds an acceptance whose soak is over: N nodes, iteration 0 and I soak
iterations (144 is 72 h at 30 min an iteration), C results per node per iteration, all PASS but
for ``--failing`` nodes that fail once, in a random iteration, with raw output. Its controller
died before deciding, so ``accept_delivery`` only decides and writes (the path a finished soak
takes). Prints:

1. the soak's read between two iterations (the non-passing results and iteration 0's stages):
   wall time;
2. the decision: every node compared with the order and decided, events and transitions
   recorded, the HTML/CSV/JSON/JUnit report and one RMA bundle per rejected node written: wall
   time, peak memory (max RSS of this process), and the outputs' size;
3. what the first version read between iterations instead (every result of the acceptance).
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import insert, update  # noqa: E402

from benchmarks.fleet_sim.inventory import write_rack_inventory  # noqa: E402
from bringup.fleet import evidence  # noqa: E402
from bringup.fleet.models import CheckResult, Node, Run, utcnow  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402
from burnin.accept import ledger  # noqa: E402
from burnin.accept.run import AcceptRequest, accept_delivery  # noqa: E402

RACK = "bench"
STAGES = ("preflight", "gpu", "ib", "nccl")
DIMM = {
    "message": "DIMM slot CPU0_DIMM_C2 is empty: 31 of 32 DIMMs present",
    "severity": "critical",
    "action": "RESEAT",
    "subject": "CPU0_DIMM_C2",
    "evidence": "Locator: CPU0_DIMM_C2",
}


def write_site(root: Path, nodes: int) -> Path:
    inv = root / "inventories"
    (inv / "deliveries").mkdir(parents=True)
    hosts = {
        f"n{i:04d}": {
            "bmc_address": f"10.{i // 250}.{i % 250}.1",
            "ansible_host": f"10.{i // 250}.{i % 250}.2",
            "rack_unit": i,
        }
        for i in range(1, nodes + 1)
    }
    write_rack_inventory(inv, RACK, hosts)
    order = {
        "name": "po-bench",
        "nodes": {"count": nodes},
        "profiles": {"h100-sxm-8x400g": {}},
        "acceptance": {"stages": list(STAGES), "soak": "1s"},
    }
    (inv / "deliveries" / "po-bench.yml").write_text(yaml.safe_dump(order))
    return inv


def fill(store: FleetStore, nodes: int, iterations: int, checks: int, failing: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    names = [f"n{i:04d}" for i in range(1, nodes + 1)]
    for i, name in enumerate(names, 1):
        store.enroll(name, RACK, "h100-sxm-8x400g", rack_unit=i)
    with store.session() as s:
        s.execute(update(Node).where(Node.rack == RACK).values(state="burnin"))
        for i, name in enumerate(names, 1):
            s.execute(
                update(Node)
                .where(Node.name == name)
                .values(
                    serial=f"SN{i:05d}", hardware={"discovered_at": utcnow().isoformat(), "event_log": []}
                )
            )
    ids = {n.name: n.id for n in store.list_nodes(RACK)}
    params = {"delivery": "po-bench", "acceptance": None, "nodes": names, "soak_s": 1.0}
    accept = store.start_run(ledger.ACCEPT_KIND, RACK, params)
    store.finish_run(accept.id, "abandoned")
    bad = {name: rng.randrange(iterations + 1) for name in rng.sample(names, failing)}
    start = utcnow() - timedelta(hours=72)
    for it in range(iterations + 1):
        stages = STAGES if it == 0 else STAGES[1:]
        run = store.start_run("burnin", RACK, {"acceptance": accept.id, "iteration": it, "nodes": names})
        rows = []
        with store.session() as s:
            blob = evidence.store_text(s, "Handle 0x1101\nMemory Device\n\tSize: No Module Installed\n", {})
            for name in names:
                if name in bad and bad[name] < it:
                    continue  # out of the soak since it failed
                for c in range(checks):
                    fail = bad.get(name) == it and c == 0
                    rows.append(
                        {
                            "run_id": run.id,
                            "node_id": ids[name],
                            "stage": stages[c % len(stages)],
                            "check": "memory_dimms" if c == 0 else f"check{c}",
                            "verdict": "FAIL" if fail else "PASS",
                            "metrics": {},
                            "findings": [DIMM] if fail else [],
                            "evidence_id": blob if fail else None,
                            "time": start + timedelta(minutes=30 * it),
                        }
                    )
            s.execute(insert(CheckResult), rows)
        store.finish_run(run.id, "done")
    with store.session() as s:
        s.execute(update(Run).where(Run.id == accept.id).values(started_at=start))
    return accept.id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=512)
    ap.add_argument("--iterations", type=int, default=144)
    ap.add_argument("--checks", type=int, default=8)
    ap.add_argument("--failing", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-accept-") as tmp:
        root = Path(tmp)
        inv = write_site(root, args.nodes)
        store = FleetStore(f"sqlite:///{root / 'fleet.db'}")
        t0 = time.perf_counter()
        acceptance = fill(store, args.nodes, args.iterations, args.checks, min(args.failing, args.nodes))
        results = args.nodes * (args.iterations + 1) * args.checks
        print(
            f"store: {args.nodes} nodes x {args.iterations + 1} iterations x {args.checks} checks "
            f"(~{results:,} results) built in {time.perf_counter() - t0:.1f} s, "
            f"{(root / 'fleet.db').stat().st_size / 2**20:.0f} MiB"
        )

        runs = [i.run_id for i in ledger.iterations(store, RACK, acceptance)]
        t0 = time.perf_counter()
        failing = ledger.results_of_runs(store, runs, not_passing=True)
        first = ledger.stages_of_runs(store, runs[:1])
        read = time.perf_counter() - t0
        print(
            f"soak read between iterations: {read * 1000:.0f} ms ({len(failing)} non-passing results, "
            f"{len(first)} nodes with iteration-0 results)"
        )

        out = root / "out"
        t0 = time.perf_counter()
        result = accept_delivery(store, inv, AcceptRequest(RACK, "po-bench", out_dir=out))
        took = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"decision of {len(result.decisions)} nodes ({len(result.rejected)} rejected) with reports and "
            f"bundles: {took:.1f} s, peak RSS {rss:.0f} MiB, outputs {size / 2**20:.1f} MiB in "
            f"{len(result.outputs)} files"
        )
        # last, as its memory would count in the decision's peak: what the first version read
        t0 = time.perf_counter()
        every = ledger.results_of_runs(store, runs)
        print(
            f"the first version's soak read (every result): {(time.perf_counter() - t0) * 1000:.0f} ms "
            f"for {len(every):,} results"
        )


if __name__ == "__main__":
    main()
