#!/usr/bin/env python3
"""Wall time of `bringup configure` on the virtual rack: a first run and a no-change run.

Usage (root): .venv/bin/python benchmarks/configure.py [--nodes 4,16] [--batch 32]
For each size, a fresh lab of healthy nodes (recorded as provisioned, as in the lab tests) is
configured twice with the real command line (`bringup configure --rack ...`, every role); the
second run must change nothing. Lab start-up is timed apart and not counted. The machine's
load average is printed with each figure: the lab's nodes share the host's CPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from bringup.lab.rack import VirtualRack
from bringup.lab.services import lab_services

REPO = Path(__file__).resolve().parents[1]
BRINGUP = Path(sys.executable).parent / "bringup"


def provision(db: Path, state) -> None:
    store = FleetStore.open(str(db))
    for node in state.nodes:
        store.enroll(node.name, state.name, "h100-sxm-8x400g", rack_unit=node.index + 1)
        for target in (State.DISCOVERED, State.PROVISIONING):
            store.transition(node.name, target, "benchmark: lab nodes are pre-provisioned")
        store.update_node(node.name, ip=node.ip)
        store.transition(node.name, State.PROVISIONED, "benchmark: lab nodes are pre-provisioned")
    store.close()


def configure(db: Path, inventory_dir: Path, rack: str, batch: int) -> tuple[float, dict]:
    cmd = [str(BRINGUP), "--db", str(db), "--inventory-dir", str(inventory_dir)]
    cmd += ["configure", "--rack", rack, "--batch", str(batch), "--json"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"configure failed (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return elapsed, json.loads(proc.stdout)


def one_size(nodes: int, batch: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-configure-") as tmp:
        root = Path(tmp)
        inventory_dir = root / "inventories"
        shutil.copytree(REPO / "inventories" / "profiles", inventory_dir / "profiles")
        rack = VirtualRack(f"b{uuid.uuid4().hex[:7]}", root / "state", inventory_dir, services=lab_services)
        t0 = time.monotonic()
        state = rack.up(nodes)
        print(f"{nodes} nodes: lab up in {time.monotonic() - t0:.1f} s (not counted)", flush=True)
        try:
            db = root / "fleet.db"
            provision(db, state)
            for label in ("first run", "no-change run"):
                load = os.getloadavg()[0]
                elapsed, summary = configure(db, inventory_dir, state.name, batch)
                changed = sum(n["changed"] for n in summary["nodes"])
                results = {n["result"] for n in summary["nodes"]}
                print(
                    f"{nodes} nodes: {label}: {elapsed:.1f} s wall, {changed} task changes, "
                    f"results {sorted(results)}, load average before {load:.1f}",
                    flush=True,
                )
        finally:
            rack.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="4,16", help="comma-separated lab sizes")
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    print(f"host: {os.cpu_count()} CPUs", flush=True)
    for size in (int(n) for n in args.nodes.split(",")):
        one_size(size, args.batch)


if __name__ == "__main__":
    main()
