#!/usr/bin/env python3
"""The ib stage's planner and blame at rack scale, on a simulated fabric.

Usage: .venv/bin/python benchmarks/ib_blame.py [--nodes 16,64,256,1024] [--bad 1,4,16] [--seeds 20]

N nodes x 8 rails; k bad ports placed at random (a bad port fails every session it is in).
Plans the default 2 rounds, "runs" them, judges, plans and runs the re-test round when some
failure is unexplained, judges again. Prints per (N, k): sessions per round, how often a re-test
round was needed, bad ports found / missed (left UNKNOWN) / good ports blamed (must be 0), and
the planning and judging time (pure code; the load itself takes diag.ib_load_seconds a round).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from burnin.checks.ib_load import Measurement, judge_session, retest_inputs, standings  # noqa: E402
from burnin.plan.ib_pairs import PortKey, plan_retest, plan_rounds  # noqa: E402

RAILS = [f"mlx5_{i}/1" for i in range(8)]
FLOOR = 388.0


def trial(n: int, k: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    nodes = [f"node{i:04d}" for i in range(n)]
    ports = {node: list(RAILS) for node in nodes}
    bad = set(rng.sample([PortKey(node, rail) for node in nodes for rail in RAILS], k))
    started = time.perf_counter()
    rounds = plan_rounds(ports, 2)
    plan_s = time.perf_counter() - started
    results = []

    def run(round_):
        for s in round_.sessions:
            fails = bool(set(s.ends) & bad)
            total = (470.0 if fails else 784.0) if s.bidirectional else (235.0 if fails else 392.0)
            results.append(judge_session(round_.index, s, Measurement(total), FLOOR, None, round_.retest))

    for r in rounds:
        run(r)
    started = time.perf_counter()
    loaded = set().union(*(r.loaded for r in rounds))
    standing = standings(results, loaded)
    inputs = retest_inputs(results, standing)
    retested = 0
    if inputs.suspects:
        retest, _ = plan_retest(inputs.suspects, inputs.partners, inputs.must_avoid, inputs.met, 3)
        if retest.sessions:
            retested = 1
            run(retest)
            standing = standings(results, loaded)
    judge_s = time.perf_counter() - started
    blamed = {p for p, s in standing.items() if s.status == "bad"}
    passed = {p for p, s in standing.items() if s.status == "pass"}
    return {
        "sessions": statistics.mean(len(r.sessions) for r in rounds),
        "retest": retested,
        "found": len(bad & blamed),
        "missed": len(bad - blamed),
        "bad_passed": len(bad & passed),
        "good_blamed": len(blamed - bad),
        "plan_ms": plan_s * 1000,
        "judge_ms": judge_s * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="16,64,256,1024")
    parser.add_argument("--bad", default="1,4,16")
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    print(f"{'N':>5} {'k':>3} {'sessions/round':>14} {'re-test':>8} {'found':>6} {'missed':>7} "
          f"{'bad passed':>10} {'good blamed':>11} {'plan ms':>8} {'judge ms':>9}")  # fmt: skip
    for n in (int(x) for x in args.nodes.split(",")):
        for k in (int(x) for x in args.bad.split(",")):
            runs = [trial(n, k, seed) for seed in range(args.seeds)]
            total = {key: sum(r[key] for r in runs) for key in runs[0]}
            print(
                f"{n:>5} {k:>3} {total['sessions'] / len(runs):>14.0f} {total['retest'] / len(runs):>8.0%} "
                f"{total['found']:>6.0f} {total['missed']:>7.0f} {total['bad_passed']:>10.0f} "
                f"{total['good_blamed']:>11.0f} {total['plan_ms'] / len(runs):>8.1f} {total['judge_ms'] / len(runs):>9.1f}"
            )


if __name__ == "__main__":
    main()
