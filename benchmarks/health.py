#!/usr/bin/env python3
"""How long the in-service loop takes: `burnin health` on a lab node, `burnin sync` of 1,000 nodes.

Usage: .venv/bin/python benchmarks/health.py [--repeat 5] [--nodes 1000] [--skip-lab]

- **health** (root: a 1-node virtual rack): the node gets what the burnin_tools role installs
  (bringup/lab/burnin_install.py), then the role's health-check program runs ``--repeat`` times
  over SSH, as slurmd would run it. Printed: the program's wall time on the node (python start,
  imports, the checks, the state and metrics files; a first run that compiles the .pyc files is
  left out) and the checks' own wall time from its JSON. Target: under 2 s of its 10 s budget.
- **sync**: a SQLite fleet store with ``--nodes`` golden nodes and `sinfo` output generated in
  the real format (burnin.parsers.slurm.SINFO_FORMAT, as the 22.05 captures in
  tests/fixtures/samples print it): 5% drained by a health check, 2% by operators, the rest
  idle, allocated or mixed. Printed: the controller time of the first sync (parse, record every
  drain, fail the health-drained golden nodes) and of a second one (nothing new). Target: under
  5 s for 1,000 nodes. The health results are not fetched (that is SSH time, bounded per node).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bench_health(repeat: int) -> None:
    import os

    from bringup.lab.burnin_install import install_health, node_root
    from bringup.lab.rack import VirtualRack
    from bringup.lab.services import lab_services
    from tests.lab.conftest import lab_inventory_dir, node_ssh

    if os.geteuid() != 0:
        print("health: skipped (the virtual rack needs root)")
        return
    with tempfile.TemporaryDirectory(prefix="bench-health-") as tmp:
        root = Path(tmp)
        inv = lab_inventory_dir(root / "inventories")
        rack = VirtualRack(f"h{uuid.uuid4().hex[:7]}", root / "state", inv, services=lab_services)
        (root / "faults.yml").write_text("nodes: {}\n")
        try:
            state = rack.up(1, root / "faults.yml")
            node = state.nodes[0].name
            role = install_health(
                node_root(state.state_dir, node), root / "bundle", inv / "profiles" / "h100-sxm-8x400g.yml"
            )
            program = role["burnin_tools_health_program"]
            last = f"{role['burnin_tools_health_state_dir']}/last.json"
            run = (
                f"s=$(date +%s.%N); {program} --no-drain 2>/dev/null; rc=$?; e=$(date +%s.%N); "
                f"python3 -c \"import json,sys; d=json.load(open('{last}')); "
                "print(float(sys.argv[2])-float(sys.argv[1]), d['wall_s'], d['verdict'], sys.argv[3])\" $s $e $rc"
            )
            node_ssh(state, node, run, timeout=60)  # compiles the .pyc files
            walls, checks = [], []
            for _ in range(repeat):
                rc, out, err = node_ssh(state, node, run, timeout=60)
                wall, check_s, verdict, code = out.split()
                assert rc == 0 and verdict == "PASS" and code == "0", (out, err)
                walls.append(float(wall))
                checks.append(float(check_s))
            print(
                f"health on a lab node ({repeat} runs): program wall median {statistics.median(walls):.2f} s, "
                f"max {max(walls):.2f} s; its checks median {statistics.median(checks):.2f} s "
                f"(budget 10 s, target < 2 s)"
            )
        finally:
            rack.down()


def sinfo_text(nodes: list[str], rng: random.Random) -> tuple[str, int, int]:
    from burnin.service.reasons import health_reason

    lines, health, operator = [], 0, 0
    t0 = datetime(2026, 11, 24, 6, 0, 0)
    findings = [
        ("gpu_inventory", "7 GPU(s) found, the profile has 8 (nvidia-smi says 7 attached)"),
        ("ib_ports", "mlx5_6 port 1 is Down (Polling), the profile wants Active"),
        ("gpu_ecc", "GPU 3 (0000:9b:00.0) has 2 uncorrected volatile DRAM errors"),
    ]
    for name in nodes:
        roll = rng.random()
        when = (t0 + timedelta(seconds=rng.randrange(36000))).isoformat()
        if roll < 0.05:
            health += 1
            state = rng.choice(["drained", "draining"])
            lines.append(f"{name}|{state}|root(0)|{when}|{health_reason(*rng.choice(findings))}")
        elif roll < 0.07:
            operator += 1
            lines.append(f"{name}|drained|alice(1000)|{when}|PSU swap, ticket {rng.randrange(9999)}")
        else:
            lines.append(f"{name}|{rng.choice(['idle', 'allocated', 'mixed'])}|Unknown|Unknown|none")
    return "\n".join(lines) + "\n", health, operator


def bench_sync(count: int) -> None:
    from bringup.fleet.lifecycle import State
    from bringup.fleet.models import Node
    from bringup.fleet.store import FleetStore
    from burnin.parsers.slurm import parse_sinfo_nodes
    from burnin.service.sync import apply_view

    rack = "r-bench"
    names = [f"gpu{i:04d}" for i in range(1, count + 1)]
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        store = FleetStore(f"sqlite:///{tmp}/fleet.db")
        with store.session() as s:  # set-up, not measured: golden nodes
            for name in names:
                s.add(
                    Node(
                        name=name,
                        rack=rack,
                        profile="h100-sxm-8x400g",
                        state=State.GOLDEN.value,
                        macs=[],
                        hardware={},
                    )
                )
        text, health, operator = sinfo_text(names, random.Random(14))
        times = []
        for _ in range(2):
            t = time.perf_counter()
            result = apply_view(store, rack, parse_sinfo_nodes(text))
            times.append(time.perf_counter() - t)
            if len(times) == 1:
                assert len(result.failed) == health and result.recorded == health + operator
        store.close()
    print(
        f"sync of {count} nodes ({health} drained by health checks, {operator} by operators): "
        f"first {times[0]:.2f} s, again (nothing new) {times[1]:.2f} s (target < 5 s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--skip-lab", action="store_true", help="Only the sync benchmark (no root needed).")
    args = ap.parse_args()
    if not args.skip_lab:
        bench_health(args.repeat)
    bench_sync(args.nodes)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(REPO))
    main()
