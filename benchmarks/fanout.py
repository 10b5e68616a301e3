#!/usr/bin/env python3
"""The preflight stage over 1 lab node and over N (default 20): wall time and the ratio.

Usage (root): .venv/bin/python benchmarks/fanout.py [--nodes 20] [--repeat 3]
Each repetition runs the whole preflight stage (one SSH round trip per node, every check,
results written to a fleet store) first on one node, then on all N at once. Target: N nodes in
under 3x the time of one. The lab's base image must be cached (any lab test or `make lab-up`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bringup.fleet.lifecycle import State  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402
from bringup.inventory.rack import load_rack  # noqa: E402
from bringup.lab.rack import VirtualRack  # noqa: E402
from bringup.lab.services import lab_services  # noqa: E402
from bringup.ssh.fanout import target_from_vars  # noqa: E402
from burnin.stages.jobs import NodeJob  # noqa: E402
from burnin.stages.runner import BurninRun, record_for  # noqa: E402

PATH_TO_BURNIN = (State.DISCOVERED, State.PROVISIONING, State.PROVISIONED, State.CONFIGURED, State.BURNIN)


def busy_cpu_seconds() -> float:
    """CPU time the whole machine spent busy (user + nice + system), from /proc/stat."""
    with open("/proc/stat") as f:
        user, nice, system = (int(x) for x in f.readline().split()[1:4])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


def timed_preflight(store: FleetStore, jobs: list[NodeJob]) -> tuple[float, float, float]:
    """(wall s, this process's CPU s, the machine's busy CPU s) for one preflight stage."""
    t0, p0, b0 = time.monotonic(), time.process_time(), busy_cpu_seconds()
    outcomes = BurninRun(store, None, ["preflight"]).run(jobs)
    elapsed, own, busy = time.monotonic() - t0, time.process_time() - p0, busy_cpu_seconds() - b0
    errors = [s.error for o in outcomes for s in o.stages if s.error]
    if errors:
        raise SystemExit(f"preflight could not run: {errors[0]}")
    return elapsed, own, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bringup-fanout-"))
    shutil.copytree(REPO / "inventories" / "profiles", work / "inv" / "profiles")
    name = f"fan{uuid.uuid4().hex[:6]}"
    lab = VirtualRack(name, work / "state", work / "inv", services=lab_services)
    try:
        lab.up(args.nodes)
        rack, problems = load_rack(name, work / "inv")
        assert rack is not None, problems
        store = FleetStore(f"sqlite:///{work / 'fleet.db'}")
        jobs = []
        for host in rack.hosts:
            store.enroll(host.name, rack=name, profile=host.profile)
            for state in PATH_TO_BURNIN:
                store.transition(host.name, state, "benchmark: lab nodes are configured")
            target = target_from_vars(host.name, host.vars, rack.path.parent)
            jobs.append(NodeJob(host.name, rack.profiles[host.profile], target, record_for({}, None)))
        ones, alls = [], []
        for i in range(args.repeat):
            ones.append(timed_preflight(store, jobs[:1]))
            alls.append(timed_preflight(store, jobs))
            print(
                f"run {i + 1}: preflight on 1 node {ones[-1][0]:.2f} s, on {len(jobs)} nodes {alls[-1][0]:.2f} s"
            )
        one, many = statistics.median(o[0] for o in ones), statistics.median(a[0] for a in alls)
        print(
            f"median: 1 node {one:.2f} s, {len(jobs)} nodes {many:.2f} s, ratio {many / one:.2f} (target < 3)"
        )
        # Where the time goes: the lab's nodes run on this machine's cores, so their own work
        # (sshd, bash, the stand-ins) competes with the controller. On a real rack it does not.
        own = statistics.median(a[1] for a in alls) / len(jobs)
        nodes = (statistics.median(a[2] for a in alls) - statistics.median(a[1] for a in alls)) / len(jobs)
        cores = os.cpu_count() or 1
        print(
            f"CPU per node: controller {own * 1000:.0f} ms, the node itself {nodes * 1000:.0f} ms; "
            f"{len(jobs)} nodes' own work on {cores} shared core(s) needs at least "
            f"{nodes * len(jobs) / cores:.2f} s of that wall time (busy CPU includes anything else running)"
        )
    finally:
        lab.down()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
