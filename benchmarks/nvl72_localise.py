#!/usr/bin/env python3
"""NVL72 localisation in simulation: 4 racks of 18 trays (72 nodes), with racks and without.

Usage: .venv/bin/python benchmarks/nvl72_localise.py [--seeds 200] [--racks 4] [--trays 18] [--min-trays 2]
(--min-trays 3: the NVLink pass of a profile whose NVLink-domain floor covers 3 trays or more, GB300)

Faults (placed at random per seed, fixed seeds); a trial is a set of trays running an all-reduce:
  bad switch tray   every trial holding a tray of the bad rack fails with multi-node NVLink on
                    (its NVLink fabric carries that tray's traffic, even between its own 4 GPUs);
                    with it off (over InfiniBand) everything passes
  bad tray NVLink   every trial holding the tray fails with MNNVL on; it passes over InfiniBand
  bad tray          every trial holding the tray fails both ways (its GPUs or NICs)
Methods:
  racks             the nccl stage on an NVL72 profile: one group per NVLink domain, the mnnvl
                    pass (burnin.plan.nvlink_groups.RackLocalizer: a Localizer per domain and the
                    rack rule), then the ib pass over the same groups, except that a tray the
                    mnnvl pass blamed runs beside a tray it cleared (ib_pass_groups), localised
                    the same way where a group fails; then burnin.plan.nvlink_blame.localise_racks
  no racks G=0      the stage without domains: burnin.plan.nccl_groups.Localizer over the 72
                    trays, the soak as one group (the profiles' default), MNNVL on as NCCL picks
  no racks G=18     the same with soak groups of 18 in rack order (a group per rack, no rack rule)
Columns: rounds and tests (trials) in all, soak rounds included (the ib pass's too); blamed =
trays blamed one by one; stmts = statements made (racks: RackBlame lines; without racks: one per
blamed tray); right = the fault named as it is: the bad rack as a whole with no tray blamed, or
the bad tray alone (and, with racks, by the pass it was slow in); unres = trays left unresolved.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from burnin.plan.nccl_groups import MIN_TEST_NODES, Localizer  # noqa: E402
from burnin.plan.nvlink_blame import localise_racks  # noqa: E402
from burnin.plan.nvlink_groups import RackLocalizer, ib_pass_groups  # noqa: E402

Outcome = Callable[[frozenset[str]], bool]  # trial -> failed


def drive(loc) -> int:  # noqa: ANN001 - a Localizer or a RackLocalizer
    """Runs it to the end with its outcome; returns the rounds."""
    while tests := loc.next_tests():
        for test in tests:
            loc.record(test, not loc.fails(test))
    return loc.round


def fault(kind: str, racks: dict[str, list[str]], rng: random.Random) -> tuple[Outcome, Outcome, dict]:
    """(fails with MNNVL on, fails with it off, what is bad)."""
    rack = rng.choice(sorted(racks))
    if kind == "bad switch tray":
        bad = frozenset(racks[rack])
        return (lambda t: bool(t & bad)), (lambda t: False), {"rack": rack}
    tray = rng.choice(racks[rack])
    on = lambda t: tray in t  # noqa: E731
    off = on if kind == "bad tray" else (lambda t: False)
    return on, off, {"rack": rack, "tray": tray, "kind": "tray" if kind == "bad tray" else "tray_nvlink"}


def with_racks(
    racks: dict[str, list[str]], on: Outcome, off: Outcome, bad: dict, min_trays: int = MIN_TEST_NODES
) -> dict:
    rounds = tests = 0
    slow: dict[str, set[str]] = {}
    fabric: dict[str, list[str]] = {}
    unres: list[str] = []
    groups: dict = {}
    anchors: dict = {}
    for name, fails in (("mnnvl", on), ("ib", off)):
        least = min_trays if name == "mnnvl" else MIN_TEST_NODES  # the NVLink floor's trays, pass 1 only
        loc = RackLocalizer(racks, groups=groups, anchors=anchors, min_nodes=least)
        loc.fails = fails
        rounds += drive(loc)
        tests += loc.trials
        slow[name] = set(loc.culprits)
        fabric[name] = list(loc.fabric)
        unres += loc.unresolved
        groups, anchors = ib_pass_groups(racks, loc.culprits, loc.cleared, loc.fabric)
    for rack in fabric["ib"]:  # a rack slow over InfiniBand as a whole: each of its trays, both ways
        slow["ib"] |= set(racks[rack])
        if rack in fabric["mnnvl"]:
            slow["mnnvl"] |= set(racks[rack])
    whole = [r for r in fabric["mnnvl"] if r not in fabric["ib"]]
    blames = localise_racks(racks, mnnvl_slow=slow["mnnvl"], ib_slow=slow["ib"], fabric=whole)
    per_tray = [b for b in blames if len(b.nodes) == 1]
    if "tray" in bad:
        right = [(b.kind, b.nodes) for b in blames] == [(bad["kind"], (bad["tray"],))]
    else:
        right = [(b.kind, b.rack) for b in blames] == [("nvlink_fabric", bad["rack"])]
    return {
        "rounds": rounds,
        "tests": tests,
        "blamed": len(per_tray),
        "stmts": len(blames),
        "right": right,
        "unres": len(set(unres)),
    }


def without_racks(group: int) -> Callable[[dict[str, list[str]], Outcome, Outcome, dict], dict]:
    def run(racks: dict[str, list[str]], on: Outcome, off: Outcome, bad: dict) -> dict:
        nodes = [n for trays in racks.values() for n in trays]
        loc = Localizer(nodes, group)
        loc.fails = on  # the stage without domains: NCCL takes multi-node NVLink where it exists
        rounds = drive(loc)
        blamed = set(loc.culprits)
        want = {bad["tray"]} if "tray" in bad else set()
        right = blamed == want if want else False  # a rack's fault is never named as the rack
        return {
            "rounds": rounds,
            "tests": len(loc.history),
            "blamed": len(blamed),
            "stmts": len(blamed),
            "right": right,
            "unres": len(loc.unresolved),
        }

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--racks", type=int, default=4)
    parser.add_argument("--trays", type=int, default=18)
    # GB300's NVLink-domain floor covers 3 trays or more, so its NVLink pass tries no fewer
    parser.add_argument("--min-trays", type=int, default=MIN_TEST_NODES)
    args = parser.parse_args()
    racks = {
        f"r{r + 1:02d}": [f"r{r + 1:02d}-t{t + 1:02d}" for t in range(args.trays)] for r in range(args.racks)
    }
    methods = [
        ("racks", lambda *a: with_racks(*a, min_trays=args.min_trays)),
        ("no racks G=0", without_racks(0)),
        (f"no racks G={args.trays}", without_racks(args.trays)),
    ]
    print(
        f"# {args.racks} racks x {args.trays} trays = {args.racks * args.trays} nodes, {args.seeds} seeds per row"
    )
    print(
        f"{'fault':<16} {'method':<15} {'rounds':>6} {'max':>4} {'tests':>6} {'max':>4} "
        f"{'blamed':>6} {'stmts':>5} {'right':>6} {'unres':>5}"
    )
    for kind in ("bad switch tray", "bad tray NVLink", "bad tray"):
        for name, method in methods:
            rows = []
            for seed in range(args.seeds):
                on, off, bad = fault(kind, racks, random.Random(seed))
                rows.append(method(racks, on, off, bad))
            r = [x["rounds"] for x in rows]
            t = [x["tests"] for x in rows]
            print(
                f"{kind:<16} {name:<15} {statistics.mean(r):>6.2f} {max(r):>4} {statistics.mean(t):>6.1f} "
                f"{max(t):>4} {statistics.mean(x['blamed'] for x in rows):>6.1f} "
                f"{statistics.mean(x['stmts'] for x in rows):>5.1f} "
                f"{sum(x['right'] for x in rows) / len(rows):>6.1%} {sum(x['unres'] for x in rows):>5}"
            )
        print()


if __name__ == "__main__":
    main()
