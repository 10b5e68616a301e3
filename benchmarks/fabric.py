#!/usr/bin/env python3
"""burnin fabric verify at cluster scale: a rail-optimised fat tree of 4,000 nodes x 8 rails
(32,000 HCA ports), its ibnetdiscover -p text with a few faults, parsed and verified.

Usage: .venv/bin/python benchmarks/fabric.py [--nodes 4000] [--rails 8] [--per-unit 32] [--spines 16]

Faults: two swapped cables, one missing cable, one cable at a 1x width, one uplink at HDR. The
script checks each is found (and nothing else), then prints the size of the text, the time to
generate the plan, to parse the text and to verify, and the peak memory of the process
(resource.getrusage ru_maxrss) before and after.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bringup.lab.fabric_sim import ibnetdiscover_text, planned_cables, swap_switch_ends  # noqa: E402
from burnin.fabric.live import fabric_ports  # noqa: E402
from burnin.fabric.plan import parse_plan_yaml  # noqa: E402
from burnin.fabric.verify import verify  # noqa: E402


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=4000)
    ap.add_argument("--rails", type=int, default=8)
    ap.add_argument("--per-unit", type=int, default=32)
    ap.add_argument("--spines", type=int, default=16)
    args = ap.parse_args()
    units = -(-args.nodes // args.per_unit)
    yaml_text = (
        f"speed: NDR\nwidth: 4x\nfat_tree: {{scalable_units: {units}, nodes_per_unit: {args.per_unit},"
        f" rails: {args.rails}, spines: {args.spines}, uplinks: 2}}\n"
    )
    base = peak_mib()
    t0 = time.perf_counter()
    plan = parse_plan_yaml(yaml_text, "bench.yml")
    t_plan = time.perf_counter() - t0
    cables = swap_switch_ends(planned_cables(plan), 10, 11)
    del cables[500]
    degraded = {frozenset(cables[900]): ("1x", "NDR"), frozenset(cables[-1]): ("4x", "HDR")}
    text = ibnetdiscover_text(plan, cables, rates=degraded)
    after_text = peak_mib()
    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "ibnetdiscover.txt"
        saved.write_text(text)
        t0 = time.perf_counter()
        ports = fabric_ports([saved])  # what burnin fabric verify --ibnetdiscover FILE reads
        t_parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    done = verify(plan, ports)
    t_verify = time.perf_counter() - t0
    kinds = sorted(f.kind for f in done.findings)
    hca_ports = sum(1 for link in plan.links if link.a.hca is not None)
    print(
        f"plan: {units * args.per_unit} nodes, {hca_ports} HCA ports, {len(plan.links)} cables ({t_plan:.2f} s)"
    )
    print(f"ibnetdiscover -p text: {len(ports)} port lines, {len(text) / 1e6:.1f} MB")
    print(
        f"read and parse: {t_parse:.2f} s; verify: {t_verify:.2f} s; parse + verify: {t_parse + t_verify:.2f} s"
    )
    print(
        f"peak RSS: {base:.0f} MiB at start, {after_text:.0f} MiB with plan and text, {peak_mib():.0f} MiB at the end"
    )
    print(f"findings: {kinds}")
    for f in done.findings:
        print("  " + f.line())
    expected = ["degraded", "degraded", "missing", "swapped"]
    if kinds != expected:
        sys.exit(f"expected {expected}")


if __name__ == "__main__":
    main()
