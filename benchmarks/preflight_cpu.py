#!/usr/bin/env python3
"""Where the controller's CPU goes per node of a preflight, part by part, on one core.

Usage: .venv/bin/python benchmarks/preflight_cpu.py [--nodes 300] [--batch 20]

The answer a healthy 8x H100 node gives the preflight batch (the lab's stand-ins run once, as
benchmarks/fleet_sim/ssh.py records it) is made ``--nodes`` times, each with its own GPU UUIDs
and InfiniBand GUIDs so that no cache can hit across nodes. Then, with nothing else running in
the process (no SSH, no threads), the process CPU per node of: reading the frames
(``parse_output``), judging each check (``burnin.checks.base.judge``), and saving the judged
rows and their evidence to a fresh SQLite store in transactions of ``--batch`` nodes
(``FleetStore.add_results_many``, as the runner saves what comes in together). The collector
runs as during a run (burnin.stages.runner). benchmarks/fleet.py gives the whole controller's
figure with SSH and threads; this one says which part of it is which.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.fleet_sim.ssh import Recordings, frame_answer, parse_batch, personalise  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402
from bringup.profiles.load import Profile, load_profile  # noqa: E402
from burnin.checks.base import Check, judge  # noqa: E402
from burnin.stages import stage_checks  # noqa: E402
from burnin.stages.batch import parse_output  # noqa: E402
from burnin.stages.runner import YOUNG_GC_THRESHOLD, judge_stage, result_row, stage_batch  # noqa: E402

PROFILE = "h100-sxm-8x400g"


def answers(n: int, work: Path) -> tuple[list[bytes], list[Check], str, dict[str, str], Profile]:
    profile, problems = load_profile(PROFILE, REPO / "inventories" / "profiles")
    if profile is None:
        raise SystemExit(f"profile {PROFILE}: {problems}")
    checks = stage_checks("preflight", profile)
    script, token, keys = stage_batch(checks, profile)
    batch = parse_batch(script)
    assert batch is not None, "the preflight batch is not one the simulator reads"
    recordings = Recordings(work)

    async def record() -> dict:
        return {k: await recordings.answer(batch.jobs[k]) for k in batch.order}

    raw = asyncio.run(record())
    made = [frame_answer(batch, {k: personalise(v, i) for k, v in raw.items()}) for i in range(n)]
    return made, checks, token, keys, profile


def per_node_ms(seconds: float, n: int) -> str:
    return f"{1000 * seconds / n:7.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--batch", type=int, default=20, help="nodes saved in one transaction")
    args = parser.parse_args()
    n = args.nodes
    with tempfile.TemporaryDirectory(prefix="bringup-preflight-cpu-") as tmp:
        work = Path(tmp)
        made, checks, token, keys, profile = answers(n, work)
        key_list = sorted(set(keys.values()))
        gc.collect()
        gc.freeze()
        gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])

        t0 = time.process_time()
        outputs = [parse_output(a, token, key_list, (time.time() - 1, time.time())) for a in made]
        parse_s = time.process_time() - t0

        by_check = {c.name: 0.0 for c in checks if c.name in keys}  # (not those read from the record)
        for out in outputs:
            for check in checks:
                if check.name in keys:
                    t0 = time.process_time()
                    judge(check, out[keys[check.name]], profile)
                    by_check[check.name] += time.process_time() - t0
        judged = [judge_stage(checks, profile, out, keys, {}) for out in outputs]
        rows = [[result_row("preflight", r, e) for r, e in node] for node in judged]

        store = FleetStore(f"sqlite:///{work / 'fleet.db'}")
        names = [f"sim{i:05d}" for i in range(n)]
        for name in names:
            store.enroll(name, rack="sim", profile=PROFILE)
        t0 = time.process_time()
        for i in range(0, n, args.batch):
            store.add_results_many([(names[j], rows[j]) for j in range(i, min(n, i + args.batch))])
        store_s = time.process_time() - t0

    print(f"preflight of {n} simulated healthy 8x H100 nodes, process CPU ms per node, one core")
    print(f"{'reading the frames':<28}{per_node_ms(parse_s, n)}")
    for name, seconds in sorted(by_check.items(), key=lambda kv: -kv[1]):
        print(f"{'  judging ' + name:<28}{per_node_ms(seconds, n)}")
    print(f"{'judging, all checks':<28}{per_node_ms(sum(by_check.values()), n)}")
    print(f"{'saving (batches of ' + str(args.batch) + ')':<28}{per_node_ms(store_s, n)}")


if __name__ == "__main__":
    main()
