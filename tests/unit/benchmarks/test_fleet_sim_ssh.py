"""The simulated SSH fleet (benchmarks/fleet_sim/ssh.py) answers a real preflight batch the way
the controller reads it: a smoke test that the benchmark measures a working stage (no timing)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from benchmarks.fleet_sim.ssh import frame_answer, parse_batch
from bringup.profiles.load import find_profile
from bringup.ssh.fanout import SshTarget, fan_out
from bringup.ssh.hostkeys import PinnedKeys
from burnin.result import Verdict
from burnin.stages import stage_checks
from burnin.stages.batch import Job, build_script, parse_output
from burnin.stages.runner import judge_stage, stage_batch
from tests.paths import REPO


def test_a_batch_round_trips_through_the_sims_framing():
    script, token = build_script([Job("a", "echo a", 5), Job("b.x", "printf 'two\\nlines'", 9)], cap=8)
    batch = parse_batch(script)
    assert batch is not None and batch.token == token and batch.order == ["a", "b.x"]
    assert batch.jobs == {"a": "echo a", "b.x": "printf 'two\\nlines'"}
    raw = frame_answer(batch, {"a": (b"a\n", b"", 0), "b.x": (b"0123456789", b"err\n", 3)})
    outputs = parse_output(raw, token, ["a", "b.x"])
    assert outputs["a"].stdout == "a\n" and outputs["a"].rc == 0
    assert outputs["b.x"].rc == 3 and outputs["b.x"].stderr == "err\n"
    assert outputs["b.x"].cut and outputs["b.x"].stdout.startswith("0123")  # over the cap: head and tail


def test_a_script_that_is_not_a_batch_is_none():
    assert parse_batch("echo hi\n") is None


def test_the_sim_answers_a_preflight_that_the_checks_judge(tmp_path):
    state = tmp_path / "sim"
    sim = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.fleet_sim.ssh", "--nodes", "3", "--state", str(state),
         "--base-port", "0", "--latency", "0"],
        cwd=REPO,
    )  # fmt: skip
    try:
        ready = state / "ready.json"
        deadline = time.monotonic() + 60
        while not ready.exists() and sim.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        info = json.loads(ready.read_text())
        profile = find_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")
        checks = stage_checks("preflight", profile)
        script, token, keys = stage_batch(checks, profile)
        pinned = PinnedKeys((info["host_key"],), "", "")
        targets = [
            SshTarget(f"n{i}", info["host"], "root", port, info["client_key"], pinned=pinned)
            for i, port in enumerate(info["ports"])
        ]
        results = {r.name: r for r in fan_out(targets, script, 60, 3)}
    finally:
        sim.terminate()
        sim.wait(30)
    assert sorted(results) == ["n0", "n1", "n2"] and all(not r.error for r in results.values())
    record = {"hardware": {"event_log": [], "event_log_read_at": "2026-11-24T08:00:00"}}
    verdicts = {}
    for name, res in results.items():
        outputs = parse_output(
            res.stdout, token, sorted(set(keys.values())), (res.started_at, res.finished_at)
        )
        verdicts[name] = {r.check: r.verdict for r, _ in judge_stage(checks, profile, outputs, keys, record)}
    assert verdicts["n0"]["gpu_inventory"] is Verdict.PASS and verdicts["n0"]["clock_offset"] is Verdict.PASS
    assert verdicts["n0"]["ib_ports"] is Verdict.PASS
    # each node its own GPU UUIDs and InfiniBand GUIDs, as no two real nodes print the same
    assert results["n0"].stdout != results["n1"].stdout
