#!/usr/bin/env python3
"""Wall time of `bringup provision` over real PXE boots of QEMU VMs (the lab's PXE), by VM count.

Usage (root): .venv/bin/python benchmarks/provision.py [--vms 2,4,8] [--batch 32]
For each count, a fresh PXE lab (half BIOS, half UEFI VMs, software emulation) is discovered
and then provisioned with the real command line, run on the lab's provisioning server; the
figure is the provision step alone, from the first power action to the last phone-home. Lab
start-up and discovery are timed apart. The load average is printed with each figure: the
VMs share the host's CPUs, which is what limits how many boot at once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from bringup.fleet.store import FleetStore
from bringup.lab.pxe import PxeLab, PxeVmSpec

REPO = Path(__file__).resolve().parents[1]


def measure(count: int, batch: int, root: Path) -> dict:
    inventories = root / "inventories"
    shutil.copytree(REPO / "inventories" / "profiles", inventories / "profiles")
    db = root / "fleet.db"
    lab = PxeLab(f"b{uuid.uuid4().hex[:7]}", root / "state", inventories)
    specs = [PxeVmSpec(f"vm{i + 1:02d}", "bios" if i % 2 == 0 else "uefi") for i in range(count)]
    try:
        t0 = time.monotonic()
        state = lab.up(specs)
        up_s = time.monotonic() - t0
        found = lab.bringup("discover", "--rack", state.name, db=db)
        if found.returncode != 0:
            raise SystemExit(f"discover failed:\n{found.stderr[-2000:]}")
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        result = lab.bringup("provision", "--rack", state.name, "--batch", str(batch), db=db, timeout=1800)
        seconds = time.monotonic() - t0
        store = FleetStore.open(str(db))
        try:
            states = [n.state for n in store.list_nodes(rack=state.name)]
        finally:
            store.close()
        return {
            "vms": count,
            "lab_up_s": up_s,
            "provision_s": seconds,
            "provisioned": states.count("provisioned"),
            "rc": result.returncode,
            "load": load,
        }
    finally:
        lab.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vms", default="2,4,8", help="comma-separated VM counts")
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    print(f"{'VMs':>4} {'provisioned':>11} {'provision s':>11} {'s per VM':>8} {'lab up s':>8} {'load':>5}")
    for count in (int(v) for v in args.vms.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-provision-") as tmp:
            r = measure(count, args.batch, Path(tmp))
        print(
            f"{r['vms']:>4} {r['provisioned']:>7} / {r['vms']:<2} {r['provision_s']:>11.1f} "
            f"{r['provision_s'] / r['vms']:>8.1f} {r['lab_up_s']:>8.1f} {r['load']:>5.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
