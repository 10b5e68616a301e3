#!/usr/bin/env python3
"""How long `bringup lab up --nodes N` takes once the base image is cached, and `lab down`.

Usage (root): .venv/bin/python benchmarks/lab_up.py [--nodes 20] [--repeat 3]
Prints one line per repetition and the median. The first call builds the base image if it
is not cached yet; that build is timed separately and not counted.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bringup.lab.base_image import ensure_base_image  # noqa: E402
from bringup.lab.rack import VirtualRack  # noqa: E402
from bringup.lab.services import lab_services  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    t0 = time.monotonic()
    ensure_base_image()
    print(f"base image ready in {time.monotonic() - t0:.1f} s (cached after the first build)")

    ups, downs = [], []
    for i in range(args.repeat):
        work = Path(tempfile.mkdtemp(prefix="bringup-bench-"))
        shutil.copytree(REPO / "inventories" / "profiles", work / "inv" / "profiles")
        rack = VirtualRack(
            f"bench{uuid.uuid4().hex[:6]}", work / "state", work / "inv", services=lab_services
        )
        try:
            t0 = time.monotonic()
            rack.up(args.nodes)
            ups.append(time.monotonic() - t0)
            healthy = rack.status()["healthy"]
        finally:
            t0 = time.monotonic()
            rack.down()
            downs.append(time.monotonic() - t0)
            shutil.rmtree(work, ignore_errors=True)
        print(
            f"run {i + 1}: lab up --nodes {args.nodes}: {ups[-1]:.2f} s (healthy={healthy}), "
            f"lab down: {downs[-1]:.2f} s"
        )
    print(
        f"median: lab up --nodes {args.nodes} {statistics.median(ups):.2f} s, "
        f"lab down {statistics.median(downs):.2f} s"
    )


if __name__ == "__main__":
    main()
