#!/usr/bin/env python3
"""Loading a rack inventory at fleet size: the YAML alone and the whole validated load.

Usage: .venv/bin/python benchmarks/inventory.py [--hosts 1000,10000] [--repeat 5]

For each N, an inventory of N hosts shaped as `benchmarks/report.py` writes it (the rack's
settings in `all.vars`, a `file:` password reference, three variables per host; 10,000 hosts is
1.2 MB) is loaded in this process, `--repeat` times each:

- `load_yaml_file`: the file read and parsed, with every refusal of bringup.core.yamlio;
- the same text through each parser bringup.core.yamlio has (libyaml's, PyYAML's pure-Python one),
  where the tree has more than one;
- `load_valid_rack`: what every command that takes `--rack` does (the YAML, the group merge,
  each host's typed model, the duplicate and secret checks, the profiles).

Printed: the median CPU and wall seconds of each. Runs on a tree before libyaml was used too (it then
reports the one loader that tree has), which is how the before figures were taken.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.fleet_sim.inventory import write_rack_inventory  # noqa: E402
from bringup.core import yamlio  # noqa: E402
from bringup.fleet.select import load_valid_rack  # noqa: E402

RACK = "bench"


def write_inventory(inv: Path, hosts: int) -> None:
    """The inventory benchmarks/report.py loads (same shape; written here to stand alone)."""
    table = {
        f"gpu{i:05d}": {
            "rack_unit": i,
            "ansible_host": f"10.{i // 60000}.{i // 250 % 240}.{i % 250 + 1}",
            "bmc_address": f"10.200.{i // 250 % 240}.{i % 250 + 1}",
        }
        for i in range(1, hosts + 1)
    }
    write_rack_inventory(inv, RACK, table)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median (CPU s, wall s) of ``repeat`` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="1000,10000", help="inventory sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=5, help="loads per figure (the median is printed)")
    args = parser.parse_args()
    loaders = getattr(yamlio, "LOADERS", None)
    default = getattr(yamlio, "LOADER", None)
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; PyYAML {yaml.__version__}, "
        f"libyaml {'present' if yaml.__with_libyaml__ else 'absent'}; "
        f"load_yaml_file uses {default.__name__ if default else 'the pure-Python loader (before libyaml)'}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-inventory-") as tmp:
        for n in (int(x) for x in args.hosts.split(",") if x.strip()):
            inv = Path(tmp) / f"n{n}"
            write_inventory(inv, n)
            path = inv / f"{RACK}.yml"
            text = path.read_text()
            print(f"\n== {n:,} hosts ({path.stat().st_size / 1e6:.2f} MB)")
            rows: list[tuple[str, Callable[[], Any]]] = [
                ("load_yaml_file", lambda p=path: yamlio.load_yaml_file(p))
            ]
            for loader in loaders or ():
                rows.append(
                    (f"yaml.load, {loader.__name__}", lambda t=text, c=loader: yaml.load(t, Loader=c))  # noqa: S506
                )
            rows.append(("load_valid_rack", lambda i=inv: load_valid_rack(RACK, i)))
            for label, fn in rows:
                cpu, wall = timed(fn, args.repeat)
                print(
                    f"   {label:<28} {cpu:6.3f} s CPU {wall:6.3f} s wall (median of {args.repeat})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
