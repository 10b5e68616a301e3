#!/usr/bin/env python3
"""The Slurm path's controller at fleet size: what `burnin run --launcher slurm` costs the
controller per node (benchmarks/fleet.py measures the SSH path).

Usage: .venv/bin/python benchmarks/slurm_ingest.py [--counts 100,1000,4000]

On the Slurm path the nodes run and judge their own stage; the controller submits one job,
asks Slurm about it every few seconds and ingests one result file per node. This measures that
controller for N nodes, each N in a process of its own: N nodes in a fresh SQLite store (in
burn-in), and N preflight result files already in the spool, each a copy of one real file a lab
node's task wrote (``benchmarks/data/spool_preflight_lab_node01.json``: node01 of
tests/lab/test_slurm_launcher_lab.py, 8x H100 stand-ins, renamed per node). Slurm's commands
are answered by stand-ins on PATH (``sinfo``: every node idle; ``sbatch``: job 1; ``scontrol
show job``: COMPLETED; ``scancel``): slurmctld's time is not what is measured, their process
starts are (they count as the controller's CPU). Then ``BurninRun`` with ``SlurmStages`` runs
the stage exactly as ``burnin run --launcher slurm`` does: sinfo, submit, poll, and per node
parse, check, merge (the record-based check and the clock offset judged here), one
transaction, move to ``ingested/``; then the conclusion (events). Printed: wall time, CPU
seconds per node (user + system, with the stand-ins' processes), peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SAMPLE = REPO / "benchmarks" / "data" / "spool_preflight_lab_node01.json"
PROFILE = "h100-sxm-8x400g"
RUN_ID = 1

# Slurm's client commands, as far as the controller uses them.
STANDINS = {
    "sinfo": '#!/bin/sh\nexec cat "$BENCH_DIR/sinfo.txt"\n',
    "sbatch": "#!/bin/sh\necho 1\n",
    "scontrol": "#!/bin/sh\necho 'JobId=1 JobName=burnin-run1-preflight JobState=COMPLETED Reason=None ExitCode=0:0'\n",
    "scancel": "#!/bin/sh\nexit 0\n",
}


def one(count: int) -> dict:
    from bringup.fleet.lifecycle import State
    from bringup.fleet.store import FleetStore
    from bringup.profiles.load import find_profile
    from burnin.stages.jobs import NodeJob
    from burnin.stages.runner import BurninRun, record_for
    from burnin.stages.slurm_launch import SlurmStages, stage_settings
    from burnin.stages.spool import PROFILES, digest, run_dir

    work = Path(tempfile.mkdtemp(prefix="slurm-ingest-"))
    try:
        bin_dir = work / "bin"
        bin_dir.mkdir()
        for name, text in STANDINS.items():
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        names = [f"gpu{i:05d}" for i in range(count)]
        (work / "sinfo.txt").write_text("".join(f"{n}|idle|Unknown|Unknown|none\n" for n in names))
        os.environ["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
        os.environ["BENCH_DIR"] = str(work)

        store = FleetStore(f"sqlite:///{work / 'fleet.db'}")
        for n in names:
            store.enroll(n, rack="bench", profile=PROFILE)
        path = ("discovered", "provisioning", "provisioned", "configured", "burnin")
        for n in names:
            for state in path:
                store.transition(n, State(state), "benchmark setup")
        profile_file = REPO / "inventories" / "profiles" / f"{PROFILE}.yml"
        profile = find_profile(str(profile_file), profile_file.parent)
        spool = work / "spool"
        directory = run_dir(spool, RUN_ID)
        (directory / PROFILES).mkdir(parents=True)
        shutil.copyfile(profile_file, directory / PROFILES / profile_file.name)
        doc = json.loads(SAMPLE.read_text())
        doc.update(run_id=RUN_ID, profile_sha256=digest(profile_file.read_bytes()))
        # The node read its clock "now": the engine's clock is shifted so that its window (from the
        # submission to each file) holds that reading, as it would have held the task's.
        now = time.time()
        doc["outputs"]["clock_offset"]["stdout"] = f"{now:.9f}\n"
        for n in names:
            doc["node"] = n
            (directory / f"{RUN_ID}-{n}-preflight.json").write_text(json.dumps(doc, separators=(",", ":")))
        settings = stage_settings({"burnin_spool_dir": str(spool), "slurm_spool_poll_s": 0.2})
        record = record_for({"event_log": [], "event_log_read_at": "2026-11-24T08:00:00+00:00"}, None)
        jobs = [NodeJob(n, profile, None, record) for n in names]
        run = store.start_run("burnin", "bench")

        before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        shift = time.time() - now + 0.05
        engine = SlurmStages(settings, run.id, tuple(doc["set"]), clock=lambda: time.time() - shift)
        outcomes = BurninRun(store, run.id, ["preflight"], stage_engine=engine).run(jobs)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = sum(
            (a.ru_utime - b.ru_utime) + (a.ru_stime - b.ru_stime) for a, b in zip(after, before, strict=True)
        )
        verdicts = sorted(
            {
                f"{r.check}:{r.verdict.value}"
                for o in outcomes
                for s in o.stages
                for r in s.results
                if r.verdict.value != "PASS"
            }
        ) or ["PASS"]
        ingested = len(list((directory / "ingested").iterdir()))
        return {
            "nodes": count,
            "wall_s": round(wall, 2),
            "cpu_ms_per_node": round(1000 * cpu / count, 2),
            "peak_rss_mib": round(after[0].ru_maxrss / 1024, 1),
            "verdicts": verdicts,
            "ingested": ingested,
            "file_kib": round(SAMPLE.stat().st_size / 1024, 1),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,1000,4000")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    print("Slurm path, controller side: preflight result files of N nodes ingested (SQLite store)")
    print(f"{'nodes':>6} {'wall s':>8} {'CPU ms/node':>12} {'peak RSS MiB':>13}  verdicts")
    for count in (int(c) for c in args.counts.split(",")):
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(count)], capture_output=True, text=True, check=True
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        assert row["ingested"] == count, row
        print(
            f"{row['nodes']:>6} {row['wall_s']:>8} {row['cpu_ms_per_node']:>12} {row['peak_rss_mib']:>13}  "
            f"{','.join(row['verdicts'])} (one file: {row['file_kib']} KiB)"
        )


if __name__ == "__main__":
    main()
