#!/usr/bin/env python3
"""Bad-node localisation in simulation: rounds, trials, node-hours and accuracy, against baselines.

Usage: .venv/bin/python benchmarks/localise.py [--seeds 200] [--minutes 10] [--flaky 0.02]

For N = 64, 256, 1024 nodes and k = 1, 2, 3 bad nodes placed at random (fixed seeds), a bad
node makes every trial it is in fail (fail, hang and slow look the same to the localiser).
Methods:
  adaptive G=0     burnin.plan.nccl_groups.Localizer, the soak as one group (the h100 profile's default)
  adaptive G=g     the same with soak groups of g = sqrt(N) nodes
  binary G=0       the same with fanout=2 (classic halving), for reference
  grid r x c       baseline: soak in rows, then split the other way (columns) and intersect;
                   a third round tests each candidate with a good node when the intersection is ambiguous
  pairwise         baseline: soak in pairs, then each node of a failing pair with a passing node
Columns: rounds and node-hours AFTER the soak round (every method runs its own soak first;
node-hours = nodes in each trial x --minutes per localisation iteration), trials in all, found =
culprits found / culprits, false = healthy nodes blamed, unres = nodes left unresolved, and the
information-theoretic minimum number of tests, ceil(log2(C(N, k))). Target: the adaptive
method's rounds including the soak round stay under 2x that minimum for k = 1.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burnin.plan.nccl_groups import Localizer, plan_groups  # noqa: E402

Trials = list[list[frozenset[str]]]  # rounds of trials


@dataclass
class Outcome:
    rounds: Trials
    blamed: set[str]
    unresolved: set[str]


def adaptive(group: int, fanout: int | None = None) -> Callable[[list[str], Callable], Outcome]:
    def run(nodes: list[str], passes: Callable[[frozenset[str]], bool]) -> Outcome:
        loc = Localizer(nodes, group, fanout=fanout)
        rounds: Trials = []
        while tests := loc.next_tests():
            rounds.append(tests)
            for test in tests:
                loc.record(test, passes(test))
        return Outcome(rounds, set(loc.culprits), set(loc.unresolved))

    return run


def _grid_shape(n: int) -> tuple[int, int]:
    rows = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return rows, n // rows


def grid(nodes: list[str], passes: Callable[[frozenset[str]], bool]) -> Outcome:
    rows_n, cols_n = _grid_shape(len(nodes))
    rows = [frozenset(nodes[r * cols_n : (r + 1) * cols_n]) for r in range(rows_n)]
    cols = [frozenset(nodes[c::cols_n]) for c in range(cols_n)]
    rounds: Trials = [rows, cols]
    bad_rows = [r for r in rows if not passes(r)]
    bad_cols = [c for c in cols if not passes(c)]
    good = set(nodes).difference(*bad_rows, *bad_cols) if bad_rows or bad_cols else set(nodes)
    candidates = {n for r in bad_rows for n in r if any(n in c for c in bad_cols)}
    if len(candidates) <= max(len(bad_rows), len(bad_cols)):
        return Outcome(rounds, candidates, set())  # one candidate per failed line: each is bad
    anchors = sorted(good)
    if len(anchors) < len(candidates):
        return Outcome(rounds, set(), candidates)
    third = [frozenset({c, a}) for c, a in zip(sorted(candidates), anchors, strict=False)]
    rounds.append(third)
    return Outcome(rounds, {next(iter(t - good)) for t in third if not passes(t)}, set())


def pairwise(nodes: list[str], passes: Callable[[frozenset[str]], bool]) -> Outcome:
    pairs = [frozenset(g) for g in plan_groups(nodes, 2)]
    rounds: Trials = [pairs]
    failed = [p for p in pairs if not passes(p)]
    good = sorted(set(nodes).difference(*failed))
    suspects = sorted(set().union(*failed)) if failed else []
    if not suspects:
        return Outcome(rounds, set(), set())
    if len(good) < len(suspects):
        return Outcome(rounds, set(), set(suspects))
    second = [frozenset({s, a}) for s, a in zip(suspects, good, strict=False)]
    rounds.append(second)
    return Outcome(rounds, {next(iter(t - set(good))) for t in second if not passes(t)}, set())


def simulate(method, n: int, k: int, seeds: int, minutes: float, flaky: float) -> dict[str, float]:
    nodes = [f"node{i:04d}" for i in range(n)]
    rounds, trials, hours, found, false, unres = [], [], [], 0, 0, 0
    for seed in range(seeds):
        rng = random.Random(seed * 1_000_003 + n * 31 + k)
        bad = set(rng.sample(nodes, k))
        noise = random.Random(seed)

        def passes(test: frozenset[str], bad=bad, noise=noise) -> bool:
            return not test & bad and noise.random() >= flaky

        out = method(nodes, passes)
        rounds.append(len(out.rounds) - 1)
        trials.append(sum(len(r) for r in out.rounds))
        hours.append(sum(len(t) for r in out.rounds[1:] for t in r) * minutes / 60)
        found += len(out.blamed & bad)
        false += len(out.blamed - bad)
        unres += len(out.unresolved)
    return {
        "rounds_mean": statistics.mean(rounds),
        "rounds_max": max(rounds),
        "trials_mean": statistics.mean(trials),
        "trials_max": max(trials),
        "node_hours": statistics.mean(hours),
        "found": found / (k * seeds),
        "false": false,
        "unresolved": unres,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes per localisation iteration")
    parser.add_argument("--flaky", type=float, default=0.02, help="spurious failure rate for the last table")
    parser.add_argument("--sizes", default="64,256,1024")
    args = parser.parse_args()

    header = (
        f"{'N':>5} {'k':>2} {'method':<15} {'rounds':>6} {'max':>4} {'trials':>7} {'max':>5} "
        f"{'node-h':>7} {'found':>6} {'false':>5} {'unres':>5} {'min':>4}"
    )

    def table(flaky: float, sizes: list[int]) -> None:
        print(header)
        for n in sizes:
            g = math.isqrt(n)
            rows_n, cols_n = _grid_shape(n)
            methods = [
                ("adaptive G=0", adaptive(0)),
                (f"adaptive G={g}", adaptive(g)),
                ("binary G=0", adaptive(0, fanout=2)),
                (f"grid {rows_n}x{cols_n}", grid),
                ("pairwise", pairwise),
            ]
            for k in (1, 2, 3):
                minimum = math.ceil(math.log2(math.comb(n, k)))
                for name, method in methods:
                    s = simulate(method, n, k, args.seeds, args.minutes, flaky)
                    print(
                        f"{n:>5} {k:>2} {name:<15} {s['rounds_mean']:>6.2f} {s['rounds_max']:>4} "
                        f"{s['trials_mean']:>7.1f} {s['trials_max']:>5} {s['node_hours']:>7.1f} "
                        f"{s['found']:>6.1%} {s['false']:>5} {s['unresolved']:>5} {minimum:>4}"
                    )
            print()

    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# {args.seeds} seeds per row, {args.minutes:g} min per localisation iteration, no flaky outcomes")
    table(0.0, sizes)
    print(
        f"# the same at N={sizes[1] if len(sizes) > 1 else sizes[0]} with {args.flaky:.0%} of trials failing spuriously"
    )
    table(args.flaky, [sizes[1] if len(sizes) > 1 else sizes[0]])


if __name__ == "__main__":
    main()
