#!/usr/bin/env python3
"""The controller at fleet size: preflight over N simulated SSH nodes.

Usage: .venv/bin/python benchmarks/fleet.py [--counts 100,1000,4000] [--latency 0.2]
       [--concurrency N] [--profile-at 1000] [--top 25]

For each N, a simulated fleet (benchmarks/fleet_sim/ssh.py: N SSH endpoints in one asyncssh
process, recorded answers of a healthy 8x H100 node after ``--latency`` seconds) is started,
N nodes are put in a fresh fleet store (SQLite) and an inventory as configured nodes whose
host keys were recorded, and ``burnin run --stages preflight`` runs the way the command runs it
(burnin.run.session.run_rack: the gate, the run ledger, the stage, the store writes) in a
controller process of its own, so its figures are its own: wall time of the run, CPU seconds
(user + system, of all its threads and of any child process it waited for) per node, peak RSS
and peak thread count (sampled every 10 ms). Setting the store up is not counted.
``--profile-at N`` also runs cProfile in every controller thread at that N and prints where
the CPU went (it slows the run: its wall time is not a figure).

The Slurm path (``burnin run --launcher slurm``) is not measured here: it is measured in the
lab at lab size (see docs/fleet-scale.md, "Slurm as the engine"); its row says so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RACK = "sim"
PROFILE = "h100-sxm-8x400g"
SLURM_ROW = "measured in the lab at lab size: see docs/fleet-scale.md"
PATH_TO_CONFIGURED = ("discovered", "provisioning", "provisioned", "configured")


# ---- setting up: the simulated fleet, its inventory and store (not measured) --------------------


def start_sim(nodes: int, state: Path, latency: float, base_port: int) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.fleet_sim.ssh", "--nodes", str(nodes), "--state", str(state),
         "--latency", str(latency), "--base-port", str(base_port)],
        cwd=REPO,
    )  # fmt: skip
    ready = state / "ready.json"
    deadline = time.monotonic() + 60 + nodes / 20
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"the simulated fleet of {nodes} did not start (exit {proc.poll()})")
        time.sleep(0.2)
    return proc, json.loads(ready.read_text())


def write_inventory(inv: Path, sim: dict) -> None:
    import yaml

    hosts = {}
    for i, port in enumerate(sim["ports"]):
        hosts[f"sim{i:05d}"] = {
            "bmc_address": f"10.{100 + i // 65536}.{i // 256 % 256}.{i % 256}",
            "rack_unit": i + 1,
            "ansible_host": sim["host"],
            "ansible_port": port,
        }
    doc = {
        "all": {
            "vars": {
                "profile": PROFILE,
                "bmc_vendor": "generic",
                "bmc_username": "root",
                "bmc_password": "env:SIM_BMC_PASSWORD",
                "ansible_user": "root",
                "ansible_ssh_private_key_file": sim["client_key"],
            },
            "children": {RACK: {"hosts": hosts}},
        }
    }
    shutil.copytree(REPO / "inventories" / "profiles", inv / "profiles", dirs_exist_ok=True)
    (inv / f"{RACK}.yml").write_text(yaml.safe_dump(doc, sort_keys=False))


def fill_store(url: str, inv: Path, sim: dict) -> None:
    from bringup.fleet.lifecycle import State
    from bringup.fleet.models import utcnow
    from bringup.fleet.store import FleetStore
    from bringup.inventory.rack import load_rack
    from bringup.ssh.hostkeys import RECORDED

    rack, problems = load_rack(RACK, inv)
    if rack is None:
        raise SystemExit(f"the simulated inventory does not load: {problems[:3]}")
    store = FleetStore(url)
    for host in rack.hosts:
        store.enroll(host.name, rack=RACK, profile=host.profile)
        for state in PATH_TO_CONFIGURED:
            store.transition(host.name, State(state), "benchmark: a simulated node")
        store.update_node(
            host.name,
            ssh_host_keys=[sim["host_key"]],
            # the BMC's event log read (empty) an hour ago, as `bringup discover` leaves it
            hardware={
                RECORDED: {"at": "2026-01-01T00:00:00", "source": "benchmark"},
                "event_log": [],
                "event_log_read_at": (utcnow() - timedelta(hours=1)).isoformat(),
            },
        )


# ---- the controller, in a process of its own ------------------------------------------------------


def controller(args: argparse.Namespace) -> None:
    """Run the preflight over the rack and print this process's figures as one JSON line."""
    import resource
    import threading

    from bringup.fleet.store import FleetStore
    from burnin.run.session import RackRunRequest, run_rack

    peak = {"threads": 0}
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("Threads:"):
                        peak["threads"] = max(peak["threads"], int(line.split()[1]))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    store = FleetStore(args.store)
    profiles: list = []
    if args.profile_to:
        import cProfile

        def profile_thread(*_: object) -> None:
            p = cProfile.Profile(time.thread_time)  # CPU of this thread, not wall time
            profiles.append(p)
            p.enable()

        threading.setprofile(profile_thread)
        main_profile = cProfile.Profile(time.thread_time)
        profiles.append(main_profile)
        main_profile.enable()
    request = RackRunRequest(RACK, ["preflight"])
    if args.concurrency:
        request = RackRunRequest(RACK, ["preflight"], concurrency=args.concurrency)
    usage0, t0, main0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic(), time.thread_time()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    outcomes = run_rack(store, Path(args.inventory), request)
    wall, main_cpu = time.monotonic() - t0, time.thread_time() - main0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    running.clear()
    if args.profile_to:
        import pstats

        threading.setprofile(None)  # type: ignore[arg-type]
        main_profile.disable()
        stats = pstats.Stats(*profiles)
        stats.dump_stats(args.profile_to)
    verdicts: dict[str, int] = {}
    for o in outcomes:
        verdicts[o.verdict.value] = verdicts.get(o.verdict.value, 0) + 1
    # All of the controller's CPU: its threads, and any process it started and waited for (none
    # on the SSH path today; work moved to a helper process would still count here).
    cpu = (usage.ru_utime - usage0.ru_utime) + (usage.ru_stime - usage0.ru_stime)
    children_cpu = (children.ru_utime - children0.ru_utime) + (children.ru_stime - children0.ru_stime)
    cpu += children_cpu
    print(
        json.dumps(
            {
                "nodes": len(outcomes),
                "wall_s": wall,
                "cpu_s": cpu,
                "cpu_ms_per_node": 1000 * cpu / max(1, len(outcomes)),
                # the main thread judges and writes the store; the others are SSH (paramiko's, the
                # connectors, the reader)
                "main_ms_per_node": 1000 * main_cpu / max(1, len(outcomes)),
                "children_cpu_s": children_cpu,
                "rss_mib": usage.ru_maxrss / 1024,
                "threads": peak["threads"],
                "verdicts": verdicts,
            }
        )
    )


def measure(n: int, args: argparse.Namespace, base_port: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"bringup-fleet{n}-"))
    sim_proc, sim = start_sim(n, work / "sim", args.latency, base_port)
    try:
        url = f"sqlite:///{work / 'fleet.db'}"
        t0 = time.monotonic()
        write_inventory(work / "inv", sim)
        fill_store(url, work / "inv", sim)
        print(f"N={n}: fleet and store ready in {time.monotonic() - t0:.0f} s", file=sys.stderr)
        command = [sys.executable, __file__, "--controller", "--store", url, "--inventory", str(work / "inv")]
        if args.concurrency:
            command += ["--concurrency", str(args.concurrency)]
        profile_file = work / "controller.prof"
        if args.profile_at == n:
            command += ["--profile-to", str(profile_file)]
        done = subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, "SIM_BMC_PASSWORD": "x"}
        )
        if done.returncode != 0:
            raise SystemExit(f"the controller failed at N={n}:\n{done.stderr[-3000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        if args.profile_at == n:
            import pstats

            print(f"\n--- where the controller's CPU went at N={n} (cProfile, all threads; tottime) ---")
            stats = pstats.Stats(str(profile_file))
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(r"/(bringup|burnin|paramiko)/", args.top)
        return figures
    finally:
        sim_proc.send_signal(signal.SIGTERM)
        try:
            sim_proc.wait(30)
        except subprocess.TimeoutExpired:
            sim_proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,1000,4000")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds a simulated node takes")
    parser.add_argument(
        "--concurrency", type=int, default=0, help="burnin run --concurrency (default: its own)"
    )
    parser.add_argument("--profile-at", type=int, default=0, metavar="N")
    parser.add_argument("--top", type=int, default=25)
    # below Linux's ephemeral range (32768-60999): 4,000 listeners never meet an outgoing connection
    parser.add_argument("--base-port", type=int, default=20000)
    parser.add_argument("--controller", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--inventory", help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.controller:
        controller(args)
        return
    counts = [int(c) for c in args.counts.split(",")]
    rows = []
    for n in counts:
        figures = measure(n, args, args.base_port)
        rows.append(figures)
        print(
            f"N={n}: {figures['wall_s']:.1f} s, {figures['cpu_ms_per_node']:.1f} ms CPU/node, "
            f"{figures['rss_mib']:.0f} MiB, {figures['threads']} threads, {figures['verdicts']}",
            file=sys.stderr,
        )
    print(f"\npreflight on the simulated fleet, {args.latency} s per node answer, controller process only")
    header = (
        f"{'path':<6} {'nodes':>6} {'wall s':>8} {'CPU ms/node':>12} {'of it judging+store':>20} "
        f"{'peak RSS MiB':>13} {'peak threads':>13}"
    )
    print(header)
    for r in rows:
        print(
            f"{'ssh':<6} {r['nodes']:>6} {r['wall_s']:>8.1f} {r['cpu_ms_per_node']:>12.1f} "
            f"{r['main_ms_per_node']:>20.1f} {r['rss_mib']:>13.0f} {r['threads']:>13}"
        )
    print(f"{'slurm':<6} {SLURM_ROW}")
    print("targets at 1,000 nodes (SSH): < 10 ms CPU per node, <= 256 threads, < 1 GiB RSS")


if __name__ == "__main__":
    main()
