#!/usr/bin/env python3
"""The fleet store at scale: `burnin golden` over N nodes x R runs of history, and what evidence costs.

Usage: .venv/bin/python benchmarks/store.py [--nodes 1000] [--runs 300] [--sample 200] [--keep DIR]
                                            [--db URL]
       (quick try: --nodes 50 --runs 20 --sample 20)

Default store: a fresh SQLite file in a temporary directory (or in ``--keep``). ``--db
postgresql://...`` builds it in that database instead, which must be empty (one made with
createdb for the purpose: the benchmark refuses a database that holds nodes or other tables,
benchmarks/fleet_sim/bench_db.py) and is left holding the history (``--golden-only`` times it
again); drop it after.

1. New evidence per preflight: ``--sample`` node-preflights go through ``FleetStore.add_results``
   as the runner saves them, with real tool outputs (tests/fixtures/samples) that differ per node
   and run the way real ones do (timestamps, serials, the kernel log's new lines). Prints the
   evidence an older store kept (every result's output in full) and what the store keeps
   now (one blob per distinct output, zlib), per node per preflight. Target: under 50 KB.
2. History: N nodes x R nightly runs (every check of every stage: 20 results per run, 3 events),
   written in bulk; each run's outputs are blobs shared by the rack that night (so the file stays
   small enough to build quickly; step 1 measures what distinct outputs cost).
3. `burnin golden --rack bench` as the operator runs it (a fresh process, CLI and all): its wall
   time and peak memory (max RSS), twice (a cold and a warm page cache). Target: under 5 s.
"""

from __future__ import annotations

import argparse
import lzma
import os
import resource
import shutil
import sys
import tempfile
import time
import zlib
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import func, insert, select  # noqa: E402

from benchmarks.fleet_sim.bench_db import refuse_unless_bench_store, refuse_unless_fresh, store_bytes  # noqa: E402
from benchmarks.fleet_sim.inventory import write_rack_inventory  # noqa: E402
from bringup.fleet import evidence  # noqa: E402
from bringup.fleet.models import CheckResult, Event, EvidenceBlob, Node, Run, utcnow  # noqa: E402
from bringup.fleet.store import FleetStore  # noqa: E402

SAMPLES = REPO / "tests" / "fixtures" / "samples"
RACK = "bench"
PROFILE = "h100-sxm-8x400g"
KB = 1000

# check -> the sample its output comes from (checks that share a command share the sample)
PREFLIGHT = {
    "gpu_inventory": "nvidia_smi_q_8xh100_535_183.txt",
    "gpu_ecc": "nvidia_smi_q_8xh100_535_183.txt",
    "gpu_memory": "nvidia_smi_q_8xh100_535_183.txt",
    "gpu_versions": "nvidia_smi_q_8xh100_535_183.txt",
    "nvlink": "nvidia_smi_nvlink_s_8xa100_ok.txt",
    "fabric_manager": None,
    "kernel_log": "dmesg_boot_mlx5_pcie_bw_nvswitch_h100.txt",
    "ib_ports": "ibstat_h100_ndr_all_active.txt",
    "ofed_version": None,
    "disk_usage": None,
    "clock_offset": None,
    "container_gpu": "nvidia_smi_L_4xh100_with_mig.txt",
    "bmc_event_log": None,
}
OTHER_STAGES = {"gpu": ("dcgm_diag", "gpu_burn", "gpu_clocks", "gpu_power"), "pcie": ("pcie_links",)}
GROUP_STAGES = {"ib": ("ib_bandwidth",), "nccl": ("nccl_soak",)}


def sample(name: str | None, fallback: str) -> str:
    if name and (SAMPLES / name).exists():
        return (SAMPLES / name).read_text(errors="replace")
    return fallback


def preflight_outputs(node: int, run: int) -> dict[str, str]:
    """One node's preflight outputs on one night: the samples, varied as real ones vary."""
    stamp = (
        f"Timestamp                                 : Tue Nov {1 + run % 28:2d} 02:{node % 60:02d}:00 2026\n"
    )
    out = {}
    for check, name in PREFLIGHT.items():
        text = sample(name, "")
        if check.startswith("gpu_"):
            text = stamp + text.replace("Serial Number", f"Serial Number {node:05d}", 1)
        elif check == "kernel_log":
            text += (
                f"2026-11-{1 + run % 28:02d}T02:00:00,000000+00:00 kernel: run {run} node {node} boot ok\n"
            )
        elif check == "fabric_manager":
            text = "active\n"
        elif check == "ofed_version":
            text = "MLNX_OFED_LINUX-24.04-0.6.6.0:\n"
        elif check == "disk_usage":
            used = 420000000 + run * 7 + node
            text = (
                "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
                f"/dev/nvme0n1p2 1843200000 {used} 1000000 42% /\n"
            )
        elif check == "clock_offset":
            text = f"{1795000000 + run * 86400 + node}.{node:09d}\n"
        elif check == "bmc_event_log":
            text = "[]\n"
        elif check == "container_gpu":
            text = text.replace("GPU-", f"GPU-{node:05d}-", 8)
        out[check] = text
    return out


def enc(text: str) -> bytes:
    return text.encode()


def measure_preflight_evidence(store: FleetStore, sample_size: int) -> None:
    print(f"1. new evidence per preflight ({sample_size} node-preflights through FleetStore.add_results)")
    raw_all = distinct_raw = 0
    with store.reading() as s:
        before = s.execute(select(func.coalesce(func.sum(func.length(EvidenceBlob.data)), 0))).scalar_one()
    for i in range(sample_size):
        node, run = i % 1000, i // 1000 + 10_000
        outputs = preflight_outputs(node, run)
        raw_all += sum(len(enc(t)) for t in outputs.values())
        distinct_raw += sum(len(enc(t)) for t in set(outputs.values()))
        rows = [
            {"stage": "preflight", "check": c, "verdict": "PASS", "evidence": t} for c, t in outputs.items()
        ]
        store.add_results("sample", rows)
    with store.reading() as s:
        after = s.execute(select(func.coalesce(func.sum(func.length(EvidenceBlob.data)), 0))).scalar_one()
    stored = after - before
    one = preflight_outputs(1, 1)
    joined = "".join(sorted(set(one.values()))).encode()
    print(
        f"   each result's output in full (before dedup): {raw_all / sample_size / KB:8.1f} KB per node per preflight"
    )
    print(f"   one copy per distinct output (dedup):          {distinct_raw / sample_size / KB:8.1f} KB")
    print(
        f"   dedup + zlib, as stored now:                    {stored / sample_size / KB:8.1f} KB   (target < 50 KB)"
    )
    t0 = time.perf_counter()
    z = sum(len(zlib.compress(enc(t), 6)) for t in set(one.values()))
    tz = time.perf_counter() - t0
    t0 = time.perf_counter()
    x = sum(len(lzma.compress(enc(t), preset=6)) for t in set(one.values()))
    tx = time.perf_counter() - t0
    print(
        f"   codec on one preflight's {len(joined) / KB:.1f} KB: zlib-6 {z / KB:.1f} KB in {tz * 1000:.1f} ms, "
        f"lzma-6 {x / KB:.1f} KB in {tx * 1000:.1f} ms (zlib is used)"
    )


def write_inventory(inv: Path, nodes: int) -> None:
    hosts = {
        f"n{i:04d}": {
            "rack_unit": i,
            "ansible_host": f"10.{i // 250}.{i % 250}.1",
            "bmc_address": f"10.99.{i // 250}.{i % 250}",
        }
        for i in range(1, nodes + 1)
    }
    write_rack_inventory(inv, RACK, hosts, PROFILE)


def build_history(store: FleetStore, nodes: int, runs: int) -> None:
    print(f"2. history: {nodes} nodes x {runs} runs, written in bulk", flush=True)
    t0 = time.monotonic()
    now = utcnow()
    with store.session() as s:
        s.execute(
            insert(Node),
            [
                {
                    "name": f"n{i:04d}",
                    "serial": f"SN{i:05d}",
                    "rack": RACK,
                    "profile": PROFILE,
                    "state": "golden",
                    "rack_unit": i,
                    "ip": f"10.{i // 250}.{i % 250}.1",
                    "macs": [],
                    "hardware": {},
                    "ssh_host_keys": [],
                    "created_at": now - timedelta(days=runs + 1),
                    "updated_at": now,
                }
                for i in range(1, nodes + 1)
            ],
        )
        ids = list(s.execute(select(Node.id).where(Node.rack == RACK).order_by(Node.id)).scalars())
    for r in range(runs):
        at = now - timedelta(days=runs - 1 - r, hours=1)
        with store.session() as s:
            run_id = s.execute(
                insert(Run).returning(Run.id),
                [
                    {
                        "kind": "burnin",
                        "rack": RACK,
                        "actor": "bench",
                        "status": "done",
                        "params": {},
                        "started_at": at,
                        "finished_at": at,
                    }
                ],
            ).scalar_one()
            # the night's outputs: one blob per distinct output, shared by the rack (see the docstring)
            cache: dict[str, int] = {}
            blob = {c: evidence.put(s, t, cache) for c, t in preflight_outputs(0, r).items()}
            other = evidence.put(s, f"run {r}: stage output\n", cache)
            results, events = [], []
            for node_id in ids:
                for check, blob_id in blob.items():
                    results.append(_row(run_id, node_id, "preflight", check, blob_id, at))
                for stage, checks in {**OTHER_STAGES, **GROUP_STAGES}.items():
                    for check in checks:
                        results.append(_row(run_id, node_id, stage, check, other, at))
                for kind, frm, to in (
                    ("transition", "golden", "burnin"),
                    ("burnin", None, None),
                    ("transition", "burnin", "golden"),
                ):
                    events.append(
                        {
                            "node_id": node_id,
                            "run_id": run_id,
                            "time": at,
                            "kind": kind,
                            "from_state": frm,
                            "to_state": to,
                            "reason": f"burn-in run {run_id}",
                            "actor": "bench",
                            "details": {},
                        }
                    )
            s.execute(insert(CheckResult), results)
            s.execute(insert(Event), events)
        if (r + 1) % max(1, runs // 10) == 0:
            print(f"   {r + 1}/{runs} runs ({time.monotonic() - t0:.0f} s)", flush=True)


def _row(run_id: int, node_id: int, stage: str, check: str, blob_id: int, at) -> dict:  # noqa: ANN001
    return {
        "run_id": run_id,
        "node_id": node_id,
        "stage": stage,
        "check": check,
        "verdict": "PASS",
        "metrics": {},
        "findings": [],
        "evidence_id": blob_id,
        "time": at,
    }


def golden_once(url: str, inv: Path) -> tuple[float, float, float]:
    """`burnin golden --rack bench` in a fresh process: (wall s, max RSS MiB, CPU s)."""
    cmd = [
        str(REPO / ".venv" / "bin" / "burnin"),
        "--inventory-dir",
        str(inv),
        "golden",
        "--rack",
        RACK,
    ]
    if not Path(cmd[0]).exists():
        cmd = [sys.executable, "-m", "burnin", *cmd[1:]]
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # a child of our own, so its max RSS is its alone
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        # the store in the environment, not the command line (ps shows a URL's password)
        os.execve(cmd[0], cmd, {**os.environ, "BRINGUP_DB": url})
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"burnin golden failed: {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--sample", type=int, default=200, help="node-preflights measured in step 1")
    parser.add_argument("--keep", type=Path, help="build in this directory and keep it")
    parser.add_argument(
        "--golden-only", action="store_true", help="time golden on the store --keep (or --db) holds"
    )
    parser.add_argument(
        "--db", help="an empty database's SQLAlchemy URL (postgresql://...) instead of a SQLite file"
    )
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-store-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        db, inv = work / "fleet.db", work / "inventories"
        url = args.db or f"sqlite:///{db}"
        if args.golden_only:
            if args.db:
                refuse_unless_bench_store(url, frozenset({RACK, "sample-rack"}))
            if not inv.exists():
                write_inventory(inv, args.nodes)
            time_golden(url, inv, args.nodes)
            return
        if args.db:
            refuse_unless_fresh(url)
        elif db.exists():
            db.unlink()
        write_inventory(inv, args.nodes)
        store = FleetStore(url)
        print(f"store: {store.engine.dialect.name}", flush=True)
        store.enroll("sample", "sample-rack", PROFILE)
        measure_preflight_evidence(store, args.sample)
        build_history(store, args.nodes, args.runs)
        with store.reading() as s:
            results = s.execute(select(func.count()).select_from(CheckResult)).scalar_one()
            events = s.execute(select(func.count()).select_from(Event)).scalar_one()
            blobs, stored, raw = s.execute(
                select(func.count(), func.sum(func.length(EvidenceBlob.data)), func.sum(EvidenceBlob.size))
            ).one()
        size = store_bytes(store)
        store.close()
        print(
            f"   store: {results:,} results, {events:,} events, {blobs:,} blobs ({stored / 1e6:.1f} MB stored, "
            f"{raw / 1e6:.1f} MB of output); on disk {size / 1e6:.0f} MB"
        )
        time_golden(url, inv, args.nodes)
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"   (this script's own peak while building: {own:.0f} MiB)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def time_golden(url: str, inv: Path, nodes: int) -> None:
    print(f"3. burnin golden --rack {RACK} over {nodes} nodes (a fresh process each time)")
    for label in ("first", "second"):
        wall, rss, cpu = golden_once(url, inv)
        print(
            f"   {label}: {wall:.2f} s wall ({cpu:.2f} s CPU), peak memory (max RSS) {rss:.0f} MiB   "
            f"(target < 5 s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )


if __name__ == "__main__":
    main()
