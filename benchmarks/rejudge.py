#!/usr/bin/env python3
"""What `burnin rejudge` costs: the ib record's size per node, and the time to judge a run again.

Usage: .venv/bin/python benchmarks/rejudge.py [--nodes 16,64,256] [--results 1000]

1. The ib stage over a simulated fabric (its discovery and rounds replaced, as in
   tests/unit/burnin/checks/test_ib_replay.py): N nodes of 8 NDR ports, 2 rounds, every session's
   ends printing a real ib_write_bw report (tests/fixtures/samples). Printed: the record kept in
   one node's evidence (raw and zlib, as the store keeps it) and the time to replay the stage
   from all the records (burnin.checks.ib_replay.replay).
2. A saved run of ``--results`` copy_bandwidth results on a SQLite store, each with a real
   nvbandwidth output as evidence: the time `rejudge_run` takes to read, judge and record them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bringup.fleet.store import FleetStore  # noqa: E402
from bringup.profiles.load import apply_overrides, load_profile  # noqa: E402
from bringup.ssh.fanout import SshTarget  # noqa: E402
from burnin.checks.base import CommandOutput  # noqa: E402
from burnin.checks.ib_load import EndOutput, counter_changes  # noqa: E402
from burnin.checks.ib_replay import RECORD_MARK, parse_record, replay  # noqa: E402
from burnin.run.rejudge import rejudge_run  # noqa: E402
from burnin.stages import ib as ib_stage  # noqa: E402
from burnin.stages.jobs import GroupContext, NodeJob  # noqa: E402

PROFILES = REPO / "inventories" / "profiles"
SAMPLES = REPO / "tests" / "fixtures" / "samples"
STANDINS = REPO / "bringup" / "lab" / "standins" / "samples"


def _sample(path: Path) -> str:
    return path.read_text().split("\n", 1)[1]


def ib_run(nodes: int, profile) -> dict:
    report = _sample(SAMPLES / "perftest_ndr_cx7_client_send_read_write_bw.txt")
    report = report.split("vyl@csegpu1:~$ ib_write_bw", 1)[1].split("\n", 1)[1].replace("392.34", "784.68")
    ibstat = _sample(STANDINS / "ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")

    def discover(targets, bound=None):
        out = {"ibstat": CommandOutput(ibstat), "sysfs": CommandOutput(""), "perftest": CommandOutput("0\n")}
        return {n: ib_stage.parse_discovery(n, out) for n in targets}

    def run_round(round_, targets, infos, seconds, out_json, bound=None, on_wave=None):
        got = ib_stage.RoundOutputs()
        for s in round_.sessions:
            got.ends[(s.server, s)] = EndOutput(report, "", rc=0)
            got.ends[(s.client, s)] = EndOutput(report, "", rc=0)
        for key in round_.loaded:
            got.changes[key] = counter_changes({}, {})
        return got

    ib_stage.discover, ib_stage.run_round = discover, run_round  # type: ignore[assignment]
    names = [f"node{i:04d}" for i in range(nodes)]
    jobs = [NodeJob(n, profile, SshTarget(n, f"10.0.{i // 250}.{i % 250 + 1}")) for i, n in enumerate(names)]
    return {
        n: r[0][1] for n, r in ib_stage.run_ib_stage(GroupContext(jobs, None, {}, lambda _: None)).items()
    }


def bench_ib(counts: list[int]) -> None:
    profile, _ = load_profile("h100-sxm-8x400g", PROFILES)
    raised = apply_overrides(profile, ["floors.ib_write_bw_fraction=0.99"])
    print("ib: nodes | record per node raw / zlib | replay of the whole stage")
    for n in counts:
        evidence = ib_run(n, profile)
        one = next(iter(evidence.values()))
        record = one[one.rfind(RECORD_MARK) :].encode()
        started = time.perf_counter()
        records = {node: parse_record(text) for node, text in evidence.items()}
        results = replay(records, dict.fromkeys(records, raised))
        took = time.perf_counter() - started
        assert len(results) == n
        print(
            f"  {n:5d} | {len(record) / 1024:7.1f} KiB / {len(zlib.compress(record, 6)) / 1024:5.1f} KiB"
            f" | {took:6.2f} s"
        )


def bench_single(count: int) -> None:
    text = _sample(STANDINS / "nvbandwidth_h2d_d2h_ce_8xh100_DERIVED.txt")
    with tempfile.TemporaryDirectory() as tmp:
        store = FleetStore(f"sqlite:///{tmp}/fleet.db")
        run = store.start_run("burnin", "r01")
        for i in range(count):
            name = f"gpu{i:04d}"
            store.enroll(name, "r01", "h100-sxm-8x400g")
            row = {"stage": "gpu", "check": "copy_bandwidth", "verdict": "PASS", "evidence": text}
            store.add_results(name, [row], run_id=run.id)
        store.finish_run(run.id, "done")
        for record in (False, True):
            started = time.perf_counter()
            done = rejudge_run(store, PROFILES, run.id, ["floors.h2d_gbps=53"], record=record)
            took = time.perf_counter() - started
            assert done.summary()["worse"] == count
            what = "judged and recorded" if record else "judged (--dry-run)"
            print(f"single-node: {count} copy_bandwidth results {what}: {took:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="16,64,256")
    parser.add_argument("--results", type=int, default=1000)
    args = parser.parse_args()
    bench_ib([int(x) for x in args.nodes.split(",")])
    bench_single(args.results)


if __name__ == "__main__":
    main()
